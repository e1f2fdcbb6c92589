"""Check that `pcstream compare --json` gives the same results as a saved reference.

A restructuring of the code must not change any simulated figure. Save a reference once, on the
code before the change, then check the code after it:

    python tools/same_results.py save before.jsonl            # the bundled suite, all policies
    python tools/same_results.py check before.jsonl
    python tools/same_results.py check before.jsonl -- t.parquet --ssd small   # other compare args

Every field of every result line must be equal except the ones that measure the machine
(`VOLATILE_FIELDS`: wall-clock time and rates) and the memory the engine and policy hold
(`MEMORY_FIELDS`: a change of data layout changes them, not what is simulated). Traces are
matched by file name, so a reference saved in another checkout still applies. Exit status 0
when all results are equal, 1 otherwise (each difference printed), 2 on a usage error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pcstream.api import VOLATILE_FIELDS

Result = dict[str, Any]

MEMORY_FIELDS = frozenset({"bytes_per_page", "engine_state_bytes", "policy_state_bytes"})


def run_compare(args: list[str]) -> list[Result]:
    """The result lines of `pcstream compare --json ARGS` (the bundled suite when ARGS is empty)."""
    cmd = [sys.executable, "-m", "pcstream", "compare", "--json", *args]
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def key(r: Result) -> tuple[str, str, str]:
    return (Path(str(r["trace"])).name, str(r["policy"]), str(r["ssd"]))


def stable(r: Result) -> Result:
    """The result without its machine-dependent and memory fields, the trace named by its file."""
    out = {k: v for k, v in r.items() if k not in VOLATILE_FIELDS | MEMORY_FIELDS}
    out["trace"] = Path(str(r["trace"])).name
    return out


def differences(reference: list[Result], current: list[Result]) -> list[str]:
    ref = {key(r): stable(r) for r in reference}
    cur = {key(r): stable(r) for r in current}
    found = [f"{k}: missing in the current results" for k in sorted(ref.keys() - cur.keys())]
    found += [f"{k}: not in the reference" for k in sorted(cur.keys() - ref.keys())]
    for k in sorted(ref.keys() & cur.keys()):
        a, b = ref[k], cur[k]
        for field in sorted(a.keys() | b.keys()):
            if a.get(field) != b.get(field):
                found.append(f"{k}: {field}: reference {a.get(field)!r}, now {b.get(field)!r}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("save", "check") or (len(argv) > 2 and argv[2] != "--"):
        print(__doc__, file=sys.stderr)
        return 2
    verb, path, args = argv[0], Path(argv[1]), argv[3:]
    results = run_compare(args)
    if verb == "save":
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in results))
        print(f"saved {len(results)} results to {path}")
        return 0
    reference = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    found = differences(reference, results)
    for line in found:
        print(line)
    print(f"{len(results)} results, {len(reference)} in the reference, {len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
