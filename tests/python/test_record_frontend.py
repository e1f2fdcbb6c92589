"""pcstream record's front end: coalescing by default (--no-coalesce keeps one row per call), the
summary's counters and warning lines, SIGTERM/SIGINT sent to record (forwarded to the program's
process group, the trace still written), the terminal handed to the program (it reads from it,
Ctrl-C reaches it), and the warning for statically linked programs."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from pcstream.record import elf, runner, shimrun
from support import ROOT

SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
CC = shutil.which("cc") or shutil.which("gcc")
needs_shim = pytest.mark.skipif(
    not SHIM_SO.is_file() or not sys.platform.startswith("linux"),
    reason="needs the record shim (make install)",
)
RECORD = [sys.executable, "-m", "pcstream", "record"]


def writes(trace: Path) -> list[tuple[str, int, int]]:
    """(file name, offset, len) of the trace's write rows."""
    paths = tracemeta.paths(tracemeta.footer(trace))
    rows = pq.read_table(trace).to_pylist()
    return [
        (Path(paths[r["path"]]).name, r["offset"], r["len"]) for r in rows if r["op"] == "write" and r["path"]
    ]


SMALL_WRITES = (
    "import os\nfd = os.open('a.dat', os.O_WRONLY | os.O_CREAT, 0o644)\n"
    "for _ in range(50): os.write(fd, b'x' * 10)\n"
)


