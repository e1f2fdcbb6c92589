"""Trace integrity (docs/FORMATS.md, "Page checksums and codecs"; docs/HARDENING.md): every page
of every trace pcstream writes carries its CRC32 and the readers check it; the readers take every
Parquet codec; what a trace says is checked when it is read, a bad value an input error (3)
naming the file and what to do, a bad SSD `op` a configuration error (4)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.options import RecordOptions
from support import ROOT, assert_user_error, invoke, run_module

INPUT, CONFIG = 3, 4
SIMULATE = ("--policy", "baseline", "--ssd", "small", "--no-timing")


def small_trace(path: Path, writes: int = 2000) -> Path:
    api.gen("uniform", str(path), {"capacity_pages": "4096", "writes": str(writes), "seed": "1"})
    return path


def chunks(trace: Path) -> list[tuple[int, str, int, int]]:
    """(row group, column, first byte, bytes) of every column chunk of `trace`."""
    md = pq.read_metadata(trace)
    found = []
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            start = col.dictionary_page_offset or col.data_page_offset
            found.append((g, col.path_in_schema, start, col.total_compressed_size))
    return found


def flipped(trace: Path, at: int, out: Path) -> Path:
    data = bytearray(trace.read_bytes())
    data[at] ^= 0x01
    out.write_bytes(bytes(data))
    return out


def written_traces(tmp_path: Path) -> list[Path]:
    """One trace of each writer: gen, import, record (a file trace) and map."""
    gen = small_trace(tmp_path / "gen.parquet")
    imported = tmp_path / "imp.parquet"
    lines = "".join(f"128166372003061629,hm,0,Write,{4096 * i},4096,10\n" for i in range(50))
    (tmp_path / "in.csv").write_text(lines)
    assert invoke("import", "msr", tmp_path / "in.csv", "-o", imported).status == 0
    logdir = ROOT / "crates" / "pcstream-trace" / "tests" / "fixtures"
    logs = sorted(p for p in logdir.rglob("*") if p.is_dir() and any(p.glob("*.bin")))
    file_trace = tmp_path / "files.parquet"
    if logs:
        api.record_convert(str(logs[0]), str(file_trace), "test", RecordOptions(coalesce=False))
    else:
        from test_map_import import HAND_MADE
        from test_map_import import file_trace as write_file_trace

        write_file_trace(file_trace, HAND_MADE, {1: "/db/a.sst", 2: "/other/b.log"})
    mapped = tmp_path / "mapped.parquet"
    assert invoke("map", file_trace, "-o", mapped, "--capacity", "small").status == 0
    found = [gen, imported, mapped]
    # The file trace is rewritten by our writer only when it came from shim logs.
    return [*found, file_trace] if logs else found


def test_pyarrow_reads_and_verifies_the_checksums_of_every_trace_we_write(tmp_path: Path) -> None:
    for trace in written_traces(tmp_path):
        table = pq.read_table(trace)
        assert pq.read_table(trace, page_checksum_verification=True).equals(table), trace
        # Every column chunk's last page carries a checksum: a flipped byte in it is caught.
        for _, _, start, size in chunks(trace):
            bad = flipped(trace, start + size - 1, tmp_path / "bad.parquet")
            with pytest.raises(OSError, match="CRC checksum verification failed"):
                pq.read_table(bad, page_checksum_verification=True)


def test_a_flipped_byte_in_any_page_is_an_input_error(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    bad = tmp_path / "bad.parquet"
    for g, column, start, size in chunks(trace):
        # The chunk's last two bytes: inside its last page's bytes.
        for at in (start + size - 2, start + size - 1):
            flipped(trace, at, bad)
            line = assert_user_error(run_module("info", bad), INPUT, "bad.parquet")
            assert f"row group {g}, column {column}: the page at byte" in line, line
            assert "fails its CRC32 checksum" in line, line
    # simulate refuses it the same way, before it simulates anything.
    g, column, start, size = chunks(trace)[2]
    flipped(trace, start + size - 1, bad)
    line = assert_user_error(run_module("simulate", bad, *SIMULATE), INPUT, "bad.parquet")
    assert f"row group {g}, column {column}" in line and "CRC32" in line, line


@pytest.mark.parametrize("codec", ["none", "snappy", "gzip", "brotli", "lz4", "zstd"])
def test_every_codec_pyarrow_writes_reads(tmp_path: Path, codec: str) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    other = tmp_path / f"{codec}.parquet"
    pq.write_table(pq.read_table(trace), other, compression=codec)
    assert (
        pq.read_metadata(other)
        .row_group(0)
        .column(0)
        .compression.lower()
        .startswith(codec.replace("none", "uncompressed"))
    )
    ours = invoke("info", trace, "--json")
    theirs = invoke("info", other, "--json")
    assert theirs.status == 0, theirs.stderr
    same = ("rows", "footprint_bytes", "pcs", "meta_share", "capacity_pages")
    assert {k: theirs.json()[k] for k in same} == {k: ours.json()[k] for k in same}
    assert theirs.json()["rows"] == 2000
    run = invoke("simulate", other, *SIMULATE, "--json")
    assert run.status == 0, run.stderr
    assert run.json()["waf"] == invoke("simulate", trace, *SIMULATE, "--json").json()["waf"]


def block_table(**changes: list[int]) -> pa.Table:
    """Ten rows of a valid block trace, with whole columns replaced by ``changes``."""
    cols: dict[str, list[int]] = {
        "ts_ns": list(range(0, 100, 10)),
        "op": [0] * 10,
        "lpn": list(range(10)),
        "pages": [1] * 10,
        "meta": [0] * 10,
        "hint": [0] * 10,
    }
    cols.update(changes)
    return pa.table(
        {k: pa.array(v, pa.uint64() if k in ("ts_ns", "lpn") else pa.uint8()) for k, v in cols.items()}
    )


def write(table: pa.Table, path: Path, meta: dict[str, str] | None = None) -> Path:
    keys = {tracemeta.KEY_FORMAT: "1", tracemeta.KEY_CAPACITY: "64", **(meta or {})}
    pq.write_table(table.replace_schema_metadata(keys), path)
    return path


BAD_BLOCK_TRACES = {
    "backwards": (dict(ts_ns=[0, 10, 20, 5, 40, 50, 60, 70, 80, 90]), {}, "row 3: ts_ns 5 is before"),
    "meta": (dict(meta=[0, 0, 6, 0, 0, 0, 0, 0, 0, 0]), {}, "row 2: meta 6 is not a metadata class"),
    "hint": (dict(hint=[0, 9] + [0] * 8), {}, "row 1: hint 9 is not a Linux write-life hint"),
    "file-class": (
        dict(file_class=[0, 1, 0, 7] + [1] * 6),
        {tracemeta.KEY_FILE_CLASSES: '{"1": "sst"}'},
        "row 3: file_class 7 is not named in pcstream.file_classes (it names 1)",
    ),
    "capacity-space": ({}, {tracemeta.KEY_CAPACITY: " 64"}, "' 64' is not a number of pages"),
    "capacity-sign": ({}, {tracemeta.KEY_CAPACITY: "+64"}, "'+64' is not a number of pages"),
    "capacity-float": ({}, {tracemeta.KEY_CAPACITY: "64.0"}, "'64.0' is not a number of pages"),
    "aged-rows": ({}, {tracemeta.KEY_AGED_ROWS: "11", tracemeta.KEY_AGED_PAGES: "11"}, "says 11 aged rows"),
    "aged-pages": (
        {},
        {tracemeta.KEY_AGED_ROWS: "4", tracemeta.KEY_AGED_PAGES: "7"},
        "says 7 pages but the 4",
    ),
    "pcs-frame": (
        {},
        {tracemeta.KEY_PCS: '{"5": [{"module": "a", "offset": "16"}]}'},
        "signature 5, frame 0",
    ),
    "pcs-signature": ({}, {tracemeta.KEY_PCS: '{"x5": []}'}, "signature 'x5' is not a decimal"),
}


@pytest.mark.parametrize("name", sorted(BAD_BLOCK_TRACES))
def test_block_trace_values_out_of_their_ranges_are_input_errors(tmp_path: Path, name: str) -> None:
    changes, meta, expected = BAD_BLOCK_TRACES[name]
    bad = write(block_table(**changes), tmp_path / f"{name}.parquet", meta)
    for args in (("info", bad), ("simulate", bad, *SIMULATE)):
        line = assert_user_error(run_module(*args), INPUT, bad.name)
        assert expected in line, line
    # The same table without the change reads.
    good = write(block_table(), tmp_path / "good.parquet")
    assert invoke("info", good).status == 0


def test_file_classes_are_checked_against_the_class_table_when_there_is_one(tmp_path: Path) -> None:
    classes = block_table(file_class=[0, 1, 2] * 3 + [0])
    named = write(classes, tmp_path / "named.parquet", {tracemeta.KEY_FILE_CLASSES: '{"1": "a", "2": "b"}'})
    assert invoke("info", named).status == 0
    # A file without the key (written by another program) names no classes: none is refused.
    assert invoke("info", write(classes, tmp_path / "plain.parquet")).status == 0
    # An empty table names none: every class but 0 (unclassified) is refused.
    empty = write(classes, tmp_path / "empty.parquet", {tracemeta.KEY_FILE_CLASSES: "{}"})
    line = assert_user_error(run_module("info", empty), INPUT, "empty.parquet")
    assert "row 1: file_class 1 is not named in pcstream.file_classes (it names none)" in line, line


def test_a_duplicated_column_and_a_damaged_head_magic_are_input_errors(tmp_path: Path) -> None:
    t = block_table()
    twice = write(t.append_column("lpn", t.column("lpn")), tmp_path / "twice.parquet")
    line = assert_user_error(run_module("info", twice), INPUT, "twice.parquet")
    assert "column 'lpn' appears more than once" in line, line
    good = small_trace(tmp_path / "t.parquet")
    head = tmp_path / "head.parquet"
    head.write_bytes(b"PAR2" + good.read_bytes()[4:])
    line = assert_user_error(run_module("info", head), INPUT, "head.parquet")
    assert "does not start with the Parquet magic PAR1" in line, line


def test_a_path_id_missing_from_the_path_table_is_an_input_error(tmp_path: Path) -> None:
    from test_map_import import HAND_MADE
    from test_map_import import file_trace as write_file_trace

    ok = write_file_trace(tmp_path / "ok.parquet", HAND_MADE, {1: "/db/a.sst", 2: "/other/b.log"})
    assert invoke("map", ok, "-o", tmp_path / "m.parquet", "--capacity", "small").status == 0
    bad = write_file_trace(tmp_path / "bad.parquet", HAND_MADE, {1: "/db/a.sst"})
    line = assert_user_error(
        run_module("map", bad, "-o", tmp_path / "m2.parquet", "--capacity", "small"), INPUT
    )
    assert "bad.parquet" in line and "path id 2 is not in pcstream.paths" in line, line
    assert not (tmp_path / "m2.parquet").exists()


def test_an_ssd_op_beyond_4_is_a_config_error(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet")
    ssd = tmp_path / "ssd.toml"
    base = (ROOT / "crates" / "pcstream-core" / "presets" / "small.toml").read_text()
    ssd.write_text(base.replace("op = 0.07", "op = 7"))
    line = assert_user_error(run_module("simulate", trace, "--policy", "baseline", "--ssd", ssd), CONFIG)
    assert "op = 7 must be > 0 and at most 4" in line, line


def test_a_table_of_a_policy_that_writes_none_is_an_input_error(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.parquet", writes=20_000)
    table = tmp_path / "table.json"
    args = ("simulate", trace, "--policy", "pcstream", "--ssd", "small", "--no-timing", "--table", table)
    assert invoke(*args).status == 0
    saved = json.loads(table.read_text())
    assert saved["policy"] == "pcstream"
    saved["policy"] = "baseline"
    table.write_text(json.dumps(saved))
    line = assert_user_error(run_module(*args), INPUT, "table.json")
    assert "policy 'baseline' writes no PC table" in line, line
