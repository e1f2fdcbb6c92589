"""Helpers for the Python tests: run the CLI (in-process or as a subprocess) and check its output.

Everything is sized for the 'small' SSD preset and a few 10 k writes so the suite stays fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pcstream.cli import cli

SSD = "small"
WRITES = 20_000
ROOT = Path(__file__).resolve().parents[2]
README_PATH = ROOT / "README.md"


@dataclass
class Run:
    """What a command did: exit status, stdout, stderr (from CliRunner or a subprocess)."""

    status: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def json(self) -> dict[str, Any]:
        lines = self.json_lines()
        assert len(lines) == 1, f"expected one JSON line, got {len(lines)}: {self.stdout!r}"
        return lines[0]


def invoke(*args: str | os.PathLike[str]) -> Run:
    """Run the CLI in-process (click's CliRunner); a Python exception escaping it fails the test."""
    # COLUMNS unset, whatever runs the tests sets: tables take the pipe width of
    # python/pcstream/cli/_common.py.
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=True, env={"COLUMNS": None})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def run_module(*args: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Run:
    """Run ``python -m pcstream ARGS`` in a subprocess."""
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def assert_user_error(run: Run, status: int, *names: str) -> str:
    """A user error: the documented status, one stderr line `pcstream: error: ...` naming ``names``."""
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr
    assert run.status == status, f"exit {run.status}, expected {status}; stderr: {run.stderr!r}"
    lines = run.stderr.splitlines()
    assert len(lines) == 1, f"stderr must be exactly one line, got {len(lines)}: {run.stderr!r}"
    line = lines[0]
    assert line.startswith("pcstream: error: "), line
    for name in names:
        assert name in line, f"{name!r} not named in {line!r}"
    return line
