"""Run a command under the shim: first the shim's path, the command's checks and the warnings due
before it starts (:func:`shim_path`, :func:`early_warnings`), and the ``pcstream.source`` of its
trace (:func:`record_source`), shared by ``pcstream record``, ``record --block`` and
``pcstream run``; then the run itself, the way a shell runs a job, so that ``pcstream record`` can
stop it and still write its trace.

The command starts in a process group of its own. SIGTERM, SIGINT and SIGHUP sent to
``pcstream record`` are forwarded to that whole group (the program and every descendant that
stayed in it, so a shell's children end too and their shim flushes its records); record then waits
for the program, gives the rest of the group a few seconds to end, and returns the program's
status (128+N when signal N ended it), so the caller still converts what the logs hold.

When record's standard input is its controlling terminal and record is in the foreground, the
terminal is handed to the command's group for the run (the command reads from it and gets Ctrl-C
and Ctrl-Z directly, as in a shell) and taken back at the end; a command stopped with Ctrl-Z stops
record too, and ``fg`` resumes both.

Without a terminal, a command that stops (``kill -STOP $$``, SIGTSTP) would leave record waiting
without a word: record says once per stop, on stderr, which pid is stopped by which signal and
keeps waiting; SIGCONT sent to record is passed on to the group, and a terminating signal
forwarded to a group with a stopped member is followed by SIGCONT, since a stopped process only
acts on SIGKILL until it is continued.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from pcstream.errors import Failure, ProgramNotFound, ProgramNotRunnable, UsageError, shown
from pcstream.record import elf

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Passed on too, but not a request to stop (not in ``last_forwarded``): it resumes a stopped
# command when record is not sharing a terminal with it (there the shell's fg reaches record,
# which continues the command itself once the terminal is handed back).
PASSED_ON = (signal.SIGCONT,)
# After a forwarded signal ended the program: how long the rest of its group may take to end.
GROUP_GRACE_S = 5.0
# The signals forwarded during the last run(): record writes its trace whatever ended the program,
# but a caller running several programs (the workload suite) stops when it was told to.
last_forwarded: tuple[int, ...] = ()


def exit_status(waitstatus: int) -> int:
    """A shell's exit status from a wait status: the exit code, or 128+N for signal N."""
    code = os.waitstatus_to_exitcode(waitstatus)
    return 128 - code if code < 0 else code


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[0] != "Z" and fields[2] == str(pgid):
            members.append(int(name))
    return members


