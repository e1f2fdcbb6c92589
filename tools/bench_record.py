"""Per-write overhead of ``pcstream record``, by PC method (``make bench-record``).

Builds tests/shim/overhead.c (N x 64-byte pwrite from a call chain ``--depth`` functions deep,
default 10, frame pointers kept; with 12 frames hashed, depth 6 reaches libc's start-up code, so
auto walks its call-frame rules) and runs it: without the shim, with the shim loaded but inert
(no PCSHIM_DIR: interposition only), under ``pcstream record --via shim --method M --no-symbols``
for every method, under ``pcstream record --via bpf`` (the BPF capture: as root with it built;
its cost in the program is the BPF program run in the program's system calls, the loader's work
is in its own process), and with live hints (the shim as ``pcstream run`` starts it:
``PCSHIM_HINTS``, no logs) with the write's PC in the table (its hint set once, then found in the
per-inode cache) and not in it (NOT_SET, likewise), for the fp and auto methods (``--capture``:
only no shim, the shim's methods and the BPF capture); each configuration ``--repeat`` times,
interleaved. Prints the median ns/write (process CPU time, which waiting for a CPU shared with
other jobs does not inflate, and wall time) and the overhead over no shim.
The file lives in /dev/shm when it exists (tmpfs: the syscall, not the disk, is the baseline).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pcstream.record import bpfrun

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "tests" / "shim" / "overhead.c"
SHIM = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
METHODS = ("fp", "unwind", "auto", "scan")


def ns_per_write(out: str) -> tuple[float, float]:
    """(cpu, wall) ns per write from overhead.c's line "<N> writes <ns> ns/write <ns> cpu-ns/write"."""
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[1] == "writes" and parts[3] == "ns/write" and parts[5] == "cpu-ns/write":
            return float(parts[4]), float(parts[2])
    raise ValueError(f"overhead: unexpected output {out!r}; rebuild tests/shim/overhead.c")


def live_tables(prog: list[str], work: Path, method: str, frames: int) -> tuple[Path, Path]:
    """Hint files for the live configurations: the write's PC (recorded once) → SHORT, and a table
    of one other PC (so the write's PC is unknown)."""
    import pyarrow.parquet as pq

    from pcstream import live

    trace = work / f"pc-{method}.parquet"
    rec = [sys.executable, "-m", "pcstream", "record", "-o", str(trace), "--no-symbols", "--method", method]
    cmd = [*rec, "--frames", str(frames), "--", prog[0], "1000", *prog[2:]]
    subprocess.run(cmd, capture_output=True, check=True)
    pcs = {r["pc"] for r in pq.read_table(trace, columns=["op", "pc"]).to_pylist() if r["op"] == "write"}
    hit, miss = work / f"hit-{method}.bin", work / f"miss-{method}.bin"
    live.write_hints({pc: live.SHORT for pc in pcs}, hit)
    live.write_hints({1: live.SHORT}, miss)
    return hit, miss


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writes", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument("--depth", type=int, default=10, choices=range(1, 11), metavar="1..10")
    ap.add_argument("--capture", action="store_true", help="no inert shim, no live hints")
    a = ap.parse_args(argv)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not SHIM.is_file():
        print("bench-record: needs a C compiler and the built shim (make install)", file=sys.stderr)
        return 1
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="pcstream-bench-", dir=base) as tmp:
        work = Path(tmp)
        exe = work / "overhead"
        subprocess.run([cc, "-O2", "-fno-omit-frame-pointer", "-o", str(exe), str(SRC)], check=True)
        prog = [str(exe), str(a.writes), str(work / "o.dat"), str(a.depth)]
        inert = {k: v for k, v in os.environ.items() if not k.startswith("PCSHIM_")}
        inert["LD_PRELOAD"] = str(SHIM)
        configs: dict[str, tuple[list[str], dict[str, str] | None]] = {"no shim": (prog, None)}
        if not a.capture:
            configs["shim loaded, inert"] = (prog, inert)
        rec = [sys.executable, "-m", "pcstream", "record", "-o", str(work / "t.parquet"), "--no-symbols"]
        for m in METHODS:
            configs[f"record --method {m}"] = (
                [*rec, "--via", "shim", "--method", m, "--frames", str(a.frames), "--", *prog],
                None,
            )
        missing = bpfrun.missing()
        if missing is None:
            bpf = [*rec, "--via", "bpf", "--frames", str(a.frames), "--", *prog]
            configs["record --via bpf"] = (bpf, None)
            # the same chain built without frame pointers: the stack is copied for unwinding
            nofp = work / "overhead-nofp"
            subprocess.run([cc, "-O2", "-o", str(nofp), str(SRC)], check=True)
            prog_nofp = [str(nofp), *prog[1:]]
            configs["record --via bpf, no fp"] = ([*bpf[: bpf.index("--")], "--", *prog_nofp], None)
            # a dynamic program under auto: the shim records it, the BPF capture runs beside it
            auto = [*rec, "--via", "auto", "--method", "fp", "--frames", str(a.frames), "--", *prog]
            configs["record --via auto (fp)"] = (auto, None)
        else:
            print(f"bench-record: no --via bpf row: {missing[0]}", file=sys.stderr)
        for m in () if a.capture else ("fp", "auto"):
            hit, miss = live_tables(prog, work, m, a.frames)
            for what, table in (("in table", hit), ("unknown", miss)):
                env = {**inert, "PCSHIM_HINTS": str(table), "PCSHIM_METHOD": m}
                env["PCSHIM_FRAMES"] = str(a.frames)
                configs[f"live {m}, PC {what}"] = (prog, env)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in configs}
        for _ in range(a.repeat):
            for name, (cmd, env) in configs.items():
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                times[name].append(ns_per_write(proc.stdout))
        med = {k: tuple(statistics.median(x[i] for x in t) for i in (0, 1)) for k, t in times.items()}
        base = med["no shim"]
        what = f"{a.writes} x 64 B pwrite, depth {a.depth}, frames {a.frames}, median of {a.repeat}"
        print(f"{what} (ns/write):")
        print(f"  {'':<24} {'cpu':>8} {'+cpu':>8} {'wall':>8} {'+wall':>8}")
        for name, (cpu, wall) in med.items():
            print(f"  {name:<24} {cpu:8.1f} {cpu - base[0]:+8.1f} {wall:8.1f} {wall - base[1]:+8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
