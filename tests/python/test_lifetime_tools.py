"""tools/residual_by_age.py and tools/lifetime_by_lba.py on a trace whose lifetimes are known."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support import ROOT

TOOLS = ROOT / "tools"
SHORT, LONG = 7, 9  # PC signatures
WRITE = 0


def _trace(path: Path) -> None:
    """PC 7 writes pages 0..99 (host clock 0..99); PC 9 writes 1000 pages elsewhere; PC 7
    overwrites pages 0..49 (clock 1100..1149), so their first versions live 1100 host pages and
    every other PC-7 version never dies; PC 9 writes 5000 more. The trace ends at clock 6150."""
    reqs = [(0, 100, SHORT), (1000, 1000, LONG), (0, 50, SHORT), (10_000, 5000, LONG)]
    t = pa.table(
        {
            "op": pa.array([WRITE] * len(reqs), pa.uint8()),
            "lpn": pa.array([r[0] for r in reqs], pa.uint64()),
            "pages": pa.array([r[1] for r in reqs], pa.uint32()),
            "pc": pa.array([r[2] for r in reqs], pa.uint64()),
        }
    )
    pq.write_table(t, path)


def test_residual_by_age_counts_deaths_within_the_horizon_and_not_the_trace_end(tmp_path: Path) -> None:
    trace = tmp_path / "t.parquet"
    _trace(trace)
    sys.path.insert(0, str(TOOLS))
    try:
        import residual_by_age
    finally:
        sys.path.remove(str(TOOLS))
    rows = residual_by_age.table(trace, 0, 512, SHORT)
    # Age 1024: all 150 versions are alive, the 50 first versions of pages 0..49 die at 1100.
    # Ages 2048 and 4096: the 100 never-dying versions are left, none dies soon. Age 8192 + 512
    # lies past the end of the trace for every version: no row.
    assert [(a, n) for a, n, _, _ in rows] == [(1024, 150), (2048, 150), (4096, 150)]
    assert rows[0][2:] == pytest.approx((1.0, 50 / 150))
    assert rows[1][2:] == pytest.approx((100 / 150, 0.0))
    assert rows[2][2:] == pytest.approx((100 / 150, 0.0))
    # The top PC by host pages is PC 9, whose pages never die.
    top = residual_by_age.table(trace, 0, 512, None)
    assert all(alive == 1.0 and soon == 0.0 for _, _, alive, soon in top)


def test_lifetime_tools_run_from_the_command_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.parquet"
    _trace(trace)
    out = subprocess.run(
        [
            sys.executable,
            str(TOOLS / "residual_by_age.py"),
            str(trace),
            "--within",
            "512",
            "--pc",
            str(SHORT),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "     1,024        150          1.000                 0.333" in out
    out = subprocess.run(
        [sys.executable, str(TOOLS / "lifetime_by_lba.py"), str(trace), "--pc", str(SHORT)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Only the 50 versions that die count, each living 1100 host pages.
    assert "50 page versions that die" in out and "1,100 / 1,100 / 1,100" in out
    bad = subprocess.run(
        [sys.executable, str(TOOLS / "residual_by_age.py"), str(trace), "--within", "100000"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "too short" in bad.stderr
