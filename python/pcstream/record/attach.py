"""``pcstream record --pid PID[,PID...]``: record processes that run already, with the BPF capture
(the shim cannot enter a running process): their threads and the children they start, until
``--duration`` seconds passed, SIGINT or SIGTERM came, or they all ended. Files they opened before
are named from ``/proc/PID/fd``. docs/RECORD.md, "Attaching to running processes"."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pcstream.errors import Failure, UsageError
from pcstream.options import RecordOptions
from pcstream.record import bpfrun, jvmattach, shimrun
from pcstream.record.symbols import symbolize_or_warn

# The first words of an attached trace's ``pcstream.source``.
SOURCE_VERB = "pcstream record --pid"


def parse_pids(text: str) -> list[int]:
    """``PID[,PID...]`` as pids of running processes; a one-line usage error otherwise."""
    pids = []
    for word in text.split(","):
        if not word.strip().isdigit() or int(word) <= 0:
            raise UsageError(f"--pid {text}: expected PID[,PID...] (positive numbers)")
        pid = int(word)
        if not Path(f"/proc/{pid}").is_dir():
            raise UsageError(f"--pid {pid}: no such process; check it with ps")
        pids.append(pid)
    return pids


@contextlib.contextmanager
def _forward_to(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM sent to us go to the capture (which then stops and writes
    what it has) instead of ending us."""

    def forward(sig: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)

    saved = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def capture(
    pids: list[int],
    logdir: Path,
    frames: int,
    duration: float | None,
    jvms: list[jvmattach.AttachedJfr],
    warnings: list[str],
) -> None:
    """Run the loader on ``pids`` until the end (see the module's doc); its logs go to ``logdir``.
    In each JVM among them a JFR recording runs meanwhile (``jvms``; ``warnings`` for those where
    it could not)."""
    argv = [str(bpfrun.capture_path()), "-o", str(logdir.resolve()), "--frames", str(frames)]
    argv += ["--pid", ",".join(str(p) for p in pids)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with _forward_to(proc):
        # the capture attaches in a fraction of a second; JFR.start takes about one, several on
        # a loaded machine: the duration counts from when both are in place, so that a short
        # recording of a JVM does not end before its writes get Java call paths
        for pid in pids:
            if jvmattach.is_jvm_process(pid):
                started = jvmattach.start(pid, frames)
                (warnings if isinstance(started, str) else jvms).append(started)  # type: ignore[arg-type]
        try:
            _, err = proc.communicate(timeout=duration)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)  # the capture stops and writes what it has
            _, err = proc.communicate()
    for handle in jvms:
        stopped = handle.stop()
        if stopped is not None:
            warnings.append(stopped)
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else "no message"
        raise Failure(f"record --pid: the BPF capture failed (status {proc.returncode}): {why}")


def record_pids(
    pids: list[int], out: Path, options: RecordOptions, duration: float | None = None
) -> tuple[int, dict[str, Any]]:
    """Record the running processes ``pids`` into the trace ``out``: (0, summary). Of ``options``:
    ``frames``, ``keep_logs``, ``coalesce``, ``no_symbols`` and ``symbol_dirs`` as for a command."""
    why = bpfrun.missing()
    if why is not None:
        raise UsageError(f"record --pid: {why[0]}; attaching to running processes needs the BPF capture")
    if duration is not None and duration <= 0:
        raise UsageError(f"--duration {duration}: expected seconds > 0")
    shimrun.check_output_path(out)
    keep_logs = Path(options.keep_logs) if options.keep_logs else None
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
    logdir = keep_logs or shimrun.new_logdir()
    try:
        jvms: list[jvmattach.AttachedJfr] = []
        warnings: list[str] = []
        try:
            capture(pids, logdir, options.frames, duration, jvms, warnings)
            java: dict[str, Any] = {}
            for handle in jvms:
                joined = handle.attribute(logdir)
                warnings += joined.pop("warnings", [])
                for key, value in joined.items():
                    java[key] = java.get(key, 0) + value if isinstance(value, int) else value
        finally:
            for handle in jvms:
                shutil.rmtree(handle.run.jfr_dir or "", ignore_errors=True)
        source = f"{SOURCE_VERB} {','.join(str(p) for p in pids)} --frames {options.frames}"
        summary = shimrun.convert(logdir, out, source, options, bpfrun.CAPTURE_BPF)
        summary["warnings"] = warnings + list(summary.get("warnings", []))
        summary.update(java)
        if not options.no_symbols and summary.get("signatures"):
            symbolize_or_warn(out, summary, [Path(d) for d in options.symbol_dirs])
    finally:
        if keep_logs is None:
            shutil.rmtree(logdir, ignore_errors=True)
    summary["capture"] = bpfrun.CAPTURE_BPF
    summary["status"] = 0
    return 0, summary


def check_pids_usage(cmd: tuple[str, ...], pids: str | None) -> None:
    """--pid and a command exclude each other; one of them is needed."""
    if pids is not None and cmd:
        raise UsageError("--pid and a command exclude each other: record running processes or run one")
    if pids is None and not cmd:
        raise UsageError("no command to record; usage: pcstream record [OPTIONS] -- CMD [ARGS...]")
