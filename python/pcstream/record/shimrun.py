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
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pcstream import api
from pcstream.errors import BadParameter, Failure, InputError, check_output, check_output_name
from pcstream.options import MAX_FRAMES, METHODS, VIAS, RecordOptions
from pcstream.record import bpfrun, jvm, runner
from pcstream.record.symbols import symbolize_or_warn


def check_output_path(out: Path) -> None:
    """Before the program runs: the output policy (errors.check_output), an existing directory,
    and a probe that a file can be created beside ``out`` (so a recording is never lost)."""
    parent = out.parent if str(out.parent) else Path(".")
    check_output(str(out))
    if not parent.is_dir():
        raise InputError(out, f"{out}: directory {parent} does not exist; create it or pick another")
    if not os.access(parent, os.W_OK):
        raise InputError(out, f"{out}: directory {parent} is not writable; pick another path")
    probe = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    try:
        probe.open("wb").close()
        probe.unlink()
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise InputError(out, f"{out}: cannot create a file there ({why}); pick another path") from None


def run_under_shim(
    cmd: list[str],
    logdir: Path,
    method: str = "auto",
    frames: int = 12,
    shim: Path | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> int:
    """Run ``cmd`` with the shim preloaded, logs to ``logdir``, in ``cwd`` (default: ours), in a
    process group of its own that gets the SIGTERM, SIGINT and SIGHUP sent to us
    (:mod:`.runner`); return its exit status (128+N if signal N ended it). ``env``: the
    environment to start from (default: ours)."""
    env = dict(os.environ if env is None else env)
    so = str(shim or runner.shim_path())
    env["LD_PRELOAD"] = so + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["PCSHIM_DIR"] = str(logdir.resolve())
    env["PCSHIM_METHOD"] = method
    env["PCSHIM_FRAMES"] = str(frames)
    return runner.run(cmd, env, cwd)


def convert(
    logdir: Path, out: Path, source: str, options: RecordOptions, capture: str = bpfrun.CAPTURE_SHIM
) -> dict[str, Any]:
    """Convert the shim logs in ``logdir`` into the file-level trace ``out``; the engine's summary.
    ``options.coalesce``: fold runs of small contiguous writes (one row per stretch of pages with
    the same last-writing PC; see docs/RECORD.md). ``capture``: its ``pcstream.capture``."""
    return api.record_convert(str(logdir), str(out), source, options, capture)


def plan_capture(cmd: list[str], via: str) -> tuple[str, list[str], list[str]]:
    """Before the run: the capture ``via`` gives here (``pcstream.capture``), the warnings due
    before the run (a static program the shim cannot enter, when BPF does not record it) and
    those for the summary only (``auto`` without BPF). ``--via bpf`` without what BPF needs is a
    one-line error."""
    if via not in VIAS:
        raise BadParameter("via", via, f"{{param}} {{value}}: unknown; use one of {', '.join(VIAS)}")
    if via == "bpf":
        bpfrun.require()
        runner.check_command(cmd)
        return bpfrun.CAPTURE_BPF, [], []
    shim = runner.shim_path()
    warnings = runner.early_warnings(cmd, shim)
    missing = bpfrun.missing() if via == "auto" else None
    if via == "shim" or missing is not None:
        return bpfrun.CAPTURE_SHIM, warnings, [bpfrun.auto_warning(missing[0])] if missing else []
    static = runner.static_warning(runner.check_command(cmd))
    return bpfrun.CAPTURE_BOTH, [w for w in warnings if w != static], []


def run_capture(
    cmd: list[str], logdir: Path, options: RecordOptions, capture: str, env: dict[str, str] | None = None
) -> tuple[int, str, list[str]]:
    """Run ``cmd`` the way ``capture`` says, from the environment ``env`` (default: ours): (exit
    status, the capture in effect, warnings). When the BPF capture of ``auto`` cannot attach after
    all (the program has not run then), the run is the shim's alone, with a warning."""
    if capture == bpfrun.CAPTURE_SHIM:
        return run_under_shim(cmd, logdir, options.method, options.frames, env=env), capture, []
    base = dict(os.environ if env is None else env)
    env = dict(base)
    shim = None
    if capture == bpfrun.CAPTURE_BOTH:
        shim = runner.shim_path()
        env.update(
            PCSHIM_DIR=str(logdir.resolve()), PCSHIM_METHOD=options.method, PCSHIM_FRAMES=str(options.frames)
        )
    status, ran = bpfrun.run_capture(cmd, logdir, options.frames, shim=shim, env=env)
    if ran is not None:
        return status, capture, []
    why = "the BPF capture could not attach (its message is above)"
    if capture == bpfrun.CAPTURE_BPF:
        raise Failure(f"record --via bpf: {why}; --via shim records without it")
    status = run_under_shim(cmd, logdir, options.method, options.frames, env=base)
    return status, bpfrun.CAPTURE_SHIM, [bpfrun.auto_warning(why)]


# Recording as 'pcstream record' does without options.
DEFAULT_OPTIONS = RecordOptions()


def record(
    cmd: list[str],
    out: Path,
    options: RecordOptions = DEFAULT_OPTIONS,
    *,
    say: Callable[[str], None] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` under the shim and write the trace ``out`` as ``options`` say: (command's exit
    status, summary).

    From ``options``: ``method`` and ``frames`` make the PC signature; ``keep_logs`` keeps the
    shim's logs in that directory (None: a temporary one, removed); ``coalesce`` folds runs of
    small contiguous writes (the default; False keeps one row per call); ``no_symbols`` leaves the
    PC table's frames unnamed; ``symbol_dirs``: more places for separate debug files
    (:mod:`.symbols`); ``via``: the shim, BPF or both (:func:`plan_capture`); the ``block``
    fields do not apply (see :func:`pcstream.compose.record_block`).
    ``say`` gets warnings due before the command runs (a statically linked program); they are
    also in the summary's ``warnings``. A signal that ends the command (also one sent to us and
    forwarded) does not stop the conversion: the trace holds what the logs hold."""
    method, frames = options.method, options.frames
    if method not in METHODS:
        raise BadParameter("method", method, f"{{param}} {{value}}: unknown; use one of {', '.join(METHODS)}")
    if not 1 <= frames <= MAX_FRAMES:
        raise BadParameter("frames", frames, f"{{param}} {{value}}: out of range; use 1..{MAX_FRAMES}")
    capture, early, notes = plan_capture(cmd, options.via)
    runner.check_outputs_spare_command([out], cmd)
    check_output_path(out)
    for warning in early:
        if say is not None:
            say(warning)
    keep_logs = Path(check_output_name(options.keep_logs)) if options.keep_logs else None
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        logdir = keep_logs
    else:
        logdir = new_logdir()
    try:
        java = jvm.prepare(cmd, runner.check_command(cmd), logdir, frames)  # a JVM: JFR gives Java call paths
        status, capture, late = run_capture(java.cmd, logdir, options, capture, java.env)
        java_summary = java.attribute(logdir)
        source = runner.record_source(cmd, method, frames, bpf_only=capture == bpfrun.CAPTURE_BPF)
        summary = convert(logdir, out, source, options, capture)
        summary["warnings"] = (
            early + notes + late + list(summary.get("warnings", [])) + java_summary.pop("warnings", [])
        )
        summary.update(java_summary)
        summary["capture"] = capture
        if not options.no_symbols and summary.get("signatures"):
            symbolize_or_warn(out, summary, [Path(d) for d in options.symbol_dirs])
    finally:
        if keep_logs is None:
            shutil.rmtree(logdir, ignore_errors=True)
    summary["status"] = status
    return status, summary


# The shim's per-process logs go to a private directory under the temporary directory, named
# with this prefix and holding OWNER_FILE (the recording process's pid). A recording killed
# with SIGKILL cannot remove its directory (a suite recipe's logs reach gigabytes): the next
# recording removes those whose owner is gone.
LOGDIR_PREFIX = "pcstream-record-"
OWNER_FILE = "owner.pid"


def new_logdir() -> Path:
    """A fresh log directory owned by this process, after removing stale ones."""
    sweep_stale_logdirs()
    logdir = Path(tempfile.mkdtemp(prefix=LOGDIR_PREFIX))
    # Written aside and renamed: the owner file appears with the pid in it, so a recording killed
    # in between never leaves an empty one, which the sweep could not judge and would keep.
    aside = logdir / (OWNER_FILE + ".new")
    aside.write_text(f"{os.getpid()}\n")
    os.replace(aside, logdir / OWNER_FILE)
    return logdir


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def sweep_stale_logdirs(tmp: Path | None = None) -> list[Path]:
    """Remove the log directories (and their ``.hints`` files) whose owner process no longer
    runs; directories without an owner file are not ours to judge and stay. Returns what was
    removed."""
    removed = []
    for d in sorted(Path(tmp or tempfile.gettempdir()).glob(LOGDIR_PREFIX + "*")):
        try:
            pid = int((d / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if pid <= 0 or _alive(pid):
            continue
        shutil.rmtree(d, ignore_errors=True)
        for extra in d.parent.glob(d.name + ".hints*"):
            extra.unlink(missing_ok=True)
        removed.append(d)
    return removed


# Counters of the engine's summary printed when non-zero: key -> what N of them are.
SUMMARY_COUNTS = (
    ("recovered_bytes", "bytes recovered by the safety net (written where no hook saw them)"),
    ("inline_stdio_bytes", "bytes written through stdio macros (accounted at flush)"),
    ("unplaced_bytes", "bytes it could not place in a file"),
    ("hint_events", "write-hint changes"),
    ("java_writes", "writes given their Java call path (JFR)"),
)


def summary_line(out: Path, s: dict[str, Any]) -> str:
    """The summary printed to stderr: one line of counts, then one line per warning."""
    named = ""
    if s.get("symbolized"):
        debug = s.get("debug_files")
        extra = f", {debug} module(s) from separate debug files" if debug else ""
        named = f" ({s['symbolized']} frames named{extra})"
    line = (
        f"pcstream record: {s['records']} records ({s['writes']} writes, {s['write_bytes']} bytes) "
        f"from {s['processes']} processes, {s['signatures']} signatures{named}, {s['paths']} files -> {out}"
    )
    for key, what in SUMMARY_COUNTS:
        if s.get(key, 0):
            line += f"; {s[key]} {what}"
    notes = list(s.get("warnings", []))
    if s.get("lost_processes"):
        notes.append(lost_note(s))
    return "\n".join([line, *(f"pcstream record: warning: {note}" for note in notes)])


def lost_note(s: dict[str, Any]) -> str:
    """The warning for process images whose logs are incomplete, with what is known of the loss:
    records their end lines count beyond what their logs hold, and bytes of records and lines
    cut short (a lower bound: a process without an end line leaves no count)."""
    lost = ", ".join(str(p) for p in s["lost_processes"])
    counts = []
    if s.get("lost_records"):
        counts.append(f"{s['lost_records']} records their end lines count but their logs miss")
    if s.get("torn_bytes"):
        counts.append(f"{s['torn_bytes']} bytes of records and lines cut short")
    return (
        f"records lost: process(es) {lost} ended without flushing "
        "(killed, or a file-size limit or a full disk cut its log short); "
        + (f"lost at least: {', '.join(counts)}" if counts else "how many is not known (no end line)")
    )
