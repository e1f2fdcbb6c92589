"""The README's usage examples run as written; the demo finishes and writes its results."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from pcstream import api
from pcstream.cli import demo
from pcstream.compare import sweep
from support import README_PATH, run_module


def usage_commands() -> list[list[str]]:
    text = README_PATH.read_text()
    block = text.split("## Usage", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "pcstream", line
            commands.append(words[1:])
    return commands


def test_readme_usage_examples_run(tmp_path: Path) -> None:
    commands = usage_commands()
    verbs = {words[0] for words in commands}
    assert {"gen", "info", "simulate", "compare", "bench"} <= verbs
    for words in commands:
        run = run_module(*words, cwd=tmp_path)
        assert run.status == 0, f"pcstream {shlex.join(words)} failed: {run.stderr}"


def test_readme_states_the_small_capacity() -> None:
    logical = api.ssd_summary("small")["logical_pages"]
    assert f"--capacity-pages {logical} " in README_PATH.read_text()


def test_demo_quick_on_the_bundled_suite(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    run = run_module("demo", "--quick", "--out", out, "--jobs", "2")
    assert run.status == 0, run.stderr
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    policies = api.policy_names()
    bundled = sweep.bundled_traces(demo.QUICK_TRACES)
    assert len(bundled) == demo.QUICK_TRACES, "the bundled suite is part of the source tree"
    assert len(results) == len(bundled) * len(policies)
    assert [r["policy"] for r in results[: len(policies)]] == policies
    assert {r["trace"] for r in results} == set(bundled)
    assert {r["ssd"] for r in results} == {"paper"}
    assert all(r["waf"] >= 1.0 for r in results)
    # The bundled traces carry their aged state: no prefill on top of it.
    assert all(r["aged_pages"] > 0 and r["prefill"] == 0 for r in results)
    # The answer first: one WAF / baseline table per discard mode among the traces.
    modes = {"nodiscard" if ".nodiscard." in t else "discard" for t in bundled}
    text = " ".join(run.stdout.split())
    assert all(f"WAF / baseline · ssd paper · {m}" in text for m in modes)
    assert str(out / "results.jsonl") in text
    assert (out / "index.html").is_file()


def test_demo_generated_quick(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    run = run_module("demo", "--generated", "--quick", "--out", out, "--jobs", "2", "--no-timing")
    assert run.status == 0, run.stderr
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 5 * len(api.policy_names())
    assert {r["ssd"] for r in results} == {"small"}
    assert all(r["waf"] >= 1.0 for r in results)
