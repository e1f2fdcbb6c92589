"""The answer table the demo prints: per discard mode, WAF / baseline per workload and policy, the
best non-oracle policy marked, the mode where GC matters most first, a warning where GC idled."""

from __future__ import annotations

import io

from rich.console import Console

from pcstream.compare.outcome import Job, Outcome
from pcstream.report import answer


def outcome(trace: str, policy: str, waf: float, gc: int = 500) -> Outcome:
    result = {"trace": trace, "policy": policy, "waf": waf, "host_pages": 1000, "gc_pages": gc}
    return Outcome(Job(f"traces/{trace}.parquet", policy), result)


OUTCOMES = [
    outcome("db", "baseline", 1.02, gc=5),
    outcome("db", "pcstream", 1.01, gc=5),
    outcome("db", "oracle", 1.00, gc=0),
    outcome("db.nodiscard", "baseline", 1.60),
    outcome("db.nodiscard", "pcstream", 1.20),
    outcome("db.nodiscard", "oracle", 1.05),
    outcome("fio.nodiscard", "baseline", 1.40),
    outcome("fio.nodiscard", "pcstream", 1.50),
    outcome("fio.nodiscard", "oracle", 1.10),
]


def render(mode: str, group: list[Outcome]) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(answer.answer_table(mode, group, "paper"))
    return out.getvalue()


def test_the_busier_mode_comes_first() -> None:
    modes = answer.by_mode(OUTCOMES)
    assert [m for m, _ in modes] == ["nodiscard", "discard"]
    assert {o.job.trace for o in modes[0][1]} == {
        "traces/db.nodiscard.parquet",
        "traces/fio.nodiscard.parquet",
    }


def test_ratios_best_and_counts() -> None:
    text = render(*answer.by_mode(OUTCOMES)[0])
    assert "WAF / baseline · ssd paper · nodiscard" in text
    db = next(line for line in text.splitlines() if line.strip(" │|").startswith("db "))
    # The workload's name without the mode suffix; baseline's own WAF, then the ratios.
    assert "1.600" in db and "0.750" in db and "0.656" in db
    fio = next(line for line in text.splitlines() if line.strip(" │|").startswith("fio "))
    assert "1.071" in fio
    # The best column names the winner with its ratio; none beat the baseline on fio.
    assert "pcstream 0.750" in db and "baseline" in fio.split("1.400")[1]
    assert "baseline WAF ≥ 1.3 on 2 of 2 workloads" in text and "warning" not in text


def test_best_is_marked_and_oracle_is_not() -> None:
    mode, group = answer.by_mode(OUTCOMES)[0]
    table = answer.answer_table(mode, group, "paper")
    styles = {
        (row, col.header): col._cells[row].style  # noqa: SLF001 - the cells' styles are the marks
        for col in table.columns
        for row in range(len(col._cells))  # noqa: SLF001
    }
    # Row 0 is db: pcstream (0.750) is its best non-oracle policy; the oracle's 0.656 is not marked.
    assert styles[(0, "pcstream")] == "bold green" and styles[(0, "oracle")] == ""
    # Row 1 is fio: pcstream is worse than baseline, so nothing is marked.
    assert styles[(1, "pcstream")] == ""


def test_little_gc_is_a_warning() -> None:
    text = render(*answer.by_mode(OUTCOMES)[1])
    assert "on 0 of 1 workloads" in text and "warning: GC copied fewer than 2%" in text
