"""The front door stays in sync: README's two commands, .ci/run, the Makefile targets."""

from __future__ import annotations

import os
import re

from support import ROOT

README = (ROOT / "README.md").read_text()
CI = ROOT / ".ci" / "run"


def readme_commands() -> list[str]:
    """Commands in the README's set-up block (lines starting with 'make')."""
    block = README.split("## Set-up", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_gives_exactly_the_two_setup_commands() -> None:
    assert readme_commands() == ["make demo", "make test"]
    assert "make demo   # installs everything and runs the main job" in README
    assert "make test   # installs everything and runs every test" in README


def test_ci_runs_exactly_the_readme_test_command() -> None:
    assert os.access(CI, os.X_OK), ".ci/run must be executable"
    lines = [line for line in CI.read_text().splitlines() if line.strip()]
    assert lines == ["#!/usr/bin/env bash", "set -euo pipefail", 'cd "$(dirname "$0")/.."', "make test"]
    assert lines[-1] == readme_commands()[1]


def test_makefile_has_the_documented_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z-]+):.*?## ", makefile, re.M))
    assert {"help", "install", "demo", "test", "bench", "fmt", "lint", "clean"} <= targets


def test_readme_points_at_the_docs() -> None:
    for doc in ("docs/FTL.md", "docs/PERFORMANCE.md", "docs/ARCHITECTURE.md"):
        assert doc in README


def test_every_python_module_imports() -> None:
    """Every module under python/pcstream imports cleanly (no stale or broken files)."""
    import importlib

    package = ROOT / "python" / "pcstream"
    names = [
        ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted(package.rglob("*.py"))
        if path.name != "__main__.py"
    ]
    assert {"pcstream", "pcstream.api", "pcstream.cli", "pcstream.cli.simulate"} <= set(names), names
    for name in names:
        importlib.import_module(name)
