"""The bundled Cassandra traces: the JVM the recipe's script starts is recorded with its Java call
paths (JFR's options given by the shim), so of the pages Cassandra wrote (the aged state that
leads the trace skipped) its three writers — the commit log, memtable flushes and compactions —
are each mostly under a PC of their own, each with at least 5 % of the pages (docs/WORKLOADS.md)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from support import ROOT

TRACES = [ROOT / "traces" / f"cassandra{suffix}.parquet" for suffix in ("", ".nodiscard")]
OP_WRITE = 0  # the block trace's op of a write (crates/pcstream-core/src/request.rs)
MIN_SHARE = 0.05


def pages_by_pc_and_kind(trace: Path) -> tuple[dict[int, Counter[str]], dict[int, list[str]]]:
    footer = tracemeta.footer(trace)
    files = {int(k): v for k, v in json.loads(footer[tracemeta.KEY_FILES]).items()}
    frames = {
        int(k): [f.get("symbol", "") for f in v] for k, v in json.loads(footer[tracemeta.KEY_PCS]).items()
    }
    skip = int(tracemeta.get(footer, tracemeta.KEY_AGED_ROWS) or 0)
    t = pq.read_table(trace, columns=["op", "pages", "pc", "file"]).slice(skip)
    t = t.filter(pc.and_(pc.equal(t["op"], OP_WRITE), pc.not_equal(t["file"], 0)))
    out: dict[int, Counter[str]] = defaultdict(Counter)
    for sig, fid, n in zip(t["pc"].to_pylist(), t["file"].to_pylist(), t["pages"].to_pylist()):
        path = files.get(fid, "")
        kind = "commitlog" if "/commitlog/" in path else "data" if path.endswith("-Data.db") else "other"
        out[sig][kind] += n
    return out, frames


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.removesuffix(".parquet"))
def test_cassandra_writers_are_pcs_of_their_own(trace: Path) -> None:
    if not trace.is_file():
        pytest.skip(f"{trace} is not bundled")
    by_pc, frames = pages_by_pc_and_kind(trace)
    total = sum(sum(c.values()) for c in by_pc.values())
    big = [s for s, c in by_pc.items() if sum(c.values()) >= MIN_SHARE * total]
    assert len(big) >= 3, {s: sum(by_pc[s].values()) / total for s in big}
    assert all(frames[s][0].startswith(("sun.nio.ch.", "java.")) for s in big), "Java call paths"

    def writer(kind: str, part: str, but: tuple[int, ...] = ()) -> int:
        """The PC, other than ``but``, that wrote most of ``kind``; its call path names ``part``."""
        s = max((s for s in by_pc if s not in but), key=lambda s: by_pc[s][kind])
        assert any(part in f for f in frames[s]), (kind, part, frames[s])
        return s

    commit = writer("commitlog", "commitlog")
    kind_total = sum(c["commitlog"] for c in by_pc.values())
    assert by_pc[commit]["commitlog"] >= 0.9 * kind_total, "the commit log is mostly its own PC"
    compaction = writer("data", "Compaction")
    flush = writer("data", "Flushing", (compaction,))
    assert len({commit, flush, compaction}) == 3 and {commit, flush, compaction} <= set(big)
    data = sum(c["data"] for c in by_pc.values())
    assert by_pc[compaction]["data"] + by_pc[flush]["data"] >= 0.9 * data, "SSTable data: flush or compaction"
