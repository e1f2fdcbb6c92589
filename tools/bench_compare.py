"""Wall time of ``pcstream compare`` on the bundled suite with every policy (``make bench-compare``).

Runs ``pcstream compare --policies all --json`` (the bundled traces on their SSD, the `paper`
preset, each from its own aged state, timing model on, --jobs = all cores) ``--repeat`` times and
prints each wall time, the median, and runs and host pages per second. The target on 2 cores is
under 2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PCSTREAM = ROOT / ".venv" / "bin" / "pcstream"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-timing", action="store_true", help="pass --no-timing (WAF only)")
    a = ap.parse_args(argv)
    cmd = [str(PCSTREAM), "compare", "--policies", "all", "--json"]
    if a.no_timing:
        cmd.append("--no-timing")
    walls = []
    runs = pages = 0
    for i in range(a.repeat):
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            tail = proc.stderr.strip()[-300:]
            print(f"error: compare exited {proc.returncode}: {tail}", file=sys.stderr)
            return 1
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        runs = len(lines)
        pages = sum(r.get("host_pages", 0) or 0 for r in lines)
        walls.append(wall)
        print(f"run {i + 1}: {wall:.1f} s ({runs} simulations)")
    med = statistics.median(walls)
    print(
        f"compare, bundled suite, all policies, {os.cpu_count()} cores: median {med:.1f} s "
        f"(min {min(walls):.1f}, max {max(walls):.1f}); {runs / med:.2f} simulations/s, "
        f"{pages / med / 1e6:.2f} M host pages/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
