"""Where each PC's writes land, in the allocator's reuse order: for the pages each of the top PCs
writes after a trace's aged rows, whose content the write replaced (the PC that wrote that LBA
before, "aged" for the aged state, "never" for an LBA not written before) and how many host
pages ago. Without discard a page dies only when its LBA is written again, so this is what
decides the per-PC lifetimes `pcstream validate` compares (docs/FSMODEL.md).

Give it the model's and the real block trace of one `validate --run` directory to compare them:

    python tools/lba_reuse.py validate-runs/rocksdb-nodiscard/{model,block}.parquet

Usage: python tools/lba_reuse.py TRACE.parquet [TRACE.parquet ...] [--top N]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pcstream.pclabels import trace_labels

WRITE = 0  # the op column's write code (docs/FORMATS.md)
AGED = -1  # previous-writer marker: the page was written by the aged state


def page_writes(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every written page in order: (lpn, pc, is_aged) per page, and the count of aged pages."""
    f = pq.ParquetFile(path)
    aged_rows = int((f.metadata.metadata or {}).get(b"pcstream.aged_rows", b"0"))
    t = f.read(columns=["op", "lpn", "pages", "pc"])
    op = t["op"].to_numpy()
    rows = np.flatnonzero(op == WRITE)
    lpn = t["lpn"].to_numpy()[rows].astype(np.int64)
    n = t["pages"].to_numpy()[rows].astype(np.int64)
    pc = t["pc"].to_numpy()[rows]
    # Expand each request to its pages: the request's first LPN plus 0 .. pages-1.
    starts = np.repeat(lpn, n)
    offsets = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    aged = np.repeat(rows < aged_rows, n)
    return starts + offsets, np.repeat(pc, n), aged, int(aged.sum())


def previous(lpns: np.ndarray) -> np.ndarray:
    """For each page write, the index of the previous write of the same LPN, or -1."""
    order = np.lexsort((np.arange(len(lpns)), lpns))
    prev = np.full(len(lpns), -1, dtype=np.int64)
    same = lpns[order][1:] == lpns[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    return prev


def pc_names(path: Path, pcs: list[int]) -> dict[int, str]:
    """Labels that tell the PCs apart (pcstream.pclabels), else the signature in hex."""
    try:
        labels = trace_labels(path, [str(pc) for pc in pcs])
    except (OSError, ValueError):
        labels = {}
    names = {int(sig): label.frames for sig, label in labels.items()}
    return {pc: names.get(pc) or f"{pc:016x}" for pc in pcs}


def report(path: Path, top: int) -> None:
    lpns, pcs, aged, n_aged = page_writes(path)
    prev = previous(lpns)
    host = ~aged
    # Host-page index of each write (aged pages come first and have none).
    host_idx = np.cumsum(host) - 1
    print(f"{path}: {int(host.sum()):,} host pages after {n_aged:,} aged pages")
    counts = Counter(pcs[host].tolist())
    names = pc_names(path, sorted(set(pcs.tolist())))
    for pc, pages in counts.most_common(top):
        sel = np.flatnonzero(host & (pcs == pc))
        p = prev[sel]
        had = p >= 0
        before = Counter()
        before["never"] = int((~had).sum())
        pa = p[had]
        before["aged"] = int(aged[pa].sum())
        for q, k in Counter(pcs[pa[~aged[pa]]].tolist()).items():
            before[names[q]] += k
        ages = host_idx[sel[had]][~aged[pa]] - host_idx[pa[~aged[pa]]]
        med = f"{np.median(ages):,.0f}" if len(ages) else "-"
        p10 = f"{np.percentile(ages, 10):,.0f}" if len(ages) else "-"
        common = ", ".join(f"{k} {v / pages:.0%}" for k, v in before.most_common(4) if v)
        print(f"  {names[pc]}: {pages:,} pages; the content they replaced was {med} host pages old")
        print(f"    (median; p10 {p10}), written by: {common}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=5, help="PCs with the most host pages (default 5)")
    args = ap.parse_args()
    for t in args.traces:
        report(t, args.top)


if __name__ == "__main__":
    main()
