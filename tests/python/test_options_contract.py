"""The options contract: the click options of ``simulate``, ``map`` and ``record`` are exactly
the fields of their options objects (:mod:`pcstream.options`), spelled, defaulted and explained as
the fields' specs say, plus the options listed below that only the command line has; and the CLI
names a parameter the library refuses, or a library message names, by its option. Each check has
a test proving it can fail.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import click
import pytest

from pcstream import errors, options
from pcstream.cli import _common
from pcstream.cli import map as map_verb
from pcstream.cli import record as record_verb
from pcstream.cli import simulate as simulate_verb
from pcstream.groundtruth import loopdev
from pcstream.options import MapOptions, RecordOptions, SimOptions
from pcstream.workloads import bundle

# Options of a verb that are no field of its options object, each with why.
CLI_ONLY: dict[str, dict[str, str]] = {
    "simulate": {
        "policy": "what is simulated, not how: an argument of api.simulate of its own",
        "cdf": "a file for the latency CDF; the command sets the field cdf_points from it",
        "as_json": "how the result is printed",
    },
    "map": {
        "out": "the block trace to write: an argument of api.map_trace of its own",
        "as_json": "how the summary is printed",
    },
    "record": {
        "output": "the trace (or directory) to write: an argument of the recording of its own",
        "as_json": "how the capture summary is printed",
        "pids": "what is recorded (running processes instead of a command): attach.record_pids's argument",
        "duration": "how long running processes are recorded: attach.record_pids's argument",
    },
}

# Fields no option sets, each with why.
LIBRARY_ONLY: dict[str, dict[str, str]] = {
    "simulate": {"cdf_points": "follows from --cdf (the points of the CDF written to its file)"},
    "map": {},
    "record": {},
}

VERBS: dict[str, tuple[click.Command, type]] = {
    "simulate": (simulate_verb.command, SimOptions),
    "map": (map_verb.command, MapOptions),
    "record": (record_verb.command, RecordOptions),
}


def mismatches(
    command: click.Command, cls: type, cli_only: dict[str, str], library_only: dict[str, str]
) -> list[str]:
    """What breaks the contract between ``command``'s options and the fields of ``cls``."""
    found = []
    fields = {f.name: (f, spec) for f, spec in options.fields_of(cls)}
    opts = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for name in sorted(set(opts) - set(fields) - set(cli_only)):
        found.append(f"option {name} of {command.name} is no field of {cls.__name__} and not CLI-only")
    for name in sorted(set(cli_only) & set(fields)):
        found.append(f"{name} is listed as CLI-only but is a field of {cls.__name__}")
    for name, (f, spec) in sorted(fields.items()):
        if spec.cli != (name not in library_only):
            found.append(f"field {name} of {cls.__name__}: its spec's cli={spec.cli} disagrees with the list")
        elif name in library_only:
            if name in opts:
                found.append(f"field {name} of {cls.__name__} is library-only but has an option")
        elif name not in opts:
            found.append(f"field {name} of {cls.__name__} has no option in {command.name}")
        else:
            found += _option_problems(opts[name], f, spec)
    return found


def _option_problems(opt: click.Option, f: dataclasses.Field[Any], spec: options.Spec) -> list[str]:
    """An option built from a field: its spelling, help and default are the spec's and the field's."""
    found = []
    if options.flag_of(f.name, spec) not in opt.opts:
        found.append(f"option {opt.name} is spelled {opt.opts}, not {options.flag_of(f.name, spec)}")
    if spec.negative is not None and spec.negative not in opt.secondary_opts:
        found.append(f"option {opt.name} has no {spec.negative}")
    if opt.help != spec.help:
        found.append(f"option {opt.name}: its help is not the spec's")
    default = spec.cli_default if f.default is dataclasses.MISSING else f.default
    if not opt.multiple and opt.default != default:
        found.append(f"option {opt.name}: default {opt.default!r}, the field's is {default!r}")
    return found


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_options_of_a_verb_are_its_options_object(verb: str) -> None:
    command, cls = VERBS[verb]
    assert mismatches(command, cls, CLI_ONLY[verb], LIBRARY_ONLY[verb]) == []


def test_the_check_fails_on_an_option_that_is_no_field() -> None:
    command = click.Command(
        "simulate",
        params=[*simulate_verb.command.params, click.Option(["--frobnicate"], is_flag=True)],
    )
    found = mismatches(command, SimOptions, CLI_ONLY["simulate"], LIBRARY_ONLY["simulate"])
    assert found == ["option frobnicate of simulate is no field of SimOptions and not CLI-only"]


def test_the_check_fails_on_a_field_without_an_option() -> None:
    extra = options.option(options.Spec(help="A field no option sets."), 0)
    cls = dataclasses.make_dataclass("SimOptions", [("frobs", int, extra)], bases=(SimOptions,), frozen=True)
    found = mismatches(simulate_verb.command, cls, CLI_ONLY["simulate"], LIBRARY_ONLY["simulate"])
    assert found == ["field frobs of SimOptions has no option in simulate"]


def test_the_check_fails_on_an_option_that_differs_from_its_field() -> None:
    params = [
        click.Option(["--seed", "seed"], default=7, help=p.help) if p.name == "seed" else p
        for p in simulate_verb.command.params
    ]
    found = mismatches(
        click.Command("simulate", params=params), SimOptions, CLI_ONLY["simulate"], LIBRARY_ONLY["simulate"]
    )
    assert found == ["option seed: default 7, the field's is 0"]


def test_the_cli_names_a_refused_parameter_by_its_option() -> None:
    """The library names the parameter; the CLI spells it as the option that sets it."""
    refused = errors.BadParameter("method", "walk", "{param} {value}: unknown; use one of auto, fp")
    assert str(refused) == "method walk: unknown; use one of auto, fp"
    assert _common.classify(refused) == ("--method walk: unknown; use one of auto, fp", _common.EXIT_USAGE)
    assert _common.spelling("symbol_dirs") == "--symbols"
    assert _common.spelling("params") == "--param"
    assert _common.spelling("age_seed") == "--age-seed"


def test_every_kind_of_domain_error_has_an_exit_status() -> None:
    assert set(_common.STATUS) == set(errors.Kind)


def test_the_cli_spells_the_parameters_a_library_message_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A library message names parameters; the CLI shows them as options, in every path that
    reports it (one error line, a failed recipe of the suite)."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(errors.NotRoot) as root:
        loopdev.check_environment()
    assert str(root.value).startswith("record block needs root (")
    assert _common.classify(root.value) == (
        "record --block needs root (it makes a loop device, mounts it and reads tracefs); "
        "run it as root, or record without --block",
        _common.EXIT_NOT_ROOT,
    )
    missing = tmp_path / "w.file.parquet"
    with pytest.raises(errors.Failure) as kept:
        bundle.recorded({"traces": {}}, "w", missing)
    shown = f"{missing}: no file-level trace; record with --keep-file-traces first"
    assert _common.classify(kept.value) == (shown, _common.EXIT_FAILURE)
    assert bundle.failure(kept.value, _common.spelling) == (shown, errors.Kind.FAILURE)
    assert bundle.failure(kept.value) == (str(kept.value), errors.Kind.FAILURE)
    assert "keep_file_traces" in str(kept.value)
