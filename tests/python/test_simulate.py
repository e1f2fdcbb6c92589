"""simulate: every documented result field, sane ranges, warm-up accounting, determinism."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pcstream import api
from support import SSD, invoke, run_module

NUMBERS = (int, float)


def simulate(trace: Path, *args: str) -> dict[str, Any]:
    run = invoke("simulate", trace, "--ssd", SSD, "--json", *args)
    assert run.status == 0, run.stderr
    return run.json()


@pytest.fixture(scope="module")
def written(traces: dict[str, Path]) -> dict[str, int]:
    return {name: api.info(str(path))["writes"]["pages"] for name, path in traces.items()}


def test_result_has_every_documented_field(traces: dict[str, Path], written: dict[str, int]) -> None:
    result = simulate(traces["zipf"], "--policy", "baseline", "--prefill", "0.9", "--seed", "5")
    missing = [field for field in api.RESULT_FIELDS if field not in result]
    assert not missing, f"result lacks {missing}"
    assert result["policy"] == "baseline"
    assert result["ssd"] == SSD
    assert result["seed"] == 5
    assert result["prefill"] == pytest.approx(0.9)
    assert result["warmup"] == 0
    assert str(result["trace"]).endswith("zipf.parquet")

    assert isinstance(result["waf"], NUMBERS) and result["waf"] >= 1.0
    assert result["host_pages"] == written["zipf"]
    for key in (
        "gc_pages",
        "erases",
        "trims_pages",
        "reads_pages",
        "policy_state_bytes",
        "open_write_points",
    ):
        assert isinstance(result[key], int) and result[key] >= 0, key
    assert result["waf"] == pytest.approx((result["host_pages"] + result["gc_pages"]) / result["host_pages"])
    assert 0.0 <= result["stream0_share"] <= 1.0
    assert result["iops"] > 0
    assert 0 < result["lat_p50_us"] <= result["lat_p99_us"] <= result["lat_p999_us"]
    assert result["lat_mean_us"] > 0
    for key in ("wall_s", "host_pages_per_s", "page_ops_per_s"):
        assert isinstance(result[key], NUMBERS) and result[key] >= 0, key
    assert result.get("latency_cdf") is None  # filled only when a CDF is asked for

    streams = result["per_stream"]
    assert isinstance(streams, list) and streams
    for stream in streams:
        for key in ("stream", "pages", "lifetime_p25", "p50", "p75"):
            assert key in stream, key
        assert isinstance(stream["stream"], int) and stream["stream"] >= 0
        assert isinstance(stream["pages"], int) and stream["pages"] >= 0
    assert sum(s["pages"] for s in streams) <= result["host_pages"]


def test_warmup_is_excluded_from_host_pages(traces: dict[str, Path], written: dict[str, int]) -> None:
    result = simulate(traces["uniform"], "--policy", "baseline", "--warmup", "5000", "--no-timing")
    assert result["warmup"] == 5000
    assert result["host_pages"] == written["uniform"] - 5000
    assert result["waf"] >= 1.0


def test_prefilled_uniform_trace_needs_gc(traces: dict[str, Path]) -> None:
    result = simulate(traces["uniform"], "--policy", "baseline", "--prefill", "0.9", "--no-timing")
    assert result["gc_pages"] > 0 and result["erases"] > 0
    assert result["waf"] > 1.0


def test_same_inputs_same_bytes(traces: dict[str, Path]) -> None:
    args = ("simulate", traces["hotcold"], "--policy", "hotcold", "--ssd", SSD, "--prefill", "0.8")
    first = invoke(*args, "--seed", "7", "--json")
    second = invoke(*args, "--seed", "7", "--json")
    assert first.status == second.status == 0

    def stable(text: str) -> str:
        obj = json.loads(text)
        for key in api.VOLATILE_FIELDS:
            obj.pop(key)
        return json.dumps(obj)

    assert stable(first.stdout) == stable(second.stdout)


def test_table_output_and_cdf(traces: dict[str, Path], tmp_path: Path) -> None:
    cdf = tmp_path / "cdf.csv"
    run = invoke("simulate", traces["zipf"], "--policy", "baseline", "--ssd", SSD, "--cdf", cdf)
    assert run.status == 0, run.stderr
    assert "WAF" in run.stdout and "p99" in run.stdout
    with cdf.open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["latency_us", "fraction"]
    points = [(float(us), float(frac)) for us, frac in rows[1:]]
    assert points
    assert all(a[1] <= b[1] and a[0] <= b[0] for a, b in zip(points, points[1:]))
    assert points[-1][1] == pytest.approx(1.0, abs=1e-6)


def test_cdf_without_timing_is_a_usage_error(traces: dict[str, Path], tmp_path: Path) -> None:
    from support import assert_user_error

    run = invoke(
        "simulate", traces["zipf"], "--policy", "baseline", "--no-timing", "--cdf", tmp_path / "c.csv"
    )
    assert_user_error(run, 2, "--cdf")


def test_subprocess_json_matches_in_process(traces: dict[str, Path]) -> None:
    args = ("simulate", traces["uniform"], "--policy", "baseline", "--ssd", SSD, "--no-timing", "--json")
    sub = run_module(*args)
    assert sub.status == 0, sub.stderr
    here = invoke(*args)
    a, b = sub.json(), here.json()
    for key in api.VOLATILE_FIELDS:
        a.pop(key), b.pop(key)
    assert a == b
