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
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pcstream import api, live
from pcstream.errors import (
    BadParameter,
    Failure,
    InputError,
    ProgramNotFound,
    ProgramNotRunnable,
    UsageError,
    check_output,
)
from pcstream.options import MAX_FRAMES, METHODS
from pcstream.record import elf, runner
from pcstream.record.symbols import symbolize_or_warn


def shim_path() -> Path:
    """The built shim; a one-line error if it is missing."""
    path = Path(__file__).resolve().parents[1] / "_shim" / "pcshim.so"
    if not path.is_file():
        raise Failure(f"{path}: the record shim is not built; run 'make install' (or 'make shim')")
    return path


def _check_output(out: Path) -> None:
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


def check_command(cmd: list[str]) -> str:
    """The program ``cmd`` runs (resolved on PATH); a one-line error when there is none."""
    if not cmd:
        raise UsageError("no command to record; usage: pcstream record [OPTIONS] -- CMD [ARGS...]")
    prog = cmd[0]
    if "/" in prog and os.path.exists(prog) and (os.path.isdir(prog) or not os.access(prog, os.X_OK)):
        # As shells do: found but not executable is 126, not found 127.
        why = "permission denied (not an executable file); check its mode"
        raise ProgramNotRunnable(f"{prog}: {why}")
    found = shutil.which(prog) if "/" not in prog else prog
    if not found or not os.path.exists(found):
        raise ProgramNotFound(f"{prog}: command not found; check it and PATH")
    return found


def static_warning(program: str) -> str | None:
    """A warning when ``program`` (or the interpreter of a ``#!`` script) is a statically linked
    ELF executable: the dynamic linker never runs, so LD_PRELOAD and the shim do not apply."""
    target = program
    if elf.is_static(target) is None:
        interpreter = elf.script_interpreter(target)
        if interpreter is None:
            return None
        target = interpreter if "/" in interpreter else (shutil.which(interpreter) or interpreter)
    if not elf.is_static(target):
        return None
    what = program if target == program else f"{program} (interpreter {target})"
    return (
        f"{what} is statically linked: LD_PRELOAD does not apply, so its writes cannot be recorded "
        "(dynamically linked programs it starts still are)"
    )


def private_shim_warning(shim: Path) -> str | None:
    """As root, a warning when other users cannot load ``shim`` (a directory on its path they
    cannot search, or the file they cannot read): a program that drops root privileges (runuser,
    su, a server that switches to its own user) then runs without the preload, and the dynamic
    linker says nothing about it."""
    if os.geteuid() != 0:
        return None
    for p in [shim, *shim.parents]:
        is_file = p == shim
        if not p.stat().st_mode & (stat.S_IROTH if is_file else stat.S_IXOTH):
            what, bit = ("readable", "r") if is_file else ("searchable", "x")
            return (
                f"{p} is not {what} by other users: a program that drops root privileges (runuser, "
                f"su, a server's own user) runs without the shim {shim}, silently; 'chmod o+{bit} {p}' "
                "or a checkout other users can reach fixes it"
            )
    return None


def early_warnings(cmd: list[str], shim: Path) -> list[str]:
    """What to say before ``cmd`` runs under ``shim``: a statically linked program (the shim does
    not apply) and, as root, a shim other users cannot reach (see the two checks)."""
    return [w for w in (static_warning(check_command(cmd)), private_shim_warning(shim)) if w]


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
    so = str(shim or shim_path())
    env["LD_PRELOAD"] = so + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["PCSHIM_DIR"] = str(logdir.resolve())
    env["PCSHIM_METHOD"] = method
    env["PCSHIM_FRAMES"] = str(frames)
    return runner.run(cmd, env, cwd)


def convert(logdir: Path, out: Path, source: str, coalesce: bool = True) -> dict[str, Any]:
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
    coalesce: bool = True,
    symbol_dirs: Sequence[Path] = (),
    say: Callable[[str], None] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` under the shim and write the trace ``out``: (command's exit status, summary).

    ``coalesce``: fold runs of small contiguous writes (the default; False keeps one row per
    call). ``symbol_dirs``: more places for separate debug files (:mod:`.symbols`). ``say`` gets
    warnings due before the command runs (a statically linked program); they are also in the
    summary's ``warnings``. A signal that ends the command (also one sent to us and forwarded)
    does not stop the conversion: the trace holds what the logs hold."""
    if method not in METHODS:
        raise BadParameter("method", method, f"{{param}} {{value}}: unknown; use one of {', '.join(METHODS)}")
    if not 1 <= frames <= MAX_FRAMES:
        raise BadParameter("frames", frames, f"{{param}} {{value}}: out of range; use 1..{MAX_FRAMES}")
    shim = shim_path()
    _check_output(out)
    early = early_warnings(cmd, shim)
    for warning in early:
        if say is not None:
            say(warning)
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        logdir = keep_logs
    else:
        logdir = new_logdir()
    try:
        status = run_under_shim(cmd, logdir, method, frames, shim)
        summary = convert(logdir, out, live.record_source(cmd, method, frames), coalesce)
        summary["warnings"] = early + list(summary.get("warnings", []))
        if symbols and summary.get("signatures"):
            symbolize_or_warn(out, summary, symbol_dirs)
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
    (logdir / OWNER_FILE).write_text(f"{os.getpid()}\n")
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
        lost = ", ".join(str(p) for p in s["lost_processes"])
        notes.append(f"records lost: process(es) {lost} ended without flushing (killed?)")
    return "\n".join([line, *(f"pcstream record: warning: {note}" for note in notes)])
