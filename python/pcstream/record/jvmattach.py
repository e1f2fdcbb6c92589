"""Java call paths for ``record --pid`` of a running JVM (docs/RECORD.md, "Java programs").

A JVM that runs already cannot be given JFR options: ``jcmd PID JFR.start`` starts a recording of
``jdk.FileWrite`` and ``jdk.FileForce`` with stack traces and no threshold (the settings of
:func:`pcstream.record.jvm.settings_text`) while the BPF capture is attached, and ``JFR.stop``
writes it at the end; :meth:`pcstream.record.jvm.JavaRun.attribute` then joins its events to the
capture's records of that process, as for a JVM started by ``record``. jcmd runs as the JVM's
user (the attach mechanism accepts only its own user), and the recording goes to a directory
that user owns, outside the capture's logs. The JVM's stack depth is the one it was started with
(64 frames unless set): the innermost ``--frames`` are kept. A JVM with no recording of its own
gets its JFR repository moved into that directory too, so JFR's chunk files are not recorded as
the program's writes; otherwise JFR's writes to its repository stay in the trace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcstream.record import jvm

# The name of our recording in the JVM (JFR.stop takes it).
RECORDING_NAME = "pcstream-record"
# jcmd attaches to the JVM and starts JFR in about a second here; a JVM that does not answer
# within this is left alone.
JCMD_TIMEOUT_S = 60


def is_jvm_process(pid: int) -> bool:
    """Process ``pid`` has libjvm mapped (any launcher, or a program embedding a JVM)."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
            return any("/libjvm.so" in line for line in f)
    except OSError:
        return False


def _ids(pid: int) -> tuple[int, int]:
    """The process's effective uid and gid."""
    uid = gid = -1
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("Uid:"):
                uid = int(line.split()[2])
            elif line.startswith("Gid:"):
                gid = int(line.split()[2])
    return uid, gid


def _tool(pid: int, name: str) -> str | None:
    """``name`` (jcmd, java) of the JDK the process runs, else the one on PATH."""
    try:
        mine = Path(os.readlink(f"/proc/{pid}/exe")).parent / name
    except OSError:
        mine = None
    if mine is not None and os.access(mine, os.X_OK):
        return str(mine)
    return shutil.which(name)


@dataclass
class AttachedJfr:
    """A recording started in JVM ``pid`` (``run.jfr_dir`` holds it)."""

    pid: int
    run: jvm.JavaRun
    jcmd: list[str]  # the command prefix: jcmd, run as the JVM's user

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.jcmd, str(self.pid), *args], capture_output=True, text=True, timeout=JCMD_TIMEOUT_S
        )

    def stop(self) -> str | None:
        """Stop the recording, which writes it; a warning when that failed (the JVM ended: its
        writes keep their native signatures)."""
        try:
            done = self.command("JFR.stop", f"name={RECORDING_NAME}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"JVM {self.pid}: jcmd JFR.stop failed ({exc}); its writes keep native signatures"
        if done.returncode != 0:
            why = (done.stdout + done.stderr).strip().splitlines()
            return f"JVM {self.pid}: jcmd JFR.stop failed ({why[-1] if why else done.returncode})"
        return None

    def attribute(self, logdir: Path) -> dict[str, Any]:
        """Join the recording to the capture's logs of this process (see the module's doc)."""
        try:
            return self.run.attribute(logdir)
        finally:
            shutil.rmtree(self.run.jfr_dir or "", ignore_errors=True)


def start(pid: int, frames: int) -> AttachedJfr | str:
    """Start our recording in JVM ``pid``: the handle, or a warning saying why not."""
    jcmd, java = _tool(pid, "jcmd"), _tool(pid, "java")
    if jcmd is None or java is None:
        return f"JVM {pid}: no jcmd/java found (a JDK's) to start JFR with; its writes keep native signatures"
    uid, gid = _ids(pid)
    prefix = [jcmd]
    if uid != os.geteuid():
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return f"JVM {pid}: runs as uid {uid}; setpriv (util-linux) is needed to run jcmd as its user"
        prefix = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", jcmd]
    jfr_dir = Path(tempfile.mkdtemp(prefix="pcstream-jfr-"))
    (jfr_dir / jvm.SETTINGS_FILE).write_text(jvm.settings_text())
    for p in (jfr_dir, jfr_dir / jvm.SETTINGS_FILE):
        os.chown(p, uid, gid)
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = "/"
    run = jvm.JavaRun([], None, jfr_dir, frames, java, jvm.clock_offset_ns(), cwd, pids=frozenset({pid}))
    handle = AttachedJfr(pid, run, prefix)
    try:
        check = handle.command("JFR.check")
        if check.returncode == 0 and "No available recordings" in check.stdout:
            handle.command("JFR.configure", f"repositorypath={jfr_dir / jvm.REPOSITORY_DIR}")
        started = handle.command(
            "JFR.start",
            f"name={RECORDING_NAME}",
            f"settings={jfr_dir / jvm.SETTINGS_FILE}",
            f"filename={jfr_dir / jvm.RECORDING_FILE}",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(jfr_dir, ignore_errors=True)
        return f"JVM {pid}: jcmd failed ({exc}); its writes keep native signatures"
    if started.returncode != 0 or "Started recording" not in started.stdout:
        shutil.rmtree(jfr_dir, ignore_errors=True)
        why = (started.stdout + started.stderr).strip().splitlines()
        last = why[-1] if why else started.returncode
        return f"JVM {pid}: jcmd JFR.start failed ({last}); its writes keep native signatures"
    return handle
