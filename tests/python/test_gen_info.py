"""gen writes what it says; info reads back the same counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pcstream import api
from support import invoke, run_module


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        ("uniform", []),
        ("zipf", ["--theta", "0.99"]),
        ("pareto", ["--alpha", "1.2"]),
        ("normal", ["--sigma", "0.1"]),
        ("hotcold", ["--hot-fraction", "0.1", "--hot-ratio", "0.9"]),
        ("seq", []),
        ("mix", ["--mix", "rocksdb-like"]),
        ("lsm", ["--levels", "3", "--ratio", "4", "--sst-pages", "64"]),
    ],
)
def test_gen_then_info_round_trip(tmp_path: Path, small: dict[str, Any], kind: str, extra: list[str]) -> None:
    out = tmp_path / f"{kind}.parquet"
    capacity = small["logical_pages"]
    made = invoke(
        "gen",
        kind,
        "-o",
        out,
        "--capacity-pages",
        capacity,
        "--writes",
        "5000",
        "--seed",
        "3",
        "--json",
        *extra,
    )
    assert made.status == 0, made.stderr
    summary = made.json()
    assert out.exists()
    assert summary["rows"] > 0

    info = invoke("info", out, "--json")
    assert info.status == 0, info.stderr
    facts = info.json()
    assert facts["rows"] == summary["rows"]
    for op in ("writes", "trims", "reads"):
        assert facts[op] == summary[op], op  # {requests, pages}: what gen wrote is what info reads
    requests = sum(facts[op]["requests"] for op in ("writes", "trims", "reads"))
    assert facts["rows"] == requests + facts["flushes"]
    assert facts["capacity_pages"] == capacity
    assert facts["page_bytes"] == 4096
    assert facts["writes"]["requests"] <= facts["rows"]
    assert 0 < facts["unique_lpns_written"] <= capacity
    if kind not in ("mix", "lsm"):
        assert facts["writes"]["requests"] == 5000
        assert facts["writes"]["pages"] == api.written_pages(summary)


def test_gen_options_reach_the_generator(tmp_path: Path, small: dict[str, Any]) -> None:
    out = tmp_path / "reads.parquet"
    made = invoke(
        "gen", "uniform", "-o", out, "--capacity-pages", small["logical_pages"], "--writes", "4000",
        "--req-pages", "4", "--read-ratio", "0.5", "--footprint", "0.5", "--json",
    )  # fmt: skip
    assert made.status == 0, made.stderr
    facts = invoke("info", out, "--json").json()
    assert facts["writes"]["pages"] == 4 * facts["writes"]["requests"]
    assert facts["reads"]["requests"] > 0
    assert facts["unique_lpns_written"] <= small["logical_pages"] // 2 + 4


def test_gen_is_deterministic(tmp_path: Path, small: dict[str, Any]) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for out in (a, b):
        assert invoke("gen", "zipf", "-o", out, "--capacity-pages", "4096", "--writes", "3000").status == 0
    assert invoke("info", a, "--json").json()["writes"] == invoke("info", b, "--json").json()["writes"]


def test_mix_spec_from_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    from support import assert_user_error

    run = invoke("gen", "mix", "-o", tmp_path / "m.parquet", "--mix", str(tmp_path / "spec.json"))
    assert_user_error(run, 3, "spec.json")


def test_info_table_and_subprocess(traces: dict[str, Path]) -> None:
    table = invoke("info", traces["uniform"])
    assert table.status == 0, table.stderr
    assert "rows" in table.stdout
    run = run_module("info", traces["uniform"], "--json")
    assert run.status == 0, run.stderr
    assert run.json()["rows"] == invoke("info", traces["uniform"], "--json").json()["rows"]


def test_gen_lsm_flags_reach_the_generator(tmp_path: Path, small: dict[str, Any]) -> None:
    """Every lsm flag changes the trace; the same flags and seed give the same one; --writes counts pages."""
    base = ["--capacity-pages", small["logical_pages"], "--writes", "60000", "--seed", "1", "--json"]
    flags = ["--levels", "3", "--ratio", "4", "--skew", "0.99", "--build-share", "0.3", "--sst-pages", "128"]

    def gen(name: str, *extra: object) -> dict[str, Any]:
        made = invoke("gen", "lsm", "-o", tmp_path / f"{name}.parquet", *base, *extra)
        assert made.status == 0, made.stderr
        summary = made.json()
        return {key: summary[key] for key in ("rows", "writes", "trims", "files")}

    first = gen("a", *flags)
    assert first["writes"]["pages"] == 60000
    assert gen("b", *flags) == first
    assert (
        invoke("info", tmp_path / "a.parquet", "--json").json()["writes"]
        == (invoke("info", tmp_path / "b.parquet", "--json").json()["writes"])
    )
    changed = {"--levels": "4", "--ratio": "10", "--skew": "0", "--build-share": "0", "--sst-pages": "64"}
    for i in range(0, len(flags), 2):
        other = list(flags)
        other[i + 1] = changed[flags[i]]
        assert gen(f"c{i}", *other) != first, flags[i]


def test_gen_lsm_too_small_a_device_is_a_one_line_error(tmp_path: Path) -> None:
    from support import assert_user_error

    run = invoke("gen", "lsm", "-o", tmp_path / "l.parquet", "--capacity-pages", "3000", "--writes", "100")
    assert_user_error(run, 2, "too small")


def test_gen_lsm_sst_alloc_moves_files_not_writes(tmp_path: Path, small: dict[str, Any]) -> None:
    """--sst-alloc changes where the SSTs go, not what is written; an unknown value is a usage error."""
    import pyarrow.parquet as pq

    from support import assert_user_error

    base = ["--capacity-pages", small["logical_pages"], "--writes", "60000", "--levels", "3", "--ratio", "4"]
    traces = {}
    for alloc in ("next", "lowest"):
        out = tmp_path / f"{alloc}.parquet"
        made = invoke("gen", "lsm", "-o", out, *base, "--sst-alloc", alloc, "--json")
        assert made.status == 0, made.stderr
        traces[alloc] = (made.json()["writes"], pq.read_table(out, columns=["pc", "pages", "lpn"]))
    (w_next, t_next), (w_low, t_low) = traces["next"], traces["lowest"]
    assert w_next == w_low
    assert t_next.column("pc").equals(t_low.column("pc"))
    assert t_next.column("pages").equals(t_low.column("pages"))
    assert not t_next.column("lpn").equals(t_low.column("lpn"))
    bad = invoke("gen", "lsm", "-o", tmp_path / "bad.parquet", *base, "--sst-alloc", "first")
    assert_user_error(bad, 2, "--sst-alloc")
