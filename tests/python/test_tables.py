"""Persistent PC tables learned on a second recording (python/pcstream/workloads/tables.py) and
their rows in docs/RESULTS.md (python/pcstream/report/suite_results.py: learned_tables)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pcstream import api
from pcstream.report import suite_results
from pcstream.workloads import tables, ycsb_cassandra
from support import SSD


def lsm(path: Path, small: dict[str, Any], seed: int) -> Path:
    """An LSM-like trace whose writers are PCs (flush, compactions per level, log)."""
    params = {"capacity_pages": str(small["logical_pages"]), "writes": "60000", "seed": str(seed)}
    api.gen("lsm", str(path), params)
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, small: dict[str, Any]) -> tuple[Path, Path]:
    """The bundled trace of a workload and a second run of it (another seed: same PCs, other writes)."""
    d = tmp_path_factory.mktemp("runs")
    (d / "second").mkdir()
    return lsm(d / "w.parquet", small, 1), lsm(d / "second" / "w.parquet", small, 2)


def test_a_table_learned_on_a_second_run_places_the_first_writes(two_runs: tuple[Path, Path]) -> None:
    bundled, second = two_runs
    out = tables.table_for(second, bundled.parent / tables.TABLES_DIR)
    assert out == bundled.parent / "tables" / "w.json"
    learned = tables.learn(second, out, SSD)
    table = json.loads(out.read_text())
    assert table["policy"] == tables.POLICY and learned["waf"] >= 1.0
    assert not [p for p in out.parent.iterdir() if p != out], "nothing but the table is left"
    before = out.read_bytes()
    cold = api.simulate(str(bundled), tables.POLICY, tables.sim_options(bundled, SSD, None))
    warm = tables.with_table(bundled, out, SSD)
    assert out.read_bytes() == before, "the kept table is not written over"
    # From an empty table every PC's first writes go to stream 0 until its lifetimes are known;
    # the learned table places them from the start.
    assert suite_results.stream0(warm) < suite_results.stream0(cold), (
        suite_results.stream0(warm),
        suite_results.stream0(cold),
    )
    # the same inputs give the same result
    assert tables.with_table(bundled, out, SSD)["waf"] == warm["waf"]


def test_results_name_the_gc_bound_workloads_with_a_learned_table(two_runs: tuple[Path, Path]) -> None:
    bundled, second = two_runs
    tables.learn(second, tables.table_for(second, bundled.parent / tables.TABLES_DIR), SSD)
    rows = [
        {"trace": str(bundled), "ssd": SSD, "policy": "baseline", "waf": 1.5},
        {"trace": str(bundled), "ssd": SSD, "policy": "pcstream", "waf": 1.4},
        # GC-bound, but no table learned for it
        {"trace": str(bundled.parent / "x.parquet"), "ssd": SSD, "policy": "baseline", "waf": 2.0},
        # not GC-bound: left out
        {"trace": str(bundled.parent / "y.parquet"), "ssd": SSD, "policy": "baseline", "waf": 1.1},
    ]
    cells, lines = suite_results.learned_tables(suite_results.group(rows), bundled.parent, SSD)
    (line,) = lines
    assert line.startswith("discard: w ") and "→" in line and "x no table learned" in line, line
    assert "y " not in line
    assert cells["discard"].endswith("(better on 1 of 1)") or cells["discard"].endswith("(better on 0 of 1)")


def test_zipf_keys_are_skewed_scattered_and_deterministic() -> None:
    import numpy as np

    keys = ycsb_cassandra.zipf_keys(10_000, 50_000, np.random.default_rng(7))
    again = ycsb_cassandra.zipf_keys(10_000, 50_000, np.random.default_rng(7))
    assert (keys == again).all() and keys.min() >= 0 and keys.max() < 10_000
    counts = np.bincount(keys, minlength=10_000)
    top = np.sort(counts)[::-1]
    # θ = 0.99 over 10,000 keys: the hottest key takes about 1 / H(10,000, 0.99) ≈ 10 % of the draws,
    # the hottest 1 % of keys about half
    assert 0.07 < top[0] / keys.size < 0.13, top[0] / keys.size
    assert 0.4 < top[:100].sum() / keys.size < 0.65
    # the hot keys are scattered over the key space, not the first ones
    assert np.argmax(counts) != 0 and (counts[:100] > 0).sum() < 100
