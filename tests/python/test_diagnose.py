"""The little-GC warning: a run whose GC copied under 2 % of the host pages says so, with why, in
simulate, in the compare table, and nowhere when GC mattered."""

from __future__ import annotations

from pathlib import Path

from pcstream import diagnose
from support import SSD, invoke


def test_the_note_reads_the_baseline_run_of_each_trace() -> None:
    busy = {"trace": "/t/busy.parquet", "policy": "baseline", "host_pages": 1000, "gc_pages": 300}
    quiet = {"trace": "/t/quiet.parquet", "policy": "baseline", "host_pages": 1000, "gc_pages": 19}
    other = {"trace": "/t/quiet.parquet", "policy": "hotcold", "host_pages": 1000, "gc_pages": 50}
    assert diagnose.little_gc(quiet) and not diagnose.little_gc(busy)
    assert diagnose.little_gc({"host_pages": 0, "gc_pages": 0}) is False
    note = diagnose.little_gc_note([busy, quiet, other])
    assert note is not None and "quiet.parquet" in note and "busy.parquet" not in note
    assert "not aged" in note and "trimmed" in note
    assert diagnose.little_gc_note([busy]) is None


def test_simulate_and_compare_warn_when_gc_had_little_to_do(traces: dict[str, Path]) -> None:
    # Without prefill the first device-fill of a trace copies almost nothing.
    run = invoke("simulate", traces["uniform"], "--policy", "baseline", "--ssd", SSD, "--no-timing")
    assert run.status == 0 and "warning: GC copied" in run.stderr and "not aged" in run.stderr
    run = invoke(
        "compare", traces["uniform"], "--policies", "baseline", "--ssd", SSD, "--prefill", "0", "--no-timing"
    )
    assert run.status == 0 and "fewer than 2%" in run.stdout and "uniform.parquet" in run.stdout


def test_no_warning_when_gc_matters(traces: dict[str, Path]) -> None:
    args = ("--policy", "baseline", "--ssd", SSD, "--prefill", "0.9", "--no-timing")
    run = invoke("simulate", traces["uniform"], *args)
    assert run.status == 0 and "warning" not in run.stderr, run.stderr
    run = invoke("compare", traces["uniform"], "--policies", "baseline", "--ssd", SSD, "--no-timing")
    assert run.status == 0 and "fewer than" not in run.stdout
