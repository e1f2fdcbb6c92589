"""Summarise AFL++ runs (``make fuzz``): one row per target from its fuzzer_stats file
(fuzz/target/afl/<target>/default/fuzzer_stats).

Prints a Markdown table (target, executions, run time, executions per second, corpus entries,
edges found, bitmap coverage, crashes, hangs) for docs/HARDENING.md.

Usage: python tools/fuzz_report.py [FUZZ_OUT_DIR]   (default fuzz/target/afl)
"""

from __future__ import annotations

import sys
from pathlib import Path

COLUMNS = (
    "target | executions | time | exec/s | corpus | edges found / instrumented | bitmap | crashes | hangs"
)
HEADER = f"| {COLUMNS} |"


def stats(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz/target/afl")
    rows = []
    for path in sorted(root.glob("*/default/fuzzer_stats")):
        s = stats(path)
        target = path.parents[1].name
        execs = int(s.get("execs_done", "0"))
        seconds = max(1, int(s.get("last_update", "0")) - int(s.get("start_time", "0")))
        rows.append(
            f"| `{target}` | {execs:,} | {seconds} s | {execs // seconds:,} | {s.get('corpus_count', '?')} "
            f"| {s.get('edges_found', '?')} / {s.get('total_edges', '?')} | {s.get('bitmap_cvg', '?')} "
            f"| {s.get('saved_crashes', s.get('unique_crashes', '?'))} | {s.get('saved_hangs', '?')} |"
        )
    if not rows:
        print(f"no fuzzer_stats under {root}", file=sys.stderr)
        return 1
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
