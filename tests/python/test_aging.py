"""An aged file system from the command line: ``map --age`` writes the aged state at the head of
the trace (with its footer keys), ``info`` and ``simulate`` report it, an explicit ``--prefill`` on
such a trace is refused, and ``compare`` prefills only the traces without one."""

from __future__ import annotations

from pathlib import Path

from pcstream import api, tracemeta
from support import SSD, assert_user_error, invoke
from test_map_import import HAND_MADE, file_trace


def mapped(tmp_path: Path, *extra: str, name: str = "aged.parquet") -> Path:
    src = file_trace(tmp_path / "t.file.parquet", HAND_MADE, {1: "/db/a.log", 2: "/other/b.log"})
    out = tmp_path / name
    run = invoke("map", src, "-o", out, "--capacity", SSD, "--json", *extra)
    assert run.status == 0, run.stderr
    return out


def test_map_age_writes_the_aged_state_first_and_simulate_starts_from_it(tmp_path: Path) -> None:
    out = mapped(tmp_path, "--age", "0.9", "--age-seed", "5", "--age-churn", "1")
    run = invoke(
        "map",
        tmp_path / "t.file.parquet",
        "-o",
        tmp_path / "b.parquet",
        "--capacity",
        SSD,
        "--age",
        "0.9",
        "--json",
    )
    aged = run.json()["aged"]
    assert abs(aged["used_share"] - 0.9) <= 0.01
    meta = tracemeta.footer(out)
    pages = int(meta[tracemeta.KEY_AGED_PAGES])
    assert pages == tracemeta.aged_pages(out) and int(meta[tracemeta.KEY_AGED_ROWS]) > 0
    info = api.info(str(out))
    assert info["aged_pages"] == pages and info["aged_rows"] == int(meta[tracemeta.KEY_AGED_ROWS])
    # PC and meta shares are of the program's pages: the aged state (no PC) is not among them.
    program_pages = info["writes"]["pages"] - pages
    top = info["pcs"]["top"]
    assert sum(p["pages"] for p in top) <= program_pages
    assert all(abs(p["share"] - p["pages"] / program_pages) < 1e-9 for p in top)
    assert abs(sum(info["meta_share"].values()) - 1.0) < 1e-9
    result = invoke("simulate", out, "--policy", "baseline", "--ssd", SSD, "--no-timing", "--json").json()
    assert result["aged_pages"] == pages
    # The measured host pages are the program's only (the trace's writes minus the aged state).
    assert result["host_pages"] == info["writes"]["pages"] - pages
    # Same seed and churn, same aged file system.
    again = mapped(tmp_path, "--age", "0.9", "--age-seed", "5", "--age-churn", "1", name="again.parquet")
    assert tracemeta.aged_pages(again) == pages
    other = mapped(tmp_path, "--age", "0.9", "--age-seed", "6", "--age-churn", "1", name="other.parquet")
    assert tracemeta.footer(other)[tracemeta.KEY_AGED_ROWS] != meta[tracemeta.KEY_AGED_ROWS]


def test_an_explicit_prefill_on_an_aged_trace_is_refused(tmp_path: Path) -> None:
    out = mapped(tmp_path, "--age", "0.8")
    run = invoke("simulate", out, "--policy", "baseline", "--ssd", SSD, "--prefill", "0.5")
    assert_user_error(run, 2, "aged state", "--prefill")
    run = invoke("compare", out, "--policies", "baseline", "--ssd", SSD, "--prefill", "0.9", "--no-timing")
    assert_user_error(run, 2, "aged.parquet", "aged state", "--prefill")


def test_compare_prefills_only_traces_without_their_own_aged_state(tmp_path: Path) -> None:
    aged = mapped(tmp_path, "--age", "0.8")
    fresh = tmp_path / "fresh.parquet"
    assert invoke("map", tmp_path / "t.file.parquet", "-o", fresh, "--capacity", SSD).status == 0
    run = invoke("compare", aged, fresh, "--policies", "baseline", "--ssd", SSD, "--no-timing", "--json")
    assert run.status == 0, run.stderr
    by_trace = {Path(r["trace"]).name: r for r in run.json_lines()}
    assert by_trace["aged.parquet"]["prefill"] == 0.0 and by_trace["aged.parquet"]["aged_pages"] > 0
    assert by_trace["fresh.parquet"]["prefill"] == 0.9 and by_trace["fresh.parquet"]["aged_pages"] == 0


def test_aging_errors_are_one_line(tmp_path: Path) -> None:
    src = file_trace(tmp_path / "t.file.parquet", HAND_MADE, {1: "/db/a.log", 2: "/other/b.log"})
    run = invoke("map", src, "-o", tmp_path / "o.parquet", "--capacity", SSD, "--age", "1.5")
    assert_user_error(run, 2, "--age")
    run = invoke("map", src, "-o", tmp_path / "o.parquet", "--capacity", SSD, "--age", "0.001")
    assert_user_error(run, 2, "already uses")
    assert not (tmp_path / "o.parquet").exists()


def test_the_aging_plan_is_the_models(tmp_path: Path) -> None:
    plan = api.aging_plan(61_248, 0.9, seed=2, churn=1)
    assert plan == api.aging_plan(61_248, 0.9, seed=2, churn=1)
    ops = {op["op"] for op in plan}
    assert ops == {"create", "delete", "sync"}
    assert all(not op["path"].startswith("/") for op in plan if "path" in op)


def test_record_takes_age_only_with_block() -> None:
    run = invoke("record", "--age", "0.5", "--", "true")
    assert_user_error(run, 2, "--age", "--block")
