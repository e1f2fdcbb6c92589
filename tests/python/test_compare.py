"""compare: trace × policy in a fixed order, parallel equals serial, failures isolated."""

from __future__ import annotations

from pathlib import Path

from pcstream import api
from support import SSD, assert_user_error, invoke


def stable(lines: list[dict]) -> list[dict]:
    return [{k: v for k, v in line.items() if k not in api.VOLATILE_FIELDS} for line in lines]


def test_two_traces_two_policies_four_lines_in_order(traces: dict[str, Path]) -> None:
    a, b = traces["uniform"], traces["hotcold"]
    args = (
        "compare",
        a,
        b,
        "--policies",
        "baseline,hotcold",
        "--ssd",
        SSD,
        "--prefill",
        "0.5",
        "--no-timing",
    )
    run = invoke(*args, "--json")
    assert run.status == 0, run.stderr
    lines = run.json_lines()
    assert len(lines) == 4
    order = [(Path(line["trace"]).name, line["policy"]) for line in lines]
    assert order == [
        ("uniform.parquet", "baseline"),
        ("uniform.parquet", "hotcold"),
        ("hotcold.parquet", "baseline"),
        ("hotcold.parquet", "hotcold"),
    ]
    assert all(line["waf"] >= 1.0 for line in lines)

    parallel = invoke(*args, "--json", "--jobs", "2")
    assert parallel.status == 0, parallel.stderr
    assert stable(parallel.json_lines()) == stable(lines)

    table = invoke(*args)
    assert table.status == 0, table.stderr
    assert "WAF/base" in table.stdout


def test_a_failing_job_is_reported_and_the_others_finish(traces: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "missing.parquet"
    run = invoke(
        "compare", traces["zipf"], missing, "--policies", "baseline", "--ssd", SSD, "--no-timing", "--json"
    )
    assert_user_error(run, 1, "missing.parquet")
    lines = run.json_lines()
    assert len(lines) == 2
    assert lines[0]["waf"] >= 1.0
    assert "error" in lines[1] and "missing.parquet" in lines[1]["error"]
    assert lines[1]["exit_status"] == 3

    table = invoke("compare", traces["zipf"], missing, "--policies", "baseline", "--ssd", SSD, "--no-timing")
    assert table.status == 1
    assert "failed" in table.stdout


def test_unknown_policy_fails_only_its_jobs(traces: dict[str, Path]) -> None:
    run = invoke(
        "compare",
        traces["zipf"],
        "--policies",
        "baseline,nosuchpolicy",
        "--ssd",
        SSD,
        "--no-timing",
        "--json",
    )
    assert_user_error(run, 1, "nosuchpolicy")
    lines = run.json_lines()
    assert "waf" in lines[0] and lines[1]["exit_status"] == 2


def test_without_traces_asks_for_them() -> None:
    run = invoke("compare")
    line = assert_user_error(run, 2)
    assert "bundled" in line and "trace" in line
