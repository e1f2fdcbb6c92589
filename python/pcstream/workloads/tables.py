"""Persistent PC tables learned on a second recording of the suite's recipes.

The seeds' persistent PC-stream table is learned in one run of a program and loaded at the start
of the next, so the next run places its first writes by what the PCs did before instead of
sending them to stream 0 until their lifetimes are known. To show its effect where GC works, a
recipe is recorded a second time (another run of the same program: the PC signatures are the same,
the writes are not) and mapped on the suite's aged file system in each discard mode; ``pcstream``
on that trace saves its table, kept beside the bundled traces in ``traces/tables/`` (a few kB
each), and docs/RESULTS.md compares ``pcstream`` on the bundled trace with an empty table against
``pcstream`` starting from the table learned on the second recording.

Run: ``python -m pcstream.workloads.tables SECOND_TRACE... -o traces/tables [--ssd paper]``
(``make tables`` records the second runs and learns the tables).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pcstream import api, tracemeta
from pcstream.options import SimOptions

# Under the traces directory.
TABLES_DIR = "tables"
# The policy whose table is learned and loaded.
POLICY = "pcstream"
# The prefill of a trace without its own aged state (compare's default).
PREFILL = 0.9


def table_for(trace: Path, tables_dir: Path) -> Path:
    """Where the table learned for the workload and mode of ``trace`` (``NAME[.nodiscard].parquet``)
    is kept."""
    return tables_dir / (trace.name.removesuffix(".parquet") + ".json")


def sim_options(trace: Path, ssd: str, table: str | None) -> SimOptions:
    prefill = 0.0 if tracemeta.aged_pages(str(trace)) > 0 else PREFILL
    return SimOptions(ssd=ssd, prefill=prefill, table=table, timing=False)


def learn(trace: Path, out: Path, ssd: str) -> dict:
    """Run ``pcstream`` on ``trace`` from an empty table and keep the table it saves as ``out``
    (written whole or not at all)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as d:
        saved = os.path.join(d, out.name)
        result = api.simulate(str(trace), POLICY, sim_options(trace, ssd, saved))
        os.replace(saved, out)
    return result


def with_table(trace: Path, table: Path, ssd: str) -> dict:
    """``pcstream`` on ``trace`` starting from a copy of ``table`` (the kept table stays as it is:
    the run saves its own table over the copy)."""
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, table.name)
        shutil.copyfile(table, copy)
        return api.simulate(str(trace), POLICY, sim_options(trace, ssd, copy))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path, help="block traces of the second recordings")
    ap.add_argument("-o", "--output-dir", type=Path, required=True, help="where NAME[.nodiscard].json go")
    ap.add_argument("--ssd", default="paper")
    a = ap.parse_args(argv)
    for t in a.traces:
        if not t.is_file():
            print(f"error: {t}: no such trace; record the second runs first (make tables)", file=sys.stderr)
            return 2
    for t in a.traces:
        out = table_for(t, a.output_dir)
        r = learn(t, out, a.ssd)
        print(f"{t}: pcstream WAF {r['waf']:.3f}; table -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
