"""compare: trace × SSD × policy in a fixed order, parallel equals serial, failures isolated, result
files, the bundled suite."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pcstream import api
from pcstream.compare import sweep
from pcstream.report.results import SCHEMA
from pcstream.workloads.recipes import SUITE_SSD
from support import SSD, assert_user_error, invoke, run_module


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
    run = invoke(*args, "--json", "--jobs", "1")
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
    assert all(line["prefill"] == 0.5 for line in lines)

    parallel = invoke(*args, "--json", "--jobs", "2")
    assert parallel.status == 0, parallel.stderr
    assert stable(parallel.json_lines()) == stable(lines)

    table = invoke(*args)
    assert table.status == 0, table.stderr
    assert "WAF/base" in table.stdout


def test_prefill_defaults_to_0_9_for_compare_only(traces: dict[str, Path]) -> None:
    run = invoke("compare", traces["zipf"], "--policies", "baseline", "--ssd", SSD, "--no-timing", "--json")
    assert run.status == 0, run.stderr
    assert run.json()["prefill"] == 0.9
    single = invoke("simulate", traces["zipf"], "--policy", "baseline", "--ssd", SSD, "--no-timing", "--json")
    assert single.json()["prefill"] == 0.0


def second_ssd(tmp_path: Path) -> Path:
    """The 'small' geometry with another GC victim policy: same logical capacity, other results."""
    text = api.preset_toml(SSD)
    assert 'gc_victim = "greedy"' in text
    path = tmp_path / "small-fifo.toml"
    path.write_text(text.replace('gc_victim = "greedy"', 'gc_victim = "fifo"'))
    return path


def test_several_ssds_loop_trace_then_ssd_then_policy(traces: dict[str, Path], tmp_path: Path) -> None:
    other = second_ssd(tmp_path)
    args = ("compare", traces["uniform"], traces["zipf"], "--policies", "baseline,hotcold")
    args += ("--ssd", SSD, "--ssd", other, "--no-timing")
    run = invoke(*args, "--json")
    assert run.status == 0, run.stderr
    order = [(Path(r["trace"]).stem, Path(r["ssd"]).stem, r["policy"]) for r in run.json_lines()]
    assert order == [
        (trace, ssd, policy)
        for trace in ("uniform", "zipf")
        for ssd in ("small", "small-fifo")
        for policy in ("baseline", "hotcold")
    ]
    table = invoke(*args)
    assert table.status == 0, table.stderr
    # the title above the table wraps when the temporary directory's path is long
    header = next(line for line in table.stdout.splitlines() if "policy" in line and "┃" in line)
    assert "ssd" in header and "small-fifo.toml" in table.stdout


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


def test_bad_inputs_among_good_jobs_each_failure_once(traces: dict[str, Path], tmp_path: Path) -> None:
    """A missing trace and an unknown policy in one sweep: 4 good runs finish, 2 distinct failures."""
    missing = tmp_path / "gone.parquet"
    run = invoke(
        "compare",
        traces["uniform"],
        missing,
        traces["zipf"],
        "--policies",
        "baseline,nosuchpolicy,hotcold",
        "--ssd",
        SSD,
        "--no-timing",
        "--json",
    )
    assert run.status == 1
    lines = run.json_lines()
    assert len(lines) == 9
    good = [line for line in lines if "waf" in line]
    assert [(Path(r["trace"]).stem, r["policy"]) for r in good] == [
        ("uniform", "baseline"),
        ("uniform", "hotcold"),
        ("zipf", "baseline"),
        ("zipf", "hotcold"),
    ]
    errors = run.stderr.splitlines()
    assert len(errors) == 2, run.stderr
    assert all(line.startswith("pcstream: error: ") for line in errors)
    # In job order: uniform × nosuchpolicy fails first, then every job of the missing trace.
    assert "nosuchpolicy" in errors[0] and "known policies" in errors[0]
    assert "gone.parquet" in errors[1] and "no such file" in errors[1]
    statuses = [line.get("exit_status") for line in lines if "error" in line]
    assert statuses == [2, 3, 3, 3, 2]


def test_results_dir_holds_json_lines_and_a_parquet_table(traces: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "results"
    run = invoke(
        "compare",
        traces["uniform"],
        traces["hotcold"],
        "--policies",
        "baseline,hotcold,nosuchpolicy",
        "--ssd",
        SSD,
        "--json",
        "--results",
        out,
    )
    assert run.status == 1
    written = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert written == run.json_lines()
    assert f"results: {out / 'results.jsonl'}, {out / 'results.parquet'}" in run.stderr

    table = pq.read_table(out / "results.parquet")
    assert table.schema.equals(SCHEMA)
    rows = table.to_pylist()
    assert [(Path(r["trace"]).stem, r["policy"], r["ok"]) for r in rows] == [
        ("uniform", "baseline", True),
        ("uniform", "hotcold", True),
        ("uniform", "nosuchpolicy", False),
        ("hotcold", "baseline", True),
        ("hotcold", "hotcold", True),
        ("hotcold", "nosuchpolicy", False),
    ]
    assert len(written) == len(rows)
    for row, line in zip(rows, written):
        if row["ok"]:
            assert row["waf"] == line["waf"] and row["erases"] == line["erases"]
            assert row["iops"] == line["iops"] and row["iops"] > 0
            assert [s["stream"] for s in row["per_stream"]] == [s["stream"] for s in line["per_stream"]]
            assert row["error"] is None and row["exit_status"] == 0
        else:
            assert row["waf"] is None and row["per_stream"] == []
            assert row["error"] == line["error"] and row["exit_status"] == 2
    assert rows[0]["waf_norm"] == 1.0 and rows[0]["iops_norm"] == 1.0
    assert rows[1]["waf_norm"] == pytest.approx(rows[1]["waf"] / rows[0]["waf"])
    assert rows[4]["iops_norm"] == pytest.approx(rows[4]["iops"] / rows[3]["iops"])


def test_without_traces_runs_the_bundled_suite(
    monkeypatch: pytest.MonkeyPatch, traces: dict[str, Path], tmp_path: Path
) -> None:
    suite = tmp_path / "traces"
    monkeypatch.setattr(sweep, "SUITE_DIR", suite)
    run = invoke("compare")
    line = assert_user_error(run, 2)
    assert "bundled" in line and str(suite) in line and "pcstream gen" in line

    suite.mkdir()
    (suite / "notes.txt").write_text("not a trace")
    assert "bundled" in assert_user_error(invoke("compare"), 2)

    shutil.copy(traces["zipf"], suite / "b.parquet")
    shutil.copy(traces["uniform"], suite / "a.parquet")
    run = invoke("compare", "--policies", "baseline", "--ssd", SSD, "--no-timing", "--json")
    assert run.status == 0, run.stderr
    assert [Path(r["trace"]).name for r in run.json_lines()] == ["a.parquet", "b.parquet"]
    # Without --ssd the bundled traces run on the SSD they were made for.
    run = invoke("compare", suite / "a.parquet", "--policies", "baseline", "--no-timing", "--json")
    assert [r["ssd"] for r in run.json_lines()] == ["paper"], "given traces: the default preset"
    run = invoke("compare", "--policies", "baseline", "--no-timing", "--json")
    assert [r["ssd"] for r in run.json_lines()] == [SUITE_SSD, SUITE_SSD]


def test_ray_without_address_must_not_swallow_a_trace(traces: dict[str, Path]) -> None:
    run = invoke("compare", "--ray", traces["zipf"], "--policies", "baseline", "--ssd", SSD)
    line = assert_user_error(run, 2, "--ray", "zipf.parquet")
    assert "--ray=ADDRESS" in line


def test_ray_not_installed_is_one_line(monkeypatch: pytest.MonkeyPatch, traces: dict[str, Path]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes 'import ray' raise ImportError
    run = invoke("compare", traces["zipf"], "--policies", "baseline", "--ssd", SSD, "--ray")
    assert "pip install ray" in assert_user_error(run, 2, "--ray")


def test_report_without_matplotlib_fails_before_the_sweep(
    monkeypatch: pytest.MonkeyPatch, traces: dict[str, Path], tmp_path: Path
) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else find_spec(name, *a)
    )

    def no_runs(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the sweep ran although the report could not be written")

    monkeypatch.setattr(sweep, "run", no_runs)
    run = invoke("compare", traces["zipf"], "--ssd", SSD, "--report", tmp_path / "r")
    assert "pip install matplotlib" in assert_user_error(run, 2, "--report", "matplotlib")


def test_ray_address_that_takes_no_connection_is_one_line(traces: dict[str, Path]) -> None:
    run = invoke("compare", traces["zipf"], "--policies", "baseline", "--ssd", SSD, "--ray=127.0.0.1:1")
    line = assert_user_error(run, 2, "--ray 127.0.0.1:1", "cannot connect")
    assert "ray start --head" in line


def test_resume_runs_only_what_results_jsonl_lacks(traces: dict[str, Path], tmp_path: Path) -> None:
    args = (
        "compare",
        traces["uniform"],
        traces["zipf"],
        "--policies",
        "baseline,hotcold,pcstream",
        "--ssd",
        SSD,
    )
    full = invoke(*args, "--json", "--results", tmp_path / "full")
    assert full.status == 0, full.stderr
    rows = full.json_lines()
    assert len(rows) == 6 and all(len(row["run_key"]) == 64 for row in rows)
    assert len({row["run_key"] for row in rows}) == 6
    # A sweep cut short: two finished rows, the third torn mid-line.
    cut = tmp_path / "cut"
    cut.mkdir()
    lines = (tmp_path / "full" / "results.jsonl").read_text().splitlines()
    (cut / "results.jsonl").write_text(lines[0] + "\n" + lines[3] + "\n" + lines[1][:40])
    resumed = invoke(*args, "--json", "--resume", cut)
    assert resumed.status == 0, resumed.stderr
    assert "resume: 2 of 6 runs already in" in resumed.stderr
    assert stable(resumed.json_lines()) == stable(rows)
    written = [json.loads(line) for line in (cut / "results.jsonl").read_text().splitlines()]
    assert written == resumed.json_lines()
    assert (cut / "results.parquet").exists()
    # Everything there: nothing runs; another seed is another run.
    again = invoke(*args, "--json", "--resume", cut)
    assert "resume: 6 of 6" in again.stderr and again.json_lines() == resumed.json_lines()
    other = invoke(*args, "--json", "--resume", cut, "--seed", "7")
    assert "resume:" not in other.stderr and other.status == 0


def test_ctrl_c_keeps_the_finished_rows_and_resume_completes(
    traces: dict[str, Path], small: dict, tmp_path: Path
) -> None:
    big = [tmp_path / f"big{i}.parquet" for i in range(3)]
    for i, path in enumerate(big):
        params = {"capacity_pages": str(small["logical_pages"]), "writes": "400000", "seed": str(i + 1)}
        api.gen("uniform", str(path), params)
    args = [*big, "--policies", "baseline,pcstream", "--ssd", SSD, "--jobs", "1", "--json"]
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "pcstream", "compare", *map(str, args), "--results", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (log.exists() and log.read_text().count("\n") >= 1):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in stderr, stderr
    kept = log.read_text().splitlines()
    assert 1 <= len(kept) < 6, "the sweep finished before Ctrl-C; nothing was tested"
    assert all(json.loads(line)["run_key"] for line in kept)
    resumed = run_module("compare", *args, "--resume", out)
    assert resumed.status == 0, resumed.stderr
    assert f"resume: {len(kept)} of 6 runs" in resumed.stderr
    assert [(r["trace"], r["policy"]) for r in resumed.json_lines()] == [
        (str(t), p) for t in big for p in ("baseline", "pcstream")
    ]
