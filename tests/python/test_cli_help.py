"""Every verb answers --help (status 0, units explained); --version, policies and presets work."""

from __future__ import annotations

import pytest

from pcstream import api
from pcstream.cli import cli
from support import invoke, run_module

VERBS = sorted(cli.commands)


def test_every_documented_verb_is_there() -> None:
    assert {"gen", "info", "simulate", "compare", "demo", "bench", "presets", "policies"} <= set(VERBS)


@pytest.mark.parametrize("verb", [None, *VERBS])
def test_help_exits_zero_and_explains_units(verb: str | None) -> None:
    run = invoke(*([verb] if verb else []), "--help")
    assert run.status == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "4 KiB" in text
    assert "logical time = host pages written" in text
    assert "OP = (physical - logical) / logical" in text
    assert "microseconds" in text


def test_no_arguments_prints_help() -> None:
    run = invoke()
    assert run.status == 0
    assert "simulate" in run.stdout


def test_version_names_package_and_engine() -> None:
    run = invoke("--version")
    assert run.status == 0
    assert run.stdout.startswith("pcstream ")
    assert api.version() in run.stdout


def test_policies_lists_registry(tmp_path: object) -> None:
    names = api.policy_names()
    assert "baseline" in names
    run = invoke("policies", "--json")
    assert run.status == 0
    entries = run.json_lines()
    assert [e["name"] for e in entries] == names
    for entry in entries:
        assert isinstance(entry["sees"], list)
        assert isinstance(entry["summary"], str) and entry["summary"]
    table = invoke("policies")
    assert table.status == 0
    assert "baseline" in table.stdout


def test_presets_list_and_show() -> None:
    names = api.presets()
    assert {"paper", "small"} <= set(names)
    run = invoke("presets", "--json")
    assert run.status == 0
    summaries = run.json_lines()
    assert [s["name"] for s in summaries] == names
    for s in summaries:
        assert s["logical_pages"] < s["physical_pages"]
        assert s["op"] == pytest.approx(
            (s["physical_pages"] - s["logical_pages"]) / s["logical_pages"], abs=1e-3
        )
    shown = invoke("presets", "--show", "small")
    assert shown.status == 0
    assert "[geometry]" in shown.stdout and "[ftl]" in shown.stdout
    assert invoke("presets").status == 0


def test_module_entry_point_runs() -> None:
    run = run_module("--version")
    assert run.status == 0, run.stderr
    assert run.stdout.startswith("pcstream ")
