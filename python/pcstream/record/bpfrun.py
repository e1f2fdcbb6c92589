"""The BPF capture of ``pcstream record --via bpf|auto``: the loader ``pcsys-capture`` (built by
``make install`` from ``bpf/pcsys*.c``) runs the command and writes the file system calls of its
processes as the shim's logs (``shim/include/pcsys.h``), beside the shim's own logs when both run
(``auto``: the shim, plus BPF for the programs it cannot enter). docs/RECORD.md, "BPF capture".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pcstream.errors import UsageError
from pcstream.record import runner

# The loader; this environment variable names another one (a build elsewhere, or a path that does
# not exist to run record as on a machine without it).
CAPTURE_ENV = "PCSTREAM_PCSYS_CAPTURE"
BTF = Path("/sys/kernel/btf/vmlinux")
# The loader's summary in the log directory, written when the command ran.
SUMMARY_FILE = "pcsys.json"
# The loader's exit status when it could not load or attach the program (bpf/pcsys.c).
EXIT_CANNOT_ATTACH = 3

# The values of pcstream.capture.
CAPTURE_SHIM = "shim"
CAPTURE_BPF = "bpf"
CAPTURE_BOTH = "shim+bpf"


def capture_path() -> Path:
    """Where the loader is (it may be missing)."""
    named = os.environ.get(CAPTURE_ENV)
    if named:
        return Path(named)
    return Path(__file__).resolve().parents[1] / "_bpf" / "pcsys-capture"


def missing() -> tuple[str, bool] | None:
    """Why the BPF capture cannot run here, and whether the reason is privileges (None: it can)."""
    if os.geteuid() != 0:
        return "the BPF capture needs root (CAP_BPF and CAP_PERFMON)", True
    path = capture_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        return f"the BPF capture {path} is not built ('make install' builds it with clang and libbpf)", False
    if not os.access(BTF, os.R_OK):
        return f"the kernel has no BTF ({BTF})", False
    return None


def require() -> None:
    """For ``--via bpf``: a one-line usage error (status 2, before CMD runs) when the capture cannot
    run here: the option asks for what this machine or user cannot give."""
    why = missing()
    if why is None:
        return
    raise UsageError(f"record --via bpf: {why[0]}; --via shim records without it")


def auto_warning(why: str) -> str:
    """The one warning of ``--via auto`` without the BPF capture."""
    return (
        f"{why}: recorded with the shim alone, which does not see statically linked or set-user-id "
        "programs, nor system calls made without the C library (Go)"
    )


def run_capture(
    cmd: list[str], logdir: Path, frames: int, *, shim: Path | None, env: dict[str, str]
) -> tuple[int, dict | None]:
    """Run ``cmd`` under the loader with logs to ``logdir`` (as :func:`runner.run` runs a job):
    (exit status, the loader's summary). ``shim``: also preload the shim into ``cmd`` and record
    with BPF only the programs it cannot enter. A summary of None means the command did not run:
    the loader could not attach (the status is then the loader's)."""
    argv = [str(capture_path()), "-o", str(logdir.resolve()), "--frames", str(frames)]
    if shim is not None:
        argv += ["--auto", "--preload", str(shim)]
    status = runner.run([*argv, "--", *cmd], env)
    summary_path = logdir / SUMMARY_FILE
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError):
        return status, None
    summary_path.unlink(missing_ok=True)
    return status, summary
