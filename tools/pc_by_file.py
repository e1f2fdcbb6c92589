"""Pages a block trace's program wrote, by PC × file kind: which call paths write which files.

    python tools/pc_by_file.py traces/cassandra.nodiscard.parquet --kind 'commit log=/commitlog/' \
        --kind 'SSTable data=-Data\\.db$' --kind 'SSTable other=-[A-Za-z]+\\.(db|crc32|txt)$'

Counts the written pages after the trace's aged state (the program's own writes), groups them by
PC and by the first ``--kind NAME=REGEX`` whose regular expression matches the file's path (the
footer's ``pcstream.files``; "other" when none does), and prints a Markdown table: each PC with
at least ``--min-share`` of the pages (its innermost frames that tell it apart), its share of all
pages and how its pages split over the kinds; then each kind's share and the PC that wrote most
of it. Journal and metadata pages (file 0) are not counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

OP_WRITE = 0  # the block trace's op of a write (crates/pcstream-core/src/request.rs)


def label(frames: list[dict], others: list[list[dict]]) -> str:
    """The PC's innermost frame and, for PCs sharing it, its first frame that differs."""
    names = [f.get("symbol") or f"{f.get('module', '?')}+{f.get('offset', 0):#x}" for f in frames]
    if not names:
        return "?"
    short = [n.rsplit(".", 2)[-2] + "." + n.rsplit(".", 1)[-1] if n.count(".") >= 2 else n for n in names]
    for i, n in enumerate(names):
        if all(len(o) <= i or (o[i].get("symbol") or "") != n for o in others):
            return short[0] if i == 0 else f"{short[0]} < … < {short[i]}"
    return short[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--kind", action="append", default=[], metavar="NAME=REGEX")
    ap.add_argument("--min-share", type=float, default=0.01)
    a = ap.parse_args(argv)
    kinds = []
    for k in a.kind:
        name, sep, rx = k.partition("=")
        if not sep:
            ap.error(f"--kind {k!r}: give NAME=REGEX")
        kinds.append((name, re.compile(rx)))
    f = pq.ParquetFile(a.trace)
    kv = f.metadata.metadata or {}
    files = {int(k): v for k, v in json.loads(kv.get(b"pcstream.files", b"{}")).items()}
    pcs = json.loads(kv.get(b"pcstream.pcs", b"{}"))
    skip = int(kv.get(b"pcstream.aged_rows", b"0"))
    t = f.read(columns=["op", "pages", "pc", "file"]).slice(skip)
    t = t.filter(pc.and_(pc.equal(t["op"], OP_WRITE), pc.not_equal(t["file"], 0)))

    def kind(fid: int) -> str:
        path = files.get(fid, "")
        return next((name for name, rx in kinds if rx.search(path)), "other")

    pages: dict[int, Counter[str]] = defaultdict(Counter)
    for sig, fid, n in zip(t["pc"].to_pylist(), t["file"].to_pylist(), t["pages"].to_pylist()):
        pages[sig][kind(fid)] += n
    total = sum(sum(c.values()) for c in pages.values())
    if not total:
        print(f"{a.trace}: no written pages after the aged state", file=sys.stderr)
        return 1
    names = [k for k, _ in kinds] + ["other"]
    ranked = sorted(pages, key=lambda s: -sum(pages[s].values()))
    shown = [s for s in ranked if sum(pages[s].values()) >= a.min_share * total]
    frames = {s: pcs.get(str(s), []) for s in shown}
    print(f"| PC | pages | share | {' | '.join(names)} |")
    print("|---|---:|---:|" + "---:|" * len(names))
    for s in shown:
        n = sum(pages[s].values())
        lab = label(frames[s], [frames[o] for o in shown if o != s])
        cells = " | ".join(f"{pages[s][k] / n:.0%}" if pages[s][k] else "" for k in names)
        print(f"| `{lab}` | {n:,} | {n / total:.1%} | {cells} |")
    rest = sum(sum(pages[s].values()) for s in ranked if s not in shown)
    print(f"| {len(ranked) - len(shown)} other PCs | {rest:,} | {rest / total:.1%} |" + " |" * len(names))
    print()
    for k in names:
        in_kind = {s: pages[s][k] for s in ranked if pages[s][k]}
        n = sum(in_kind.values())
        if n:
            top = max(in_kind, key=lambda s: in_kind[s])
            lab = label(pcs.get(str(top), []), [pcs.get(str(o), []) for o in shown if o != top])
            print(f"* {k}: {n:,} pages ({n / total:.1%}), {in_kind[top] / n:.0%} of them by `{lab}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
