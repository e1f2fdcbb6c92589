"""compare --ray on a real cluster whose workers cannot see the driver's files: a head with no CPUs
and worker nodes in a private mount namespace where the trace directory is an empty tmpfs. The
traces travel through Ray's object store; results equal a local --jobs 1 run; losing the worker
node midway (its process group killed) and another joining, the sweep completes with every run
once. Needs root (unshare -m); skipped otherwise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import raycluster
from pcstream import api
from support import SSD, run_module

POLICIES = "baseline,pcstream"

pytestmark = pytest.mark.skipif(raycluster.missing() is not None, reason=str(raycluster.missing()))


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace directory the worker nodes do not see."""
    return tmp_path_factory.mktemp("hidden")


@pytest.fixture(scope="module")
def cluster(hidden: Path) -> Iterator[raycluster.Cluster]:
    cluster = raycluster.Cluster(hidden)
    try:
        cluster.start_head()
        cluster.first = cluster.start_worker("worker1", "127.0.0.2")  # type: ignore[attr-defined]
        raycluster.wait_for(lambda: cluster.alive_nodes() == 2, 180, "the head and a worker node")
        yield cluster
    finally:
        cluster.stop()


def make_traces(directory: Path, count: int, writes: int, capacity: int) -> list[Path]:
    paths = []
    for index in range(count):
        path = directory / f"zipf{index}-{writes}.parquet"
        params = {"capacity_pages": str(capacity), "writes": str(writes), "seed": str(index + 1)}
        api.gen("zipf", str(path), {**params, "theta": "0.99"})
        paths.append(path)
    return paths


def stable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in api.VOLATILE_FIELDS}


def keyed(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(row["trace"], row["policy"]): stable(row) for row in rows}


def local_run(traces: list[Path], results: Path, ssd: str = SSD) -> tuple[list[dict], list[str]]:
    local = run_module("compare", *traces, "--policies", POLICIES, "--ssd", ssd, "--jobs", "1", "--json",
                       "--results", results)  # fmt: skip
    return local.json_lines(), errors(local.stderr)


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("pcstream: error: ")]


def compare_env(cluster: raycluster.Cluster) -> dict[str, str]:
    return {**os.environ, **raycluster.ENV, "NO_COLOR": "1"}


def test_traces_travel_to_workers_that_cannot_see_them(
    cluster: raycluster.Cluster, hidden: Path, small: dict, tmp_path: Path
) -> None:
    traces = make_traces(hidden, 3, 20_000, small["logical_pages"])
    # Too big for the SSD: its runs fail on the worker, each once, not retried.
    bad = make_traces(hidden, 1, 5_000, 4 * small["logical_pages"])[0]
    ssd = hidden / "small.toml"  # an SSD config file travels too
    ssd.write_text(api.preset_toml(SSD))
    argv = [sys.executable, "-m", "pcstream", "compare", *map(str, [*traces, bad]), "--policies", POLICIES]
    argv += ["--ssd", str(ssd), "--json", "--results", str(tmp_path / "ray"), f"--ray={cluster.address}"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=compare_env(cluster), timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:] + cluster.log("worker1")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == 8 and sum("waf" in row for row in rows) == 6
    expected, expected_errors = local_run([*traces, bad], tmp_path / "local", str(ssd))
    assert [stable(r) for r in rows] == [stable(r) for r in expected]
    assert errors(proc.stderr) == expected_errors and len(expected_errors) == 1
    assert str(bad) in expected_errors[0] and "pcstream-run-" not in proc.stderr
    written = (tmp_path / "ray" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in written] == rows


def test_a_lost_node_is_replaced_and_every_run_appears_once(
    cluster: raycluster.Cluster, hidden: Path, small: dict, tmp_path: Path
) -> None:
    traces = make_traces(hidden, 4, 600_000, small["logical_pages"])
    results = tmp_path / "ray"
    argv = [sys.executable, "-m", "pcstream", "compare", *map(str, traces), "--policies", POLICIES]
    argv += ["--ssd", SSD, "--json", "--results", str(results), f"--ray={cluster.address}"]
    out = open(tmp_path / "stdout", "w+")
    err = open(tmp_path / "stderr", "w+")
    sweep = subprocess.Popen(argv, stdout=out, stderr=err, env=compare_env(cluster), start_new_session=True)
    try:
        log = results / "results.jsonl"
        raycluster.wait_for(lambda: log.exists() and log.read_text().count("\n") >= 1, 240, "a first result")
        cluster.kill(cluster.first)  # type: ignore[attr-defined]
        at_loss = log.read_text().count("\n")
        assert at_loss < 8, "the sweep finished before its node was lost; nothing was tested"
        time.sleep(2)
        cluster.second = cluster.start_worker("worker2", "127.0.0.3")  # type: ignore[attr-defined]
        status = sweep.wait(timeout=400)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, 9)
            sweep.wait()
    err.seek(0)
    out.seek(0)
    assert status == 0, err.read()[-3000:] + cluster.log("worker2")
    rows = [json.loads(line) for line in out.read().splitlines()]
    assert sorted((r["trace"], r["policy"]) for r in rows) == sorted(
        (str(t), p) for t in traces for p in POLICIES.split(",")
    )
    written = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    assert written == rows
    assert keyed(rows) == keyed(local_run(traces, tmp_path / "local")[0])


def test_without_workers_the_sweep_says_so_and_ctrl_c_stops_it(
    cluster: raycluster.Cluster, hidden: Path, small: dict, tmp_path: Path
) -> None:
    for node in (getattr(cluster, "first", None), getattr(cluster, "second", None)):
        if node is not None:
            cluster.kill(node)
    traces = make_traces(hidden, 1, 5_000, small["logical_pages"])
    argv = [sys.executable, "-m", "pcstream", "compare", str(traces[0]), "--policies", POLICIES, "--ssd", SSD]
    argv += ["--results", str(tmp_path / "out"), f"--ray={cluster.address}"]
    err = open(tmp_path / "stderr", "w+")
    sweep = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=compare_env(cluster))
    try:
        raycluster.wait_for(lambda: "no CPU left" in Path(err.name).read_text(), 120, "the note")
        sweep.send_signal(signal.SIGINT)
        status = sweep.wait(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    text = Path(err.name).read_text()
    assert status == 130 and "Traceback" not in text, text
    assert "2 runs wait for a worker node to join" in text
