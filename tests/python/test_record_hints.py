"""Write-lifetime hints as the program meant them: a hint the kernel refuses (a 4-byte level
passed where Linux reads 8 bytes, as RocksDB 7.x does) is recorded with the level it carries and
flag HINT_REFUSED, one without a level with HINT_INVALID (ignored by map); the program sees the
kernel's answers unchanged; map carries the levels to the block trace's pages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from test_record import CC, progs, record  # noqa: F401  (progs: the compiled tests/shim programs)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
]

REFUSED, INVALID = 1 << 0, 1 << 1
SHORT, MEDIUM, EXTREME = 2, 3, 5


def test_refused_hints_keep_the_level_meant_through_map(progs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    plain = subprocess.run([str(progs["hintint"])], cwd=plain_dir, capture_output=True, text=True, timeout=60)
    if "c.dat 0 0" not in plain.stdout:
        pytest.skip(f"the kernel refuses even a correct F_SET_RW_HINT here: {plain.stdout!r}")
    r = record(tmp_path, [str(progs["hintint"])])
    assert (r.status, r.stdout) == (plain.returncode, plain.stdout), "the program sees the kernel's answers"
    assert "a.dat -1 22" in r.stdout  # refused, as without the recorder
    hints = {r.name(x): (x["offset"], x["flags"]) for x in r.rows if x["op"] == "set_hint"}
    assert hints == {
        "a.dat": (SHORT, REFUSED),
        "b.dat": (EXTREME, REFUSED),
        "c.dat": (MEDIUM, 0),
        "d.dat": (0, REFUSED | INVALID),
    }
    assert "hintint set 3 write-lifetime hint(s) the kernel refused (EINVAL: a 4-byte value" in r.stderr
    assert "1 carried no valid level" in r.stderr
    info = subprocess.run(
        [sys.executable, "-m", "pcstream", "info", str(r.trace), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert info.returncode == 0, info.stderr
    counted = json.loads(info.stdout)["set_hint"]
    assert (counted["refused"], counted["invalid"], counted["events"]) == (3, 1, 4)
    assert counted["by_hint"] == {"SHORT": 1, "MEDIUM": 1, "EXTREME": 1}

    block = tmp_path / "block.parquet"
    run = subprocess.run(
        [sys.executable, "-m", "pcstream", "map", str(r.trace), "-o", str(block), "--capacity", "1GiB"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    table = pq.read_table(block)
    files = json.loads(table.schema.metadata[b"pcstream.files"])
    by_name = {Path(v).name: int(k) for k, v in files.items()}
    pages: dict[str, set[int]] = {}
    for x in table.to_pylist():
        if x["op"] == 0 and x["meta"] == 0 and x["file"]:  # data writes
            name = Path(files[str(x["file"])]).name
            pages.setdefault(name, set()).add(x["hint"])
    assert {n: pages.get(n) for n in ("a.dat", "b.dat", "c.dat", "d.dat")} == {
        "a.dat": {SHORT},
        "b.dat": {EXTREME},
        "c.dat": {MEDIUM},
        "d.dat": {0},  # no level: ignored
    }, by_name