def wait_for_group(pgid: int, timeout_s: float = GROUP_GRACE_S) -> list[int]:
    """Wait until group ``pgid`` has no live process or ``timeout_s`` passed; the ones left."""
    deadline = time.monotonic() + timeout_s
    left = group_members(pgid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = group_members(pgid)
    return left


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stopped_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are stopped (state T), from /proc."""
    stopped = []
    for pid in group_members(pgid):
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if text[text.rfind(")") + 2 :].startswith("T"):
            stopped.append(pid)
    return stopped


def stop_message(pid: int, sig: int | None) -> str:
    """The line record prints when a process of the command it waits for is stopped by signal
    ``sig`` (None: one of the stop signals, which /proc does not tell for a process that is not
    record's own child)."""
    if sig is None:
        name = "a stop signal (SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU)"
    else:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
    return (
        f"pcstream: the program (pid {pid}) is stopped by {name}; waiting — send SIGCONT to pid {pid} "
        "(or to pcstream record) to resume it, SIGTERM or SIGINT to pcstream record to end it"
    )


# How often record looks for stopped processes in the command's group (without a terminal):
# the program's own stops are reported at once by waitpid, its descendants' (and the program's,
# under the BPF capture's loader) within this.
STOP_POLL_S = 1.0


class _StopWatch(threading.Thread):
    """Without a terminal: say once per stop which process of group ``pgid`` is stopped, other
    than ``pgid`` itself (record's child, whose stops waitpid reports with their signal)."""

    def __init__(self, pgid: int) -> None:
        super().__init__(name="pcstream-stopwatch", daemon=True)
        self.pgid = pgid
        self.done = threading.Event()

    def run(self) -> None:
        said: set[int] = set()
        while not self.done.wait(STOP_POLL_S):
            stopped = set(stopped_members(self.pgid)) - {self.pgid}
            for pid in sorted(stopped - said):
                print(stop_message(pid, None), file=sys.stderr, flush=True)
            said = stopped


def _foreground_terminal() -> int | None:
    """fd 0 when it is our controlling terminal and our process group is its foreground group."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _give_terminal(fd: int, pgid: int) -> None:
    """Make ``pgid`` the terminal's foreground group (SIGTTOU ignored: we may be in the background)."""
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgid)
    finally:
        signal.signal(signal.SIGTTOU, old)


@contextlib.contextmanager
def _watching_stops(pgid: int, terminal: int | None) -> Iterator[None]:
    """While inside, without ``terminal``: a :class:`_StopWatch` on group ``pgid``."""
    if terminal is not None:
        yield
        return
    watch = _StopWatch(pgid)
    watch.start()
    try:
        yield
    finally:
        watch.done.set()
        watch.join()


@contextlib.contextmanager
def _forwarding(
    target: list[int], forwarded: list[int], pending: list[int], terminal: int | None
) -> Iterator[None]:
    """While inside: FORWARDED signals (all listed in ``forwarded``) go to the group in ``target``
    once it holds a pgid, and wait in ``pending`` until then, followed by SIGCONT when a member of
    the group is stopped (it could not act on them otherwise); without ``terminal``, PASSED_ON
    signals go to the group too. The previous handlers are put back on the way out."""

    def forward(sig: int, _frame: object) -> None:
        forwarded.append(sig)
        if not target:
            pending.append(sig)
            return
        _signal_group(target[0], sig)
        if stopped_members(target[0]):
            _signal_group(target[0], signal.SIGCONT)

    def pass_on(sig: int, _frame: object) -> None:
        if target and terminal is None:
            _signal_group(target[0], sig)

    handlers = {**{sig: forward for sig in FORWARDED}, **{sig: pass_on for sig in PASSED_ON}}
    saved = {sig: signal.getsignal(sig) for sig in handlers}
    try:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _wait(pid: int, terminal: int | None) -> int:
    """Wait for ``pid``; with a terminal, mirror its job-control stops (Ctrl-Z) on ourselves;
    without one, say that it is stopped (once per stop) and keep waiting."""
    said = False
    while True:
        _pid, status = os.waitpid(pid, os.WUNTRACED | os.WCONTINUED)
        if os.WIFCONTINUED(status):
            said = False
            continue
        if not os.WIFSTOPPED(status):
            return status
        if terminal is None:
            if not said:
                print(stop_message(pid, os.WSTOPSIG(status)), file=sys.stderr, flush=True)
                said = True
            continue
        # The job was stopped at the terminal: take the terminal back, stop as the shell expects,
        # and on SIGCONT (fg or bg) resume the command, giving it the terminal again if it is ours.
        assert terminal is not None
        _give_terminal(terminal, os.getpgrp())
        os.kill(os.getpid(), signal.SIGSTOP)
        with contextlib.suppress(OSError):
            if os.tcgetpgrp(terminal) == os.getpgrp():
                _give_terminal(terminal, pid)
        _signal_group(pid, signal.SIGCONT)


def run(cmd: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> int:
    """Run ``cmd`` in a process group of its own (see the module's doc) and return its exit status:
    the exit code, or 128+N when signal N ended it. The signals forwarded are in ``last_forwarded``."""
    global last_forwarded
    last_forwarded = ()
    terminal = _foreground_terminal()
    target: list[int] = []
    forwarded: list[int] = []
    pending: list[int] = []
    with _forwarding(target, forwarded, pending, terminal):
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, process_group=0)
        try:
            target.append(proc.pid)
            if terminal is not None:
                _give_terminal(terminal, proc.pid)
                # A read from the terminal before the hand-over stopped it (SIGTTIN): resume it.
                _signal_group(proc.pid, signal.SIGCONT)
            for sig in pending:  # signals that came before the group existed
                _signal_group(proc.pid, sig)
            if stopped_members(proc.pid) and pending:
                _signal_group(proc.pid, signal.SIGCONT)
            with _watching_stops(proc.pid, terminal):
                status = _wait(proc.pid, terminal)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if forwarded:
                wait_for_group(proc.pid)
        finally:
            if terminal is not None:
                _give_terminal(terminal, os.getpgrp())
            if proc.returncode is None:  # interrupted by an exception: do not leave it running
                _signal_group(proc.pid, signal.SIGTERM)
                _signal_group(proc.pid, signal.SIGCONT)  # a stopped program acts on it only then
                proc.wait()
            last_forwarded = tuple(forwarded)
    return exit_status(status)


# --------------------------------------------------------------------------- before the run
# What every run under the shim needs first (``pcstream record``, ``record --block``,
# ``pcstream run``): the shim itself, the program, and the warnings due before it starts.


def shim_path() -> Path:
    """The built shim; a one-line error if it is missing."""
    path = Path(__file__).resolve().parents[1] / "_shim" / "pcshim.so"
    if not path.is_file():
        raise Failure(f"{path}: the record shim is not built; run 'make install' (or 'make shim')")
    return path


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


def command_paths(cmd: list[str]) -> list[tuple[str, str]]:
    """(what, path) for every existing file ``cmd`` names: its program (resolved on PATH) and
    each argument, or the value of a ``--name=value`` argument, that exists."""
    named = []
    program = shutil.which(cmd[0]) if "/" not in cmd[0] else cmd[0]
    if program and os.path.lexists(program):
        named.append(("the program recorded", program))
    for arg in cmd[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        existing = [c for c in dict.fromkeys((arg, value)) if c and os.path.lexists(c)]
        named += [("an argument of the program", c) for c in existing]
    return named


def _same_file(a: str, b: str) -> bool:
    """The same file: equal after realpath, or the same inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs_spare_command(outputs: list[Path], cmd: list[str]) -> None:
    """Before the run: a usage error when an output of the recording is the program or a file
    its command line names (``record -o in.txt -- cat in.txt``): the trace would overwrite it."""
    named = command_paths(cmd)
    for out in outputs:
        for what, path in named:
            if _same_file(str(out), path):
                raise UsageError(
                    f"{out}: is {what} ({path}); writing the trace there would overwrite it: "
                    "give another output file"
                )


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


# The first words of a recorded trace's ``pcstream.source``: :func:`pcstream.live.source_signature`
# reads the signature method back after them.
SOURCE_VERB = "pcstream record"
SOURCE_VERB_BLOCK = "pcstream record --block"


def record_source(
    cmd: list[str], method: str, frames: int, block: bool = False, bpf_only: bool = False
) -> str:
    """The ``pcstream.source`` of a recorded trace (read back by :func:`pcstream.live.source_signature`).
    ``bpf_only``: recorded by the BPF capture alone, whose signatures are not the shim's method's
    (``--via bpf`` comes first, so live hints do not take them for it)."""
    verb = SOURCE_VERB_BLOCK if block else SOURCE_VERB
    via = " --via bpf" if bpf_only else ""
    # Arguments that are not UTF-8 are written with \\xNN escapes: the footer is text.
    return f"{verb}{via} --method {method} --frames {frames} -- " + " ".join(shown(a) for a in cmd)
