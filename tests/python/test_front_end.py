"""The front end's own machinery: Ctrl-C, the progress bar, parameter parsing, error mapping."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import click
import pytest

from pcstream import api, errors
from pcstream.cli import _common
from pcstream.options import SimOptions
from support import SSD, assert_user_error, invoke


def test_ctrl_c_is_one_line_and_status_130(monkeypatch: pytest.MonkeyPatch, traces: dict[str, Path]) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "simulate_json", interrupted)
    run = invoke("simulate", traces["zipf"], "--policy", "baseline", "--ssd", SSD)
    assert_user_error(run, _common.EXIT_INTERRUPTED, "interrupted")


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTty()
    monkeypatch.setattr(sys, "stderr", fake)
    with _common.progress_bar("simulate") as update:
        assert update is not None
        update(0, 0)
        update(1_000_000, 3_000_000)
        update(3_000_000, 3_000_000)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", fake.getvalue())  # without the terminal's escapes
    assert "simulate" in shown and "100%" in shown, shown
    assert "3,000,000/3,000,000 rows" in shown, shown


def test_progress_bar_is_silent_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with _common.progress_bar("simulate") as update:
        assert update is None
    assert pipe.getvalue() == ""


def test_simulate_feeds_the_progress_callback(
    monkeypatch: pytest.MonkeyPatch, traces: dict[str, Path]
) -> None:
    """The engine reports every 2^20 rows and once at the end: the last call is (rows, rows)."""
    calls: list[tuple[int, int]] = []
    trace = str(traces["uniform"])
    result = api.simulate(
        trace, "baseline", SimOptions(ssd=SSD, timing=False), progress=lambda d, t: calls.append((d, t))
    )
    assert result["host_pages"] > 0
    assert calls, "the progress callback was never called"
    rows = api.info(trace)["rows"]
    assert calls[-1] == (rows, rows)
    assert all(0 <= done <= total == rows for done, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_parse_params() -> None:
    assert _common.parse_params(()) is None
    assert _common.parse_params(("a=1", "b = x=y")) == {"a": "1", "b": "x=y"}
    with pytest.raises(click.UsageError):
        _common.parse_params(("a",))


def test_classify_leaves_bugs_alone() -> None:
    assert _common.classify(ZeroDivisionError()) is None
    assert _common.classify(_common.CliError("x: bad", 3)) == ("x: bad", 3)
    assert _common.classify(FileNotFoundError(2, "No such file or directory", "f.parquet")) == (
        "f.parquet: no such file or directory; check the path and its permissions",
        _common.EXIT_INPUT,
    )
    assert errors.one_line("a\nb\n") == "a; b"
