"""Remaining lifetime of one PC's pages by the age they have reached: for the PC that writes the
most pages (or --pc), its host page versions written after --warmup host pages, and for ages
a = 1024, 2048, … host pages, the share still alive at age a and, of those, the share that dies
(is overwritten or trimmed) within the next --within host pages. Only versions whose age
a + --within falls inside the trace count at each age, so pages still alive at the trace's end
are not taken for dying.

This is what a GC-copy rule that knows a page's PC and age (and nothing of its future) has to go
by: where the share dying soon stays well above zero at every age, no age boundary keeps the
soon-dying copies apart from the long-lived ones (docs/POLICIES.md, "Why substreams do not pay
off here").

Usage: python tools/residual_by_age.py TRACE.parquet [--warmup PAGES] [--within PAGES] [--pc SIG]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from lifetime_by_lba import page_versions

FIRST_AGE = 1024


def table(path: Path, warmup: int, within: int, pc_sig: int | None) -> list[tuple[int, int, float, float]]:
    """Rows (age, versions counted, share alive at age, share of those dying within `within`)."""
    v = page_versions(path, pc_sig)
    clock, nxt, host = v["clock"], v["nxt"], v["host"]
    end = int(clock[-1] + host[-1]) if len(clock) else 0
    sel = np.flatnonzero(host & (v["pc"] == v["pc_sig"]) & (clock >= warmup))
    if len(sel) == 0:
        raise SystemExit(f"{path}: PC {v['pc_sig']} writes no page after {warmup} host pages")
    born = clock[sel]
    # A version still alive at the end lives at least until then: `never` stands for that.
    never = np.iinfo(np.int64).max
    life = np.where(nxt[sel] >= 0, clock[np.maximum(nxt[sel], 0)] - born, never)
    rows = []
    a = FIRST_AGE
    while True:
        seen = born + a + within <= end
        if not seen.any():
            break
        alive = seen & (life > a)
        n_alive = int(alive.sum())
        soon = float((life[alive] <= a + within).mean()) if n_alive else float("nan")
        rows.append((a, int(seen.sum()), n_alive / int(seen.sum()), soon))
        a *= 2
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--warmup", type=int, default=0, help="host pages to skip (default 0)")
    ap.add_argument(
        "--within", type=int, default=32768, help="horizon of 'dies soon', host pages (default 32768)"
    )
    ap.add_argument("--pc", type=int, default=None, help="PC signature (default: the top PC)")
    a = ap.parse_args()
    if a.within < 1 or a.warmup < 0:
        raise SystemExit("--within must be ≥ 1 and --warmup ≥ 0")
    rows = table(a.trace, a.warmup, a.within, a.pc)
    if not rows:
        raise SystemExit(f"{a.trace}: the trace is too short for age {FIRST_AGE} + --within {a.within}")
    print(f"{a.trace}: remaining lifetime by age (host pages), dying within {a.within:,}")
    print("       age   versions   alive at age   of those dying soon")
    for age, n, alive, soon in rows:
        print(f"  {age:>8,} {n:>10,}   {alive:>12.3f}   {soon:>19.3f}")


if __name__ == "__main__":
    main()
