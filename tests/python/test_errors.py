"""User errors: the documented exit status, exactly one stderr line naming the culprit, no traceback.

Statuses (pcstream.cli._common): 2 usage, 3 input file, 4 SSD config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.cli import _common
from pcstream.units import PAGE_BYTES
from support import SSD, assert_user_error, invoke, run_module

USAGE, INPUT, CONFIG = 2, 3, 4


def write_trace(path: Path, lpn: pa.Array, capacity_pages: int | None = None) -> Path:
    """A block trace with the given lpn column (any type) and well-formed other columns."""
    n = len(lpn)
    table = pa.table(
        {
            "ts_ns": pa.array(range(n), pa.uint64()),
            "op": pa.array([0] * n, pa.uint8()),
            "lpn": lpn,
            "pages": pa.array([1] * n, pa.uint32()),
        }
    )
    metadata = {
        tracemeta.KEY_FORMAT: "1",
        tracemeta.KEY_PAGE_BYTES: str(PAGE_BYTES),
        tracemeta.KEY_SOURCE: "test",
    }
    if capacity_pages is not None:
        metadata[tracemeta.KEY_CAPACITY] = str(capacity_pages)
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path


def simulate(trace: Path | str, *args: str) -> Any:
    return invoke("simulate", trace, "--policy", "baseline", "--ssd", SSD, "--no-timing", *args)


# --------------------------------------------------------------------------- bad traces


def test_missing_trace(tmp_path: Path) -> None:
    missing = tmp_path / "x.parquet"
    line = assert_user_error(simulate(missing), INPUT, "x.parquet")
    assert line == f"pcstream: error: {missing}: no such file; check the path"
    assert_user_error(invoke("info", missing), INPUT, "x.parquet")


def test_missing_trace_in_a_real_process(tmp_path: Path) -> None:
    run = run_module("simulate", tmp_path / "x.parquet", "--policy", "baseline")
    assert_user_error(run, INPUT, "x.parquet")


def test_directory_instead_of_trace(tmp_path: Path) -> None:
    assert_user_error(simulate(tmp_path), INPUT, str(tmp_path))


def test_file_that_is_not_parquet(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.parquet"
    bogus.write_text("this is not a parquet file\n")
    assert_user_error(simulate(bogus), INPUT, "notes.parquet")
    assert_user_error(invoke("info", bogus), INPUT, "notes.parquet")


def test_truncated_parquet(tmp_path: Path, traces: dict[str, Path]) -> None:
    data = traces["uniform"].read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    assert_user_error(simulate(cut), INPUT, "cut.parquet")
    run = run_module("info", cut)
    assert_user_error(run, INPUT, "cut.parquet")


@pytest.mark.parametrize(
    ("name", "lpn"),
    [
        ("float.parquet", pa.array([0.0, 1.0, 2.0], pa.float64())),
        ("string.parquet", pa.array(["0", "1", "2"], pa.string())),
    ],
)
def test_lpn_column_of_the_wrong_type(tmp_path: Path, name: str, lpn: pa.Array) -> None:
    path = write_trace(tmp_path / name, lpn, capacity_pages=1000)
    line = assert_user_error(simulate(path), INPUT, name)
    assert "lpn" in line


def test_lpn_beyond_capacity(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "beyond.parquet", pa.array([1, 2, 5000], pa.uint64()), capacity_pages=1000)
    line = assert_user_error(simulate(path), INPUT, "beyond.parquet")
    assert "5000" in line and "1000" in line


def test_trace_larger_than_the_ssd(tmp_path: Path, small: dict[str, Any]) -> None:
    too_big = small["logical_pages"] * 2
    path = write_trace(tmp_path / "big.parquet", pa.array([0, 1], pa.uint64()), capacity_pages=too_big)
    run = simulate(path)
    assert run.status in (INPUT, CONFIG)
    line = assert_user_error(run, run.status, "big.parquet")
    assert str(too_big) in line.replace(",", "")


# --------------------------------------------------------------------------- bad names and parameters


def test_unknown_policy(traces: dict[str, Path]) -> None:
    run = invoke("simulate", traces["zipf"], "--policy", "nosuchpolicy", "--ssd", SSD)
    assert_user_error(run, USAGE, "nosuchpolicy")


def test_unknown_preset(traces: dict[str, Path]) -> None:
    run = invoke("simulate", traces["zipf"], "--policy", "baseline", "--ssd", "nosuchpreset")
    assert_user_error(run, CONFIG, "nosuchpreset")
    assert_user_error(invoke("presets", "--show", "nosuchpreset"), CONFIG, "nosuchpreset")


def test_missing_ssd_file(traces: dict[str, Path], tmp_path: Path) -> None:
    run = invoke("simulate", traces["zipf"], "--policy", "baseline", "--ssd", tmp_path / "ssd.toml")
    assert_user_error(run, CONFIG, "ssd.toml")  # a bad SSD config, whatever is wrong with it


@pytest.mark.parametrize("item", ["novalue", "=3", ""])
def test_malformed_param(traces: dict[str, Path], item: str) -> None:
    run = simulate(traces["zipf"], "--param", item)
    assert_user_error(run, USAGE, "--param")


def test_unknown_option_is_one_line() -> None:
    run = invoke("simulate", "--no-such-option")
    assert_user_error(run, USAGE, "--no-such-option")


def test_unknown_generator_kind(tmp_path: Path) -> None:
    assert_user_error(invoke("gen", "nosuchkind", "-o", tmp_path / "g.parquet"), USAGE, "nosuchkind")


def test_engine_rejects_unknown_kind_directly(tmp_path: Path) -> None:
    """The engine's own UsageError (see test_engine_exceptions.py), classified as a usage error."""
    with pytest.raises(Exception, match="nosuchkind") as raised:
        api.gen("nosuchkind", str(tmp_path / "g.parquet"), {})
    assert type(raised.value).__name__ == "UsageError"
    assert _common.classify(raised.value) == (str(raised.value), USAGE)


# --------------------------------------------------------------------------- bad SSD configs


def small_toml(**changes: str) -> str:
    text = api.preset_toml("small")
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f"{key} = {changes[key]}" if key in changes and "=" in line else line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("op-zero.toml", {"op": "0.0"}),
        ("few-blocks.toml", {"channels": "1", "ways": "1", "blocks_per_die": "4"}),
    ],
)
def test_impossible_ssd_config(tmp_path: Path, tiny_trace: Path, name: str, changes: dict[str, str]) -> None:
    path = tmp_path / name
    path.write_text(small_toml(**changes))
    run = invoke("simulate", tiny_trace, "--policy", "baseline", "--ssd", path, "--no-timing")
    assert_user_error(run, CONFIG, name)


def test_ssd_config_with_a_typo(tmp_path: Path, tiny_trace: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text(small_toml().replace("pages_per_block", "pages_per_blok"))
    run = invoke("simulate", tiny_trace, "--policy", "baseline", "--ssd", path, "--no-timing")
    assert_user_error(run, CONFIG, "typo.toml")


def test_valid_custom_ssd_file_works(tmp_path: Path, tiny_trace: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(small_toml(gc_victim='"fifo"'))
    run = invoke("simulate", tiny_trace, "--policy", "baseline", "--ssd", path, "--no-timing", "--json")
    assert run.status == 0, run.stderr
    assert run.json()["host_pages"] > 0
