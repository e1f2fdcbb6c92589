"""docs/RESULTS.md generator: per discard mode (the busier first), the seeds' claims beside ours,
why pcstream does not win where it does not, and the tables normalised to baseline."""

from __future__ import annotations

import json
from pathlib import Path

from pcstream.report import suite_results


def row(trace: str, policy: str, waf: float, iops: float = 1000.0, **extra: object) -> dict:
    return {
        "trace": f"traces/{trace}.parquet",
        "ssd": "paper",
        "policy": policy,
        "waf": waf,
        "iops": iops,
        **extra,
    }


def stream(n: int, share: float, p25: int, p50: int, p75: int) -> dict:
    return {
        "stream": n,
        "pages": int(share * 1000),
        "share": share,
        "lifetime_p25": p25,
        "p50": p50,
        "p75": p75,
    }


ROWS = [
    # discard: GC has little to do.
    row("rocksdb-ur", "baseline", 1.01),
    row("rocksdb-ur", "pcstream", 1.02),
    # nodiscard: GC-bound; pcstream beats baseline and pcstream-star, loses to autostream-sfr.
    row("rocksdb-ur.nodiscard", "baseline", 1.50),
    row(
        "rocksdb-ur.nodiscard",
        "pcstream",
        1.20,
        1250.0,
        gc_pages=200,
        host_pages=1000,
        open_write_points=9,
        physical_pages=3_145_728,
        aged_pages=2_879_289,
        per_stream=[stream(0, 0.4, 10, 500, 9000), stream(1, 0.6, 20, 40, 80)],
    ),
    row("rocksdb-ur.nodiscard", "pcstream-star", 1.30),
    row("rocksdb-ur.nodiscard", "autostream-sfr", 1.10, 1100.0, per_stream=[stream(0, 1.0, 5, 50, 500)]),
    row("rocksdb-ur.nodiscard", "manual", 1.35),
    row("fio-uniform.nodiscard", "baseline", 2.0),
    row("fio-uniform.nodiscard", "pcstream", 1.0),
    {"trace": "traces/gone.parquet", "policy": "pcstream", "error": "gone.parquet: no such file"},
]


def render(tmp_path: Path) -> str:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "RESULTS.md"
    assert suite_results.main([str(results), "-o", str(out)]) == 0
    return out.read_text()


def test_modes_busier_first_with_tables(tmp_path: Path) -> None:
    text = render(tmp_path)
    # nodiscard (median baseline 1.75) before discard (1.01), in the answer and the tables.
    assert text.index("**nodiscard**") < text.index("**discard**")
    assert text.index("## Every run, nodiscard") < text.index("## Every run, discard")
    assert "**nodiscard**: baseline WAF ≥ 1.3 on 2 of 2 workloads." in text
    assert "**discard**: baseline WAF ≥ 1.3 on 0 of 1 workloads." in text
    # Workload names lose the mode suffix; cells: WAF (ratio), IOPS relative to baseline.
    assert "| workload | `baseline` | `autostream-sfr` | `manual` | `pcstream` | `pcstream-star` |" in text
    cells = (
        "| 1.500 (1.00), IOPS ×1.00 | 1.100 (0.73), IOPS ×1.10 | 1.350 (0.90), IOPS ×1.00 "
        "| 1.200 (0.80), IOPS ×1.25 |"
    )
    assert f"| rocksdb-ur {cells}" in text
    assert "## Runs that failed" in text and "gone.parquet: no such file" in text


def test_claims_are_means_over_the_mode(tmp_path: Path) -> None:
    text = render(tmp_path)
    line = next(x for x in text.splitlines() if x.startswith("| PCStream vs Baseline, WAF |"))
    # nodiscard: rocksdb 1.2/1.5 = 0.8 and fio 1.0/2.0 = 0.5: mean −35 %, better on both; discard: +1 %.
    assert "| −63 % on average" in line
    assert "−35.0% (better on 2 of 2) / −35.0% (better on 2 of 2)" in line.replace("-", "−")
    assert "+1.0% (better on 0 of 1) / —" in line
    # Claims about RocksDB only cover RocksDB; IOPS higher is better.
    star = next(x for x in text.splitlines() if x.startswith("| PCStream vs PCStream*"))
    assert "(better on 1 of 1)" in star
    iops = next(x for x in text.splitlines() if x.startswith("| PCStream vs Baseline, IOPS"))
    assert "+12.5% (better on 1 of 2)" in iops


def test_a_miss_says_why_from_the_data(tmp_path: Path) -> None:
    text = render(tmp_path)
    miss = next(
        x for x in text.splitlines() if x.startswith("* rocksdb-ur: `pcstream` 1.200 vs `autostream-sfr`")
    )
    assert "(+9.1%)" in miss and "GC copied 0.20 pages per host page" in miss
    assert "put 40% of the pages in stream 0" in miss
    # 9 units of 6,144 pages (paper) against 266,439 free pages.
    assert "`pcstream` held 9 unit(s) open (21% of the free pages at the start)" in miss
    assert "`autostream-sfr` open write points unknown" in miss
    assert "s1 60%, life 20–40–80; s0 40%, life 10–500–9,000" in miss
    assert "`autostream-sfr`: s0 100%, life 5–50–500" in miss
    # Not listed where pcstream wins; little GC is said as such.
    assert "vs `baseline` 1.500" not in text and "vs `pcstream-star`" not in text
    assert "pcstream beats every rival here" not in text.split("### discard")[0].split("### nodiscard")[1]
    assert "### discard\n\n* GC had little to do (baseline WAF < 1.05)" in text


