"""PC labels (pcstream.pclabels): the frames that tell a PC from the trace's other PCs and the
files it writes, in the report's PC streams and in ``pcstream info``; two PCs never share a label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import pcfiles, pclabels, tracemeta
from pcstream.report import data, html
from support import invoke

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
REDIS = "/usr/bin/redis-server"
GIT = "/usr/bin/git"


def fr(module: str, offset: int, symbol: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"module": module, "module_id": "00000000000000aa", "offset": offset}
    if symbol:
        frame["symbol"] = symbol
    return frame


def redis_like() -> dict[str, list[dict[str, Any]]]:
    """Four PCs, innermost first, that share their two innermost frames (write and an unnamed
    static helper) and their two outermost (main, aeMain): the old headline (two outer, two
    inner frames) read the same for all of them."""
    inner = [fr(LIBC, 0x10F0, "__GI___libc_write"), fr(REDIS, 0x5A10)]
    outer = [fr(REDIS, 0x3000, "aeMain"), fr(REDIS, 0x2000, "main")]
    middle = {
        "11": [fr(REDIS, 0x7010, "rioFileWrite"), fr(REDIS, 0x8010, "rdbSaveRio"),
               fr(REDIS, 0x9010, "rdbSave")],
        "12": [fr(REDIS, 0x7010, "rioFileWrite"), fr(REDIS, 0xA010, "rewriteAppendOnlyFileRio"),
               fr(REDIS, 0xB010, "rewriteAppendOnlyFile")],
        "13": [fr(REDIS, 0xC010, "flushAppendOnlyFile"), fr(REDIS, 0xD010, "beforeSleep"),
               fr(REDIS, 0xE010, "aeProcessEvents")],
        # the same function as 11, called from another place in it: names alone cannot tell them
        "14": [fr(REDIS, 0x7010, "rioFileWrite"), fr(REDIS, 0x8044, "rdbSaveRio"),
               fr(REDIS, 0x9010, "rdbSave")],
    }  # fmt: skip
    return {sig: [*inner, *mid, *outer] for sig, mid in middle.items()}


def stripped_git() -> dict[str, list[dict[str, Any]]]:
    """Five PCs of a stripped program: no symbols, shared outer and inner frames."""
    out = {}
    for k in range(5):
        out[str(100 + k)] = [
            fr(LIBC, 0x10F0),
            fr(GIT, 0x1000),
            fr(GIT, 0x2000 + 0x10 * k),
            fr(GIT, 0x3000 + 0x100 * (k % 2)),
            fr(GIT, 0x4000),
            fr(GIT, 0x5000),
        ]
    return out


def test_pcs_that_share_outer_and_inner_frames_get_different_labels() -> None:
    pcs = redis_like()
    old = {data.short_path(data.call_path(frames)) for frames in pcs.values()}
    assert len(old) == 1, "the scenario: the old outer/inner headline reads the same for every PC"
    labels = pclabels.label_pcs(pcs)
    texts = {sig: label.text for sig, label in labels.items()}
    assert len(set(texts.values())) == len(pcs), texts
    # The frame that differs is named, with the outermost frame not every PC has, for context.
    assert "rewriteAppendOnlyFile" in texts["12"] and "flushAppendOnlyFile" in texts["13"]
    assert "main" not in texts["12"].split(" → ") and "aeMain" not in texts["13"].split(" → ")
    # 11 and 14 differ only by the call site inside rdbSaveRio: the offsets tell them apart.
    assert "redis-server+0x8010" in texts["11"] and "redis-server+0x8044" in texts["14"]


def test_stripped_frames_show_module_and_offset_and_stay_distinct() -> None:
    pcs = stripped_git()
    assert len({data.short_path(data.call_path(f)) for f in pcs.values()}) == 1
    labels = pclabels.label_pcs(pcs)
    texts = [label.text for label in labels.values()]
    assert len(set(texts)) == 5, texts
    assert all("git+0x2" in text for text in texts), "the frame that differs is in the label"
    assert "git+0x2030" in labels["103"].text


def test_twins_and_frameless_pcs_still_differ() -> None:
    frames = [fr(REDIS, 0x10, "f"), fr(REDIS, 0x20, "main")]
    labels = pclabels.label_pcs({"1": frames, "2": list(frames), "3": []})
    assert labels["1"].text != labels["2"].text and "PC 2" in labels["2"].text
    assert labels["3"].text == "PC 3"
    # a single PC is named by its frame; asking for a PC absent from the table gives its number
    assert pclabels.label_pcs({"7": [fr(REDIS, 0x10, "wal")]})["7"].text == "wal"
    assert pclabels.label_pcs({}, sigs=["9"])["9"].text == "PC 9"


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("/db/000012.sst", "/db/*.sst"),
        ("/db/MANIFEST-000005", "/db/MANIFEST-*"),
        ("/db/LOG", "/db/LOG"),
        ("/db/LOG.old.1795441337847374", "/db/LOG.old.*"),
        ("/srv/pg/data/pg_wal/00000001000000000000000A", "/srv/pg/data/pg_wal/*"),
        ("/srv/pg/data/base/5/16384", "/srv/pg/data/base/*/*"),
        ("/work/linux/fs/ext4/inode.o", "/work/linux/fs/ext4/*.o"),
        ("/work/main/traces/rocksdb-ur.work/rdb/000004.log", "…/rocksdb-ur.work/rdb/*.log"),
        ("/home/me/build/.tmp_21249/x.gcno", "…/build/.tmp_*/*.gcno"),
        ("/tmp/t.db-journal", "/tmp/t.db-journal"),
        ("wal/000003.log", "wal/*.log"),
    ],
)
def test_path_patterns(path: str, pattern: str) -> None:
    assert pcfiles.path_pattern(path) == pattern


def test_short_symbols() -> None:
    assert (
        pclabels.short_symbol("rocksdb::BuildTable(std::string const&, int) const") == "rocksdb::BuildTable"
    )
    assert pclabels.short_symbol("(anonymous namespace)::f(int)") == "(anonymous namespace)::f"
    assert (
        pclabels.short_symbol("std::function<void ()>::operator()() const")
        == "std::function<void ()>::operator()"
    )
    assert pclabels.short_symbol("main") == "main"
    assert pcfiles.files_text({"/db/*.sst": 95, "/db/*.log": 5}) == "/db/*.sst"
    assert pcfiles.files_text({"a": 6, "b": 3, "c": 1}) == "a 60 %, b 30 %, …"


def block_trace(path: Path, pcs: dict[str, list[dict[str, Any]]], writes: list[tuple[int, int, int]]) -> Path:
    """A block trace with a PC table: rows (pc, file id, pages), files /db/N.sst (odd ids) or
    /db/N.log (even)."""
    files = {str(i): f"/db/{i:06d}.{'sst' if i % 2 else 'log'}" for i in range(1, 9)}
    lpn = 0
    rows: dict[str, list[int]] = {k: [] for k in ("ts_ns", "op", "lpn", "pages", "pc", "file")}
    for k, (pc, file, pages) in enumerate(writes):
        for key, value in zip(rows, (k * 1000, 0, lpn, pages, pc, file)):
            rows[key].append(value)
        lpn += pages
    types = {"ts_ns": pa.uint64(), "op": pa.uint8(), "lpn": pa.uint64(), "pages": pa.uint32(),
             "pc": pa.uint64(), "file": pa.uint32()}  # fmt: skip
    table = pa.table({k: pa.array(v, types[k]) for k, v in rows.items()})
    meta = {
        tracemeta.KEY_FORMAT: "1",
        tracemeta.KEY_PAGE_BYTES: "4096",
        tracemeta.KEY_CAPACITY: str(lpn + 16),
        tracemeta.KEY_FILES: json.dumps(files),
        tracemeta.KEY_PCS: json.dumps(pcs),
    }
    pq.write_table(table.replace_schema_metadata(meta), path)
    return path


WRITES = [(11, 1, 30), (12, 2, 20), (13, 4, 10), (14, 3, 5), (11, 2, 4), (0, 0, 3)]


def test_info_labels_the_top_pcs(tmp_path: Path) -> None:
    trace = block_trace(tmp_path / "t.parquet", redis_like(), WRITES)
    run = invoke("info", trace, "--json")
    assert run.status == 0, run.stderr
    top = {entry["pc"]: entry for entry in run.json()["pcs"]["top"]}
    assert set(top) == {"11", "12", "13", "14", "0"}
    labels = [entry["label"] for entry in top.values()]
    assert len(set(labels)) == len(labels), labels
    assert top["11"]["label"].endswith("; writes /db/*.sst 88 %, /db/*.log 12 %")
    assert top["12"]["label"].endswith("; writes /db/*.log") and "rewriteAppendOnlyFile" in top["12"]["label"]
    assert top["0"]["label"].startswith("no PC")
    table = invoke("info", trace)
    assert table.status == 0 and "flushAppendOnlyFile" in table.stdout


def test_info_without_a_pc_table_adds_no_label(tmp_path: Path) -> None:
    trace = block_trace(tmp_path / "t.parquet", {}, WRITES)
    run = invoke("info", trace, "--json")
    assert run.status == 0, run.stderr
    assert all("label" not in entry for entry in run.json()["pcs"]["top"])


def test_report_streams_are_named_by_their_labels(tmp_path: Path) -> None:
    trace = str(block_trace(tmp_path / "t.parquet", redis_like(), WRITES))
    table = {"pcs": [{"sig": s, "stream": st, "n": 10, "sum_l": 500} for s, st in
                     (("11", 1), ("12", 2), ("13", 3), ("14", 4))]}  # fmt: skip
    row = data.Row(trace, "small", "pcstream", {"waf": 1.0, "saved_table": json.dumps(table)}, None, 0)
    (pc_table,) = data.pc_tables(data.Sweep([row], [trace], ["small"], ["pcstream"]))
    labels = {entry.sig: entry.label for entry in pc_table.entries}
    assert all(label is not None for label in labels.values())
    page = html.pc_table(pc_table, {trace: "t"})
    heads = [line for line in page.split("<li>") if line.startswith("stream ")]
    assert len(heads) == 4 and len(set(h.split("=", 1)[1] for h in heads)) == 4, heads
    assert "stream 2 = <span class='path'>" in page and "rewriteAppendOnlyFile" in heads[1]
    assert "/db/*.log" in heads[1] and pc_table.note is None
