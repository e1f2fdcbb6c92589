"""Lifetime of one PC's pages by where they land: the PC that writes the most pages (or --pc),
its host page versions (not the aged state's) that die within the trace (overwritten or
trimmed) after --warmup host pages, split into ten LBA ranges of equal page counts, with the
lifetime quartiles (in host pages) of each. Where the file system (or a generator) hands
short-lived files the LBAs that short-lived files freed, those ranges show short lifetimes:
what LBA-hotness schemes (AutoStream) can use and a PC cannot (docs/POLICIES.md, "PCStream
against AutoStream on the grid").

Usage: python tools/lifetime_by_lba.py TRACE.parquet [--warmup PAGES] [--pc SIGNATURE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

WRITE, TRIM = 0, 1  # the op column's codes (docs/FORMATS.md)
RANGES = 10


def page_versions(path: Path, pc_sig: int | None) -> dict:
    """Every host page version of the trace, expanded from its requests: `lpn`, `pc`, `host`
    (a host write, not a trim or the aged state's), `clock` (host pages written before it),
    `nxt` (index of the next event on the same LPN, -1 for none: the version is still alive
    at the end) and `pc_sig` (the PC asked for, or the one writing the most host pages)."""
    f = pq.ParquetFile(path)
    aged_rows = int((f.metadata.metadata or {}).get(b"pcstream.aged_rows", b"0"))
    t = f.read(columns=["op", "lpn", "pages", "pc"])
    op = t["op"].to_numpy()
    rows = np.flatnonzero((op == WRITE) | (op == TRIM))
    n = t["pages"].to_numpy()[rows].astype(np.int64)
    # Expand each request to its pages: the request's first LPN plus 0 .. pages-1.
    lpn = np.repeat(t["lpn"].to_numpy()[rows].astype(np.int64), n)
    lpn += np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    is_write = np.repeat(op[rows] == WRITE, n)
    pc = np.repeat(t["pc"].to_numpy()[rows], n)
    # Host pages written before each event; the aged state's rows are no host writes.
    host = is_write & np.repeat(rows >= aged_rows, n)
    clock = np.cumsum(host) - host
    order = np.lexsort((np.arange(len(lpn)), lpn))
    same = lpn[order][1:] == lpn[order][:-1]
    nxt = np.full(len(lpn), -1, dtype=np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    if pc_sig is None:
        if not host.any():
            raise SystemExit(f"{path}: the trace has no host write")
        sigs, counts = np.unique(pc[host], return_counts=True)
        pc_sig = int(sigs[counts.argmax()])
    return {"lpn": lpn, "pc": pc, "host": host, "clock": clock, "nxt": nxt, "pc_sig": pc_sig}


def report(path: Path, warmup: int, pc_sig: int | None) -> None:
    v = page_versions(path, pc_sig)
    lpn, clock, nxt, pc_sig = v["lpn"], v["clock"], v["nxt"], v["pc_sig"]
    sel = np.flatnonzero(v["host"] & (nxt >= 0) & (v["pc"] == pc_sig) & (clock >= warmup))
    if len(sel) == 0:
        raise SystemExit(f"{path}: PC {pc_sig} has no page that dies after {warmup} host pages")
    life = clock[nxt[sel]] - clock[sel]
    edges = np.quantile(lpn[sel], np.linspace(0, 1, RANGES + 1))
    bucket = np.digitize(lpn[sel], edges[1:-1])
    print(f"{path}: PC {pc_sig}, {len(sel):,} page versions that die after {warmup:,} host pages")
    print("  LPN from      pages   lifetime p25 / p50 / p75 (host pages)")
    for i in range(RANGES):
        q = np.percentile(life[bucket == i], [25, 50, 75]).astype(np.int64)
        print(f"  {int(edges[i]):>9,} {int((bucket == i).sum()):>9,}   {q[0]:,} / {q[1]:,} / {q[2]:,}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--warmup", type=int, default=0, help="host pages to skip (default 0)")
    ap.add_argument("--pc", type=int, default=None, help="PC signature (default: the top PC)")
    a = ap.parse_args()
    report(a.trace, a.warmup, a.pc)


if __name__ == "__main__":
    main()