def test_workloads_below_the_bound_say_how_much_they_wrote(tmp_path: Path) -> None:
    dev = {"physical_pages": 3_145_728, "aged_pages": 2_879_289}  # 266,439 pages free at the start
    rows = [
        row("gcc.nodiscard", "baseline", 1.0, host_pages=1_000, gc_pages=0, **dev),
        row("fio-normal.nodiscard", "baseline", 1.1, host_pages=532_878, gc_pages=53_288, **dev),
        row("fio-uniform.nodiscard", "baseline", 1.9, host_pages=532_878, gc_pages=479_590, **dev),
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "RESULTS.md"
    assert suite_results.main([str(results), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    short = [x for x in lines if "host pages, " in x]
    gcc = next(x for x in short if x.startswith("* gcc (baseline WAF 1.000): "))
    assert "1,000 host pages, 0.00× the 266,439 pages free" in gcc and "GC had little to reclaim" in gcc
    fio = next(x for x in short if x.startswith("* fio-normal (baseline WAF 1.100): "))
    assert "2.00× the 266,439 pages free" in fio and "GC copied 0.10 pages per host page" in fio
    # A workload at or above the bound is in the answer, not among the short ones.
    assert len(short) == 2 and not any(x.startswith("* fio-uniform") for x in short)


def test_missing_results_file_is_one_line(tmp_path: Path, capsys) -> None:
    assert suite_results.main([str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.jsonl" in err and "compare --results" in err


def test_hinted_share_counts_written_pages_with_a_program_hint(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {"op": [0, 0, 1, 0], "pages": [4, 4, 8, 2], "hint": [2, 0, 3, 0]}
    types = {"op": pa.uint8(), "pages": pa.uint32(), "hint": pa.uint8()}
    pq.write_table(pa.table({k: pa.array(v, types[k]) for k, v in cols.items()}), tmp_path / "db.parquet")
    pq.write_table(
        pa.table({k: pa.array(v, pa.uint32()) for k, v in cols.items()}), tmp_path / "db.nodiscard.parquet"
    )
    # Writes: 10 pages, 4 of them hinted; the TRIM's hint does not count.
    assert suite_results.hinted_share(tmp_path / "db.parquet") == 0.4
    # One line for the discard-mode traces (the other mode is the same recording).
    line = suite_results.hints_line(tmp_path)
    assert "db 40%" in line and "(0 of 1 set no hint" in line


def test_hints_line_sets_pcstream_against_manual_on_the_hinted_traces(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, hint in (("db", [2, 3]), ("fio", [0, 0])):
        cols = {"op": pa.array([0, 0], pa.uint8()), "pages": pa.array([4, 4], pa.uint32())}
        pq.write_table(pa.table({**cols, "hint": pa.array(hint, pa.uint8())}), tmp_path / f"{name}.parquet")
    rows = [
        row("db", "baseline", 1.100),
        row("db", "manual", 1.050),
        row("db", "pcstream", 1.000),
        row("db.nodiscard", "baseline", 2.000),
        row("db.nodiscard", "manual", 1.600),
        row("db.nodiscard", "pcstream", 1.800),
        row("fio", "baseline", 1.500),
        row("fio", "manual", 1.500),
        row("fio", "pcstream", 1.200),
    ]
    by = suite_results.group(rows)
    line = suite_results.hints_line(tmp_path, by, ["nodiscard", "discard"])
    assert "db 100%" in line and "(1 of 2 set no hint" in line
    # Only the hinted workload, each mode with its own runs, the busier mode first.
    tail = line.split("per discard mode — ", 1)[1]
    assert tail == (
        "nodiscard: db `pcstream` 1.800 vs `manual` 1.600 (+12.5%; `baseline` 2.000). "
        "discard: db `pcstream` 1.000 vs `manual` 1.050 (-4.8%; `baseline` 1.100)."
    )
    # Without the runs, only the shares.
    assert "ManualStream on the programs' real hints" not in suite_results.hints_line(tmp_path)


def test_the_share_of_the_gap_to_the_oracle_pcstream_closes() -> None:
    runs = {"baseline": {"waf": 2.0}, "pcstream": {"waf": 1.75}, "oracle": {"waf": 1.0}}
    assert suite_results.gap_closed(runs) == "; `pcstream` closes 25% of the gap to `oracle`"
    worse = dict(runs, pcstream={"waf": 2.2})
    assert suite_results.gap_closed(worse) == "; `pcstream` closes -20% of the gap to `oracle`"
    assert (
        suite_results.gap_closed({"baseline": {"waf": 1.0}, "pcstream": {"waf": 1.0}, "oracle": {"waf": 1.0}})
        == ""
    )
    assert suite_results.gap_closed({"baseline": {"waf": 2.0}, "pcstream": {"waf": 1.0}}) == ""


def test_the_gap_left_splits_into_a_learned_table_and_the_rest() -> None:
    runs = {"baseline": {"waf": 2.0}, "pcstream": {"waf": 1.75}, "oracle": {"waf": 1.0}}
    # A learned table takes pcstream-star from 1.75 to 1.5: a quarter of the gap (1.0); half of
    # it is left.
    clause = suite_results.gap_left(runs, 1.5)
    assert "`pcstream-star` 1.500 (recovers 25% of the gap)" in clause
    assert clause.endswith("what PCs do not tell: 50%")
    # Worse from the table: it recovers a negative share, and what is left counts from pcstream.
    worse = suite_results.gap_left(runs, 1.85)
    assert "(recovers -10% of the gap)" in worse and worse.endswith(": 75%")
    assert suite_results.gap_left(runs, None) == ""
    flat = {"baseline": {"waf": 1.0}, "pcstream": {"waf": 1.0}, "oracle": {"waf": 1.0}}
    assert suite_results.gap_left(flat, 1.0) == ""
