"""Record the file writes of a program (``pcstream record``): run it with the pcshim LD_PRELOAD
shim, then convert the per-process shim logs into one file-level trace (Parquet; columns and
footer keys in docs/FORMATS.md, "File-level trace") and name the frames of its PC table
(:mod:`.symbols`).

The shim (``pcstream/_shim/pcshim.so``) is built by ``make install`` from ``shim/``; its log format
is documented in ``shim/include/pcshim.h`` and docs/RECORD.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pcstream import api
from pcstream.errors import EXIT_INPUT, EXIT_USAGE, CliError
from pcstream.record.symbols import symbolize_or_warn

METHODS = ("auto", "fp", "unwind", "scan")
EXIT_NOT_FOUND = 127


def shim_path() -> Path:
    """The built shim; a one-line error if it is missing."""
    path = Path(__file__).resolve().parents[1] / "_shim" / "pcshim.so"
    if not path.is_file():
        raise CliError(f"{path}: the record shim is not built; run 'make install' (or 'make shim')")
    return path


def _check_output(out: Path) -> None:
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise CliError(f"{out}: is a directory; give a file name for the trace", EXIT_INPUT)
    if not parent.is_dir():
        raise CliError(f"{out}: directory {parent} does not exist; create it or pick another", EXIT_INPUT)
    if not os.access(parent, os.W_OK):
        raise CliError(f"{out}: directory {parent} is not writable; pick another path", EXIT_INPUT)


def check_command(cmd: list[str]) -> None:
    if not cmd:
        raise CliError("no command to record; usage: pcstream record [OPTIONS] -- CMD [ARGS...]", EXIT_USAGE)
    prog = cmd[0]
    found = shutil.which(prog) if "/" not in prog else (prog if os.access(prog, os.X_OK) else None)
    if not found or os.path.isdir(found):
        raise CliError(f"{prog}: command not found (or not executable); check it and PATH", EXIT_NOT_FOUND)


def run_under_shim(
    cmd: list[str],
    logdir: Path,
    method: str = "auto",
    frames: int = 12,
    shim: Path | None = None,
    cwd: Path | None = None,
) -> int:
    """Run ``cmd`` with the shim preloaded, logs to ``logdir``, in ``cwd`` (default: ours);
    return its exit status (128+N if killed)."""
    env = dict(os.environ)
    so = str(shim or shim_path())
    env["LD_PRELOAD"] = so + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["PCSHIM_DIR"] = str(logdir.resolve())
    env["PCSHIM_METHOD"] = method
    env["PCSHIM_FRAMES"] = str(frames)
    proc = subprocess.Popen(cmd, env=env, cwd=cwd)
    forward = {signal.SIGTERM, signal.SIGHUP}
    old = {sig: signal.getsignal(sig) for sig in forward}
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets Ctrl-C; we convert after
    try:
        for sig in forward:
            signal.signal(sig, lambda s, _f: proc.send_signal(s))
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


def convert(logdir: Path, out: Path, source: str, coalesce: bool = False) -> dict[str, Any]:
    """Convert the shim logs in ``logdir`` into the file-level trace ``out``; the engine's summary.
    ``coalesce``: fold runs of small contiguous writes (one row per stretch of pages with the same
    last-writing PC; see docs/RECORD.md)."""
    return api.record_convert(str(logdir), str(out), source, coalesce)


def record(
    cmd: list[str],
    out: Path,
    method: str = "auto",
    frames: int = 12,
    keep_logs: Path | None = None,
    symbols: bool = True,
    coalesce: bool = False,
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` under the shim and write the trace ``out``: (command's exit status, summary)."""
    if method not in METHODS:
        raise CliError(f"--method {method}: unknown; use one of {', '.join(METHODS)}", EXIT_USAGE)
    if not 1 <= frames <= 64:
        raise CliError(f"--frames {frames}: out of range; use 1..64", EXIT_USAGE)
    shim = shim_path()
    _check_output(out)
    check_command(cmd)
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        logdir = keep_logs
    else:
        logdir = Path(tempfile.mkdtemp(prefix="pcstream-record-"))
    try:
        status = run_under_shim(cmd, logdir, method, frames, shim)
        summary = convert(logdir, out, "pcstream record " + " ".join(cmd), coalesce)
        if symbols and summary.get("signatures"):
            symbolize_or_warn(out, summary)
    finally:
        if keep_logs is None:
            shutil.rmtree(logdir, ignore_errors=True)
    summary["status"] = status
    return status, summary


def summary_line(out: Path, s: dict[str, Any]) -> str:
    """The one-line summary printed to stderr."""
    line = (
        f"pcstream record: {s['records']} records ({s['writes']} writes, {s['write_bytes']} bytes) "
        f"from {s['processes']} processes, {s['signatures']} signatures"
        + (f" ({s['symbolized']} frames named)" if s.get("symbolized") else "")
        + f", {s['paths']} files -> {out}"
    )
    notes = list(s.get("warnings", []))
    if s.get("lost_processes"):
        lost = ", ".join(str(p) for p in s["lost_processes"])
        notes.append(f"records lost: process(es) {lost} ended without flushing (killed?)")
    if notes:
        line += "; warning: " + "; ".join(notes)
    return line