@needs_shim
@pytest.mark.parametrize(("opts", "rows"), [((), 2), (("--coalesce",), 2), (("--no-coalesce",), 50)])
def test_coalescing_is_the_default(tmp_path: Path, opts: tuple[str, ...], rows: int) -> None:
    trace = tmp_path / "t.parquet"
    proc = subprocess.run(
        [*RECORD, *opts, "--no-symbols", "-o", str(trace), "--", sys.executable, "-c", SMALL_WRITES],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = [w for w in writes(trace) if w[0] == "a.dat"]
    assert len(got) == rows and sum(w[2] for w in got) == 500
    if rows == 2:
        # The interpreter's call path changes once it has specialised the loop (after 7 writes
        # here): a change of PC starts a row, so the run folds into one row per PC.
        assert [w[1] for w in got] == [0, got[1][1]] and got[0][2] == got[1][1] < 500
    if rows == 50:
        assert [w[1] for w in got] == list(range(0, 500, 10))


def test_summary_prints_the_counters_that_are_not_zero_and_one_line_per_warning() -> None:
    base: dict[str, Any] = {
        "records": 9,
        "writes": 7,
        "write_bytes": 700,
        "processes": 2,
        "signatures": 3,
        "paths": 4,
    }
    plain = shimrun.summary_line(Path("t.parquet"), base)
    assert plain == (
        "pcstream record: 9 records (7 writes, 700 bytes) from 2 processes, 3 signatures, 4 files "
        "-> t.parquet"
    )
    full = shimrun.summary_line(
        Path("t.parquet"),
        {**base, "symbolized": 5, "debug_files": 1,
         "recovered_bytes": 4096, "inline_stdio_bytes": 12, "unplaced_bytes": 5, "hint_events": 0,
         "warnings": ["a static program", "2 process(es) used io_uring"], "lost_processes": [41]},
    )  # fmt: skip
    lines = full.splitlines()
    assert lines[0].startswith(plain.replace(" signatures,", " signatures (5 frames named, 1 module(s) from "
                                             "separate debug files),"))  # fmt: skip
    for needle in (
        "4096 bytes recovered by the safety net",
        "12 bytes written through stdio macros (accounted at flush)",
        "5 bytes it could not place",
    ):
        assert needle in lines[0]
    assert "hint" not in lines[0], "zero counters are not printed"
    assert lines[1:] == [
        "pcstream record: warning: a static program",
        "pcstream record: warning: 2 process(es) used io_uring",
        "pcstream record: warning: records lost: process(es) 41 ended without flushing "
        "(killed, or a file-size limit or a full disk cut its log short); "
        "how many is not known (no end line)",
    ]
    counted = shimrun.summary_line(Path("t.parquet"), {**base, "lost_processes": [41, 42],
                                                       "lost_records": 1910, "torn_bytes": 64})  # fmt: skip
    assert counted.splitlines()[1].endswith(
        "; lost at least: 1910 records their end lines count but their logs miss, "
        "64 bytes of records and lines cut short"
    )


def _alive_with(arg: str) -> list[int]:
    """Processes whose command line holds ``arg``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if arg.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path} was never written"


@needs_shim
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_record_ends_the_program_and_keeps_its_writes(tmp_path: Path, sig: int) -> None:
    """A shell writes, then waits for a child (sleep); the signal goes to record alone. Record
    forwards it to the program's group (shell and sleep end), converts, and exits 128+N. (bash:
    dash resets SIGTERM to its default action at start, so the shim cannot flush its records.)"""
    nap = f"{41 + sig}.25"  # an argument no other process has
    script = f"printf one > a.dat; sleep {nap}; printf two > b.dat"
    trace = tmp_path / "t.parquet"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*RECORD, "--no-symbols", "-o", str(trace), "--", "bash", "-c", script],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    _wait_for(tmp_path / "a.dat")
    time.sleep(0.3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert time.monotonic() - t0 < 30, "the program was not ended"
    assert not _alive_with(nap), "the shell's child outlived the signal"
    assert ("a.dat", 0, 3) in writes(trace), err
    assert not (tmp_path / "b.dat").exists() and all(w[0] != "b.dat" for w in writes(trace))
    assert "records lost" not in err and err.splitlines()[0].startswith("pcstream record: ")


def test_the_runner_returns_the_status_and_forwards_signals_that_came_first(tmp_path: Path) -> None:
    assert runner.run([sys.executable, "-c", "raise SystemExit(7)"]) == 7
    assert runner.run(["sh", "-c", "kill -TERM $$"]) == 128 + signal.SIGTERM
    # the command's group is its own: its pgid is its pid
    out = tmp_path / "ids"
    runner.run(["sh", "-c", f"ps -o pid=,pgid= -p $$ > {out}"])
    pid, pgid = out.read_text().split()
    assert pid == pgid and int(pgid) != os.getpgrp()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can drop privileges; the warning is for root")
def test_a_shim_other_users_cannot_reach_is_warned_about() -> None:
    # A program that drops root privileges loses a preload it cannot read, and ld.so says nothing.
    # (Under /tmp, which everyone can search: pytest's own tmp_path is private to root.)
    with tempfile.TemporaryDirectory() as top:
        base = Path(top)
        base.chmod(0o755)
        home = base / "private"
        home.mkdir()
        shim = home / "pcshim.so"
        shim.write_bytes(b"")
        shim.chmod(0o644)
        home.chmod(0o700)
        warning = runner.private_shim_warning(shim)
        assert warning is not None and f"{home} is not searchable by other users" in warning
        assert f"chmod o+x {home}" in warning
        home.chmod(0o755)
        shim.chmod(0o600)
        warning = runner.private_shim_warning(shim)
        assert warning is not None and f"{shim} is not readable by other users" in warning
        shim.chmod(0o644)
        assert runner.private_shim_warning(shim) is None


def test_the_runner_says_which_signals_it_forwarded() -> None:
    # A SIGTERM to us while the command runs goes to the command, and run() says so afterwards
    # (the workload suite stops on it); a command that kills itself forwarded nothing.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        assert runner.run(["sleep", "20"]) == 128 + signal.SIGTERM
    finally:
        timer.cancel()
    assert runner.last_forwarded == (signal.SIGTERM,)
    assert runner.run(["sh", "-c", "kill -TERM $$"]) == 128 + signal.SIGTERM
    assert runner.last_forwarded == ()


class Terminal:
    """``argv`` as the session leader of a new pseudo-terminal (its controlling terminal, in the
    foreground): wait for output, type keys, wait for the end."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # the child: exec, or end here
            try:
                os.chdir(cwd)
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        self.shown = b""
        self.status: int | None = None

    def _pump(self, until: float) -> None:
        while time.monotonic() < until and self.status is None:
            if select.select([self.master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):
                    self.shown += os.read(self.master, 4096)
            done, st = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
            if done and not os.WIFSTOPPED(st):
                self.status = os.waitstatus_to_exitcode(st)

    def expect(self, text: str, times: int = 1, timeout: float = 30) -> None:
        until = time.monotonic() + timeout
        while self.shown.decode(errors="replace").count(text) < times and time.monotonic() < until:
            self._pump(time.monotonic() + 0.1)
        assert self.shown.decode(errors="replace").count(text) >= times, self.shown

    def type(self, keys: bytes) -> None:
        time.sleep(0.3)
        os.write(self.master, keys)

    def wait(self, timeout: float = 60) -> int:
        self._pump(time.monotonic() + timeout)
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            pytest.fail(f"timed out; the terminal showed {self.shown!r}")
        os.close(self.master)
        return self.status


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@needs_shim
def test_the_program_gets_the_terminal_ctrl_z_and_ctrl_c(tmp_path: Path) -> None:
    """Under a terminal the program's group gets the terminal: it reads a line (without the
    hand-over it would stop on SIGTTIN); Ctrl-Z stops record too (as a shell's job) until SIGCONT;
    Ctrl-C ends the program and record still writes the trace."""
    trace = tmp_path / "t.parquet"
    script = 'echo ready; read line; cat <<<"$line" > got.dat; echo ready; sleep 45.5; printf x > late.dat'
    term = Terminal([*RECORD, "--no-symbols", "-o", str(trace), "--", "bash", "-c", script], tmp_path)
    term.expect("ready")
    term.type(b"\x1a")  # Ctrl-Z
    deadline = time.monotonic() + 10
    while _state(term.pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(term.pid) == "T", "record stops with its job"
    os.kill(term.pid, signal.SIGCONT)
    term.type(b"hello\n")
    term.expect("ready", 2)
    term.type(b"\x03")  # Ctrl-C
    code = term.wait()
    assert (tmp_path / "got.dat").read_text() == "hello\n", term.shown
    assert code == 128 + signal.SIGINT, term.shown
    assert ("got.dat", 0, 6) in writes(trace) and not (tmp_path / "late.dat").exists()
    assert not _alive_with("45.5")


# --------------------------------------------------------------------------- static programs


def _static_libc() -> bool:
    if CC is None:
        return False
    found = subprocess.run([CC, "-print-file-name=libc.a"], capture_output=True, text=True).stdout.strip()
    return os.path.isabs(found) and os.path.isfile(found)


STATIC_C = (
    '#include <stdio.h>\nint main(void){FILE *f = fopen("s.dat", "w"); fputs("static\\n", f); '
    "return fclose(f);}\n"
)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not _static_libc():
        pytest.skip(
            "no static C library (libc.a, Debian's libc6-dev) or no C compiler: cannot build cc -static"
        )
    out = tmp_path_factory.mktemp("static")
    (out / "w.c").write_text(STATIC_C)
    built = {}
    for name, flags in (("static", ["-static"]), ("dynamic", [])):
        subprocess.run([str(CC), "-O1", *flags, "-o", str(out / name), str(out / "w.c")], check=True)
        built[name] = out / name
    script = out / "via-env"
    script.write_text(f"#!/usr/bin/env {built['static']}\n")
    built["script"] = script
    return built


def test_static_executables_are_recognised(programs: dict[str, Path], tmp_path: Path) -> None:
    assert elf.is_static(programs["static"]) is True
    assert elf.is_static(programs["dynamic"]) is False
    assert elf.is_static(sys.executable) is False
    assert elf.is_static(programs["script"]) is None and elf.is_static(tmp_path / "missing") is None
    assert elf.script_interpreter(programs["script"]) == str(programs["static"])
    assert runner.static_warning(str(programs["dynamic"])) is None
    assert "is statically linked" in (runner.static_warning(str(programs["static"])) or "")
    assert "interpreter" in (runner.static_warning(str(programs["script"])) or "")


@needs_shim
def test_a_static_program_is_run_with_a_warning(programs: dict[str, Path], tmp_path: Path) -> None:
    """The shim alone (as root, --via auto records it with BPF: test_record_bpf.py)."""
    trace = tmp_path / "t.parquet"
    proc = subprocess.run(
        [*RECORD, "--via", "shim", "-o", str(trace), "--", str(programs["static"])],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "s.dat").read_text() == "static\n", "the program ran"
    first = proc.stderr.splitlines()[0]
    assert first.startswith("pcstream record: warning: ") and "statically linked" in first
    assert "LD_PRELOAD does not apply" in first
    assert writes(trace) == [], "its writes cannot be recorded"
    dynamic = subprocess.run(
        [*RECORD, "-o", str(trace), "--", str(programs["dynamic"])],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dynamic.returncode == 0 and "statically linked" not in dynamic.stderr
    assert ("s.dat", 0, 7) in writes(trace)


def test_stale_log_directories_of_dead_recordings_are_swept(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid now names no process
    stale = tmp_path / f"{shimrun.LOGDIR_PREFIX}stale"
    live = tmp_path / f"{shimrun.LOGDIR_PREFIX}live"
    foreign = tmp_path / f"{shimrun.LOGDIR_PREFIX}foreign"
    for d, owner in ((stale, dead.pid), (live, os.getpid()), (foreign, None)):
        d.mkdir()
        (d / "1.1.bin").write_bytes(b"x" * 100)
        if owner is not None:
            (d / shimrun.OWNER_FILE).write_text(f"{owner}\n")
    hints = tmp_path / f"{stale.name}.hints"
    hints.write_text("")
    assert shimrun.sweep_stale_logdirs(tmp_path) == [stale]
    assert not stale.exists() and not hints.exists()
    assert live.is_dir() and foreign.is_dir()  # a running recording's, and one not ours to judge


@needs_shim
def test_a_recording_killed_with_sigkill_leaves_nothing_after_the_next_one(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    rec = subprocess.Popen(
        [*RECORD, "-o", str(tmp_path / "a.parquet"), "--", "sleep", "30"], env=env, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(f"{shimrun.LOGDIR_PREFIX}*/{shimrun.OWNER_FILE}")):
        assert time.monotonic() < deadline, "the recording made no log directory"
        time.sleep(0.05)
    os.killpg(rec.pid, signal.SIGKILL)  # no chance to clean up
    rec.wait()
    assert list(tmp_path.glob(f"{shimrun.LOGDIR_PREFIX}*"))
    done = subprocess.run(
        [*RECORD, "-o", str(tmp_path / "b.parquet"), "--", "true"], env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob(f"{shimrun.LOGDIR_PREFIX}*"))
