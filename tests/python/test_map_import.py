"""pcstream import (every format, errors, --skip-bad, SIZE) and pcstream map (a hand-made file
trace with exact expectations, a trace recorded from a real program, options and errors), and
pcstream validate on a pair of traces whose answer is known."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.units import parse_size
from support import ROOT, assert_user_error, invoke

FIXTURES = ROOT / "crates" / "pcstream-trace" / "tests" / "fixtures" / "import"
SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"

# --------------------------------------------------------------------------- SIZE


@pytest.mark.parametrize(
    ("text", "pages"),
    [("61248", 61248), ("4096B", 1), ("4097b", 2), ("16GiB", 4 << 20), ("1.5M", 384), ("1GB", 244141),
     ("2 KiB", 1), ("small", None)],
)  # fmt: skip
def test_parse_size(text: str, pages: int | None, small: dict[str, Any]) -> None:
    assert parse_size(text) == (pages if pages is not None else small["logical_pages"])


@pytest.mark.parametrize("text", ["", "0", "-3", "1.5", "3x", "GiB", "nope"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


# --------------------------------------------------------------------------- import


def rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


@pytest.mark.parametrize(
    ("fmt", "fixture", "expected"),
    [
        ("msr", "msr_good.csv", [(0, 786_432, 1), (2, 2, 2), (0, 0, 1), (0, 0, 2)]),
        ("alibaba", "alibaba_good.csv", [(0, 1, 2), (2, 0, 1), (0, 0, 1)]),
        ("tencent", "tencent_good.csv", [(0, 1, 2), (2, 0, 1), (0, 1, 1)]),
        ("mqsim", "mqsim_good.trace", [(0, 2, 1), (2, 0, 1), (0, 8, 2)]),
        ("blkparse", "blkparse_good.txt", [(0, 256, 1), (2, 0, 2), (1, 512, 8), (3, 0, 0)]),
        ("fio", "fio_v3_good.log", [(0, 115_197, 1), (2, 0, 1)]),
    ],
)
def test_import_every_format(
    tmp_path: Path, fmt: str, fixture: str, expected: list[tuple[int, int, int]]
) -> None:
    out = tmp_path / "out.parquet"
    run = invoke("import", fmt, FIXTURES / fixture, "-o", out, "--json")
    assert run.status == 0, run.stderr
    report = run.json()
    got = [(r["op"], r["lpn"], r["pages"]) for r in rows(out)]
    assert got == expected
    assert report["rows"] == len(expected)
    assert report["write_pages"] == sum(p for op, _, p in expected if op == 0)
    assert api.info(str(out))["capacity_pages"] == report["capacity_pages"]


def test_import_table_and_compressed_input(tmp_path: Path) -> None:
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress((FIXTURES / "alibaba_good.csv").read_bytes()))
    run = invoke("import", "alibaba", gz, "-o", tmp_path / "a.parquet", "--capacity", "small")
    assert run.status == 0, run.stderr
    assert "rows written" in run.stdout and "61,248" in run.stdout


def test_import_malformed_line_is_an_input_error_with_no_output(tmp_path: Path) -> None:
    out = tmp_path / "bad.parquet"
    bad = FIXTURES / "msr_bad.csv"
    line = assert_user_error(invoke("import", "msr", bad, "-o", out), 3, f"{bad}:2:", "--skip-bad")
    assert "Type 'erase'" in line
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_import_skip_bad_reports_the_lines(tmp_path: Path) -> None:
    bad = FIXTURES / "msr_bad.csv"
    run = invoke("import", "msr", bad, "-o", tmp_path / "o.parquet", "--skip-bad", "2")
    assert run.status == 0, run.stderr
    assert f"skipped {bad}:2: Type 'erase'" in run.stderr
    assert f"skipped {bad}:3: Offset 'abc'" in run.stderr
    assert_user_error(invoke("import", "msr", bad, "-o", tmp_path / "p.parquet", "--skip-bad", "1"), 3, ":3:")


def test_import_capacity_device_and_usage_errors(tmp_path: Path) -> None:
    good = FIXTURES / "msr_good.csv"
    assert_user_error(invoke("import", "msr", good, "-o", tmp_path / "o.parquet", "--capacity", "1000"), 3,
                      "--capacity 1000")  # fmt: skip
    run = invoke("import", "msr", good, "-o", tmp_path / "d.parquet", "--device", "hm_1", "--json")
    assert run.status == 0 and run.json()["rows"] == 1 and run.json()["filtered_out"] == 3
    assert_user_error(invoke("import", "nope", good, "-o", tmp_path / "o.parquet"), 2, "nope")
    assert_user_error(invoke("import", "msr", tmp_path / "missing.csv", "-o", tmp_path / "o.parquet"), 3,
                      "missing.csv")  # fmt: skip
    bad_size = invoke("import", "msr", good, "-o", tmp_path / "o.parquet", "--capacity", "7 parsecs")
    assert_user_error(bad_size, 2, "--capacity")


# --------------------------------------------------------------------------- map

FILE_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.uint64()), ("pid", pa.uint32()), ("tid", pa.uint32()), ("op", pa.string()),
        ("fd", pa.int32()), ("dev", pa.uint64()), ("ino", pa.uint64()), ("offset", pa.uint64()),
        ("len", pa.uint64()), ("pc", pa.uint64()), ("flags", pa.uint32()), ("path", pa.uint32()),
        ("path2", pa.uint32()),
    ]
)  # fmt: skip
S = 1_000_000_000
O_CREAT_WRONLY = os.O_CREAT | os.O_WRONLY


def file_trace(path: Path, events: list[dict[str, Any]], paths: dict[int, str]) -> Path:
    """A file-level trace written with pyarrow (as docs/FORMATS.md specifies it)."""
    cols: dict[str, list[Any]] = {f.name: [] for f in FILE_SCHEMA}
    for e in events:
        for name in cols:
            cols[name].append(e.get(name, 0))
    table = pa.table(cols, schema=FILE_SCHEMA).replace_schema_metadata(
        {tracemeta.KEY_FORMAT: "1", tracemeta.KEY_PATHS: json.dumps({str(k): v for k, v in paths.items()})}
    )
    pq.write_table(table, path)
    return path


def ev(ts: float, op: str, **kw: Any) -> dict[str, Any]:
    return {
        "ts_ns": int(ts * S),
        "pid": 10,
        "tid": 10,
        "op": op,
        "fd": 3,
        "dev": 7,
        "ino": 100,
        "path": 1,
        **kw,
    }


HAND_MADE = [
    ev(0, "open", flags=O_CREAT_WRONLY),
    ev(0.1, "write", offset=0, len=1 << 20, pc=5),  # 256 pages
    ev(0.2, "fsync"),
    ev(0.3, "write", offset=1 << 20, len=100, pc=6),  # one more page, never synced: expiry
    ev(0.4, "close"),
    ev(60, "unlink", fd=-1),
    # a file on another device: skipped with --device 7
    ev(61, "open", flags=O_CREAT_WRONLY, dev=9, ino=5, path=2, fd=4),
    ev(61, "write", dev=9, ino=5, path=2, fd=4, offset=0, len=8192, pc=7),
    ev(61, "close", dev=9, ino=5, path=2, fd=4),
]


def test_map_hand_made_trace(tmp_path: Path) -> None:
    src = file_trace(tmp_path / "t.parquet", HAND_MADE, {1: "/db/a.sst", 2: "/other/b.log"})
    out = tmp_path / "b.parquet"
    run = invoke("map", src, "-o", out, "--capacity", "1GiB", "--device", "7", "--json")
    assert run.status == 0, run.stderr
    s = run.json()
    assert s["events"] == 6 and s["data_pages"] == 257 and s["capacity_pages"] == 262_144
    assert s["journal_pages"] > 0 and s["commits"] >= 2 and s["flushes"] >= 1
    assert s["trim_pages"] >= 257  # the deleted file's blocks (and the free tail after them)
    assert any("other devices" in w for w in s["warnings"])
    table = rows(out)
    data = [r for r in table if r["op"] == 0 and r["meta"] == 0]
    assert sum(r["pages"] for r in data) == 257
    assert {r["pc"] for r in data} == {5, 6}
    late = [r for r in data if r["pc"] == 6]
    assert len(late) == 1 and late[0]["ts_ns"] == 35 * S  # dirtied at 0.3 s: first 5 s tick after 30.3 s
    assert {r["meta"] for r in table if r["op"] == 0} >= {0, 1}
    meta = tracemeta.footer(out)
    assert meta[tracemeta.KEY_CAPACITY] == "262144"
    assert json.loads(meta[tracemeta.KEY_FILES]) == {"1": "/db/a.sst"}

    again = invoke("map", src, "-o", tmp_path / "c.parquet", "--capacity", "1GiB", "--device", "7", "--json")
    assert again.json() == s
    assert rows(tmp_path / "c.parquet") == table  # deterministic

    table_run = invoke("map", src, "-o", tmp_path / "d.parquet", "--capacity", "small")
    assert table_run.status == 0 and "data pages" in table_run.stdout and "259" in table_run.stdout


def test_map_options_change_the_output(tmp_path: Path) -> None:
    src = file_trace(tmp_path / "t.parquet", HAND_MADE[:6], {1: "/db/a.sst"})
    plain = invoke("map", src, "-o", tmp_path / "a.parquet", "--capacity", "small", "--json").json()
    nodiscard = invoke(
        "map", src, "-o", tmp_path / "b.parquet", "--capacity", "small", "--mount-opts", "nodiscard", "--json"
    ).json()
    assert plain["trim_pages"] > 0 and nodiscard["trim_pages"] == 0
    nobarrier = invoke(
        "map", src, "-o", tmp_path / "c.parquet", "--capacity", "small", "--mount-opts", "nobarrier", "--json"
    ).json()
    assert plain["flushes"] > 0 and nobarrier["flushes"] == 0
    default = invoke("map", src, "-o", tmp_path / "d.parquet", "--json").json()
    assert default["capacity_pages"] == api.ssd_summary("paper")["logical_pages"]


def test_map_errors(tmp_path: Path) -> None:
    src = file_trace(tmp_path / "t.parquet", HAND_MADE[:6], {1: "/db/a.sst"})
    out = tmp_path / "o.parquet"
    assert_user_error(
        invoke("map", src, "-o", out, "--mount-opts", "journal_checksum"), 2, "journal_checksum"
    )
    assert_user_error(invoke("map", src, "-o", out, "--capacity", "100"), 2, "raise --capacity")
    assert_user_error(invoke("map", tmp_path / "none.parquet", "-o", out), 3, "none.parquet")
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_text("hello")
    assert_user_error(invoke("map", not_parquet, "-o", out), 3, "x.parquet")
    # 1 GiB written into a 64 MiB file system: the event that overflows is named
    big = file_trace(
        tmp_path / "big.parquet", [HAND_MADE[0], ev(1, "write", offset=0, len=1 << 30)], {1: "/a"}
    )
    line = assert_user_error(invoke("map", big, "-o", out, "--capacity", "64MiB"), 3, "big.parquet")
    assert "full" in line and "raise --capacity" in line
    assert not out.exists()


@pytest.mark.skipif(
    not SHIM_SO.is_file() or not sys.platform.startswith("linux"), reason="needs the record shim"
)
def test_map_a_recorded_program(tmp_path: Path) -> None:
    """A tiny Python program under pcstream record, then map: its bytes all come out as data."""
    prog = tmp_path / "w.py"
    prog.write_text(
        "import os\n"
        "os.makedirs('d', exist_ok=True)\n"
        "for i in range(4):\n"
        "    with open(f'd/f{i}', 'wb') as f:\n"
        "        f.write(os.urandom(300_000))\n"
        "        os.fsync(f.fileno())\n"
        "os.rename('d/f0', 'd/g0')\n"
        "os.unlink('d/f1')\n"
    )
    trace = tmp_path / "t.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "--no-symbols", "-o", str(trace), "--", sys.executable,
         str(prog)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    dev = os.stat(tmp_path).st_dev
    out = tmp_path / "b.parquet"
    run = invoke("map", trace, "-o", out, "--capacity", "small", "--device", str(dev), "--json")
    assert run.status == 0, run.stderr
    s = run.json()
    assert s["data_pages"] == 4 * 74  # 300 000 bytes = 73.2 → 74 pages per file
    assert s["journal_pages"] > 0 and s["trim_pages"] >= 74
    info = api.info(str(out))
    assert info["writes"]["pages"] == s["data_pages"] + s["journal_pages"] + sum(s["metadata_pages"].values())


# --------------------------------------------------------------------------- validate (offline)


def test_validate_against_itself(tmp_path: Path) -> None:
    """The model's own output as the 'real' trace: every difference is 0 and every target met."""
    src = file_trace(tmp_path / "t.parquet", HAND_MADE, {1: "/db/a.sst", 2: "/other/b.log"})
    real = tmp_path / "real.parquet"
    assert invoke("map", src, "-o", real, "--capacity", "small").status == 0
    run = invoke("validate", src, real, "--ssd", "small", "--json")
    assert run.status == 0, run.stderr
    r = run.json()
    assert r["targets"] == 3 and r["targets_met"] == 3
    assert all(row["diff"] in (0, 0.0, None) for row in r["rows"]), r["rows"]
    assert r["model"]["written_bytes"] > 0 and r["model"]["waf_baseline"] >= 1.0
    table = invoke("validate", src, real, "--out", tmp_path / "model.parquet")
    assert table.status == 0 and "targets met: 3/3" in table.stdout and "WAF baseline" in table.stdout
    assert (tmp_path / "model.parquet").is_file()


def test_validate_usage_errors(tmp_path: Path) -> None:
    src = file_trace(tmp_path / "t.parquet", HAND_MADE[:6], {1: "/db/a.sst"})
    assert_user_error(invoke("validate", src), 2, "REAL_BLOCK_TRACE")
    assert_user_error(invoke("validate", "--run"), 2, "--run needs a command")
    assert_user_error(invoke("validate", src, tmp_path / "none.parquet"), 3, "none.parquet")
    big = tmp_path / "big.parquet"
    assert invoke("map", src, "-o", big, "--capacity", "1GiB").status == 0
    assert_user_error(invoke("validate", src, big, "--ssd", "small"), 3, "exceeds", "small")
