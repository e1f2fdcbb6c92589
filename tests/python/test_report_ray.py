"""compare --ray: the same jobs as Ray tasks on a local Ray instance give the same results as local
worker processes (wall-clock fields aside), failures included, and the same report data."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pcstream import api
from support import SSD, run_module


def stable(lines: list[dict]) -> list[dict]:
    return [{k: v for k, v in line.items() if k not in api.VOLATILE_FIELDS} for line in lines]


def test_ray_results_equal_the_local_executor(traces: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "missing.parquet"
    sweep = (
        "compare",
        traces["uniform"],
        missing,
        traces["hotcold"],
        "--policies",
        "baseline,pcstream,nosuchpolicy",
        "--ssd",
        SSD,
        "--jobs",
        "2",
        "--json",
    )
    local = run_module(*sweep, "--results", tmp_path / "local")
    ray = run_module(*sweep, "--results", tmp_path / "ray", "--ray")
    assert local.status == ray.status == 1, ray.stderr[-3000:]

    local_lines, ray_lines = local.json_lines(), ray.json_lines()
    assert len(ray_lines) == 9
    assert sum("waf" in line for line in ray_lines) == 4
    assert stable(ray_lines) == stable(local_lines)

    def errors(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if line.startswith("pcstream: error: ")]

    assert errors(ray.stderr) == errors(local.stderr)
    assert len(errors(ray.stderr)) == 2

    tables = [pq.read_table(tmp_path / name / "results.parquet").to_pylist() for name in ("local", "ray")]
    volatile = api.VOLATILE_FIELDS
    assert [{k: v for k, v in row.items() if k not in volatile} for row in tables[1]] == [
        {k: v for k, v in row.items() if k not in volatile} for row in tables[0]
    ]
    written = [json.loads(line) for line in (tmp_path / "ray" / "results.jsonl").read_text().splitlines()]
    assert written == ray_lines
