"""The bundled RocksDB UR traces carry RocksDB's own write-lifetime hints: db_bench sets one for
its WAL and for each SST by level (refused by the kernel, kept by the recorder with the level
meant), so counting only the pages the program wrote (the aged state that leads the trace is
skipped), most pages carry a hint, several levels are in use, and ManualStream, which places by
them, is not Baseline there (docs/RESULTS.md)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.options import SimOptions
from support import ROOT

UR = [ROOT / "traces" / f"rocksdb-ur{suffix}.parquet" for suffix in ("", ".nodiscard")]
# The block trace's op code of a write (crates/pcstream-core/src/request.rs).
OP_WRITE = 0
MIN_HINTED_SHARE = 0.5
MIN_LEVELS = 3


def program_hints(trace: Path) -> tuple[float, dict[int, int]]:
    """Of the pages the program wrote (after the aged state): the share carrying a hint, and the
    pages per hint level."""
    skip = int(tracemeta.get(tracemeta.footer(trace), tracemeta.KEY_AGED_ROWS) or 0)
    t = pq.read_table(trace, columns=["op", "pages", "hint"]).slice(skip)
    writes = t.filter(pc.equal(t["op"], OP_WRITE))
    total = pc.sum(writes["pages"]).as_py() or 0
    by_level = writes.group_by("hint").aggregate([("pages", "sum")]).to_pylist()
    levels = {int(r["hint"]): int(r["pages_sum"]) for r in by_level if r["hint"]}
    return (sum(levels.values()) / total if total else 0.0), levels


@pytest.mark.parametrize("trace", UR, ids=lambda p: p.name.removesuffix(".parquet"))
def test_rocksdb_ur_carries_its_own_hints(trace: Path) -> None:
    if not trace.is_file():
        pytest.skip(f"no bundled trace {trace.name}")
    share, levels = program_hints(trace)
    assert share >= MIN_HINTED_SHARE, f"{trace.name}: {share:.1%} of the program's pages carry a hint"
    assert len(levels) >= MIN_LEVELS, f"{trace.name}: hint levels in use {sorted(levels)}"
    sim = SimOptions(ssd="paper", timing=False)
    manual, base = (api.simulate(str(trace), p, sim)["waf"] for p in ("manual", "baseline"))
    assert manual != base, f"{trace.name}: manual = baseline = {base:.4f}: the hints placed nothing"
