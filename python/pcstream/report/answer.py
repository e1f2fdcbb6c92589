"""The answer first, in the terminal: one workload × policy table of WAF / baseline per discard
mode, the best policy of each workload marked, the mode where garbage collection matters most
first (what ``pcstream demo`` prints before anything else)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from pcstream import diagnose
from pcstream.compare.outcome import Outcome
from pcstream.diagnose import BASELINE
from pcstream.report.data import discard_mode

# The oracle knows the future: shown as the bound, never marked as a workload's best.
ORACLE = "oracle"
# Baseline WAF from which GC is busy enough that placement can save much (the suite's target),
# as the seeds' 90 %-full devices were: a workload is then GC-bound.
GC_BOUND = 1.3
# The policies shown in their own column (when they ran); every other policy can still be a
# workload's best, named in the "best" column. Fourteen columns do not fit a terminal.
SHOWN = ("pcstream", "pcstream-star", "autostream-sfr", "autostream-mq", "per-pc", ORACLE)


def _label(trace: str) -> str:
    """The workload's name: the file name without the mode suffix and ``.parquet``."""
    name = os.path.basename(trace).removesuffix(".parquet")
    return name.removesuffix(f".{discard_mode(trace)}")


def by_mode(outcomes: Sequence[Outcome]) -> list[tuple[str, list[Outcome]]]:
    """The outcomes grouped by discard mode, the mode with the highest median baseline WAF first
    (ties: the mode's name)."""
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(discard_mode(o.job.trace), []).append(o)

    def busy(item: tuple[str, list[Outcome]]) -> tuple[float, str]:
        base = [float(o.result["waf"]) for o in item[1] if o.result is not None and o.job.policy == BASELINE]
        return (-(statistics.median(base) if base else 1.0), item[0])

    return sorted(groups.items(), key=busy)


def answer_table(mode: str, outcomes: Sequence[Outcome], ssd: str) -> Table:
    """Rows: workloads; columns: the baseline's WAF, the best non-oracle policy with its WAF /
    baseline, then the WAF / baseline of the policies of :data:`SHOWN` (of every policy when none
    of them ran), the best in bold green; a caption counting the GC-bound workloads and,
    where GC had little to do, the warning."""
    policies = list(dict.fromkeys(o.job.policy for o in outcomes))
    cells: dict[str, dict[str, float | None]] = {}
    for o in outcomes:
        cells.setdefault(_label(o.job.trace), {})[o.job.policy] = (
            float(o.result["waf"]) if o.result is not None else None
        )
    bound = sum(1 for row in cells.values() if (row.get(BASELINE) or 0.0) >= GC_BOUND)
    note = diagnose.little_gc_note([o.result for o in outcomes if o.result is not None])
    caption = f"baseline WAF ≥ {GC_BOUND} on {bound} of {len(cells)} workloads"
    if note:
        caption += f"\nwarning: {note}"
    t = Table(
        title=escape(f"WAF / baseline · ssd {ssd} · {mode} (best per workload in bold)"),
        title_justify="left",
        caption=escape(caption),
        caption_justify="left",
        caption_style="yellow" if note else "dim",
    )
    t.add_column("workload", no_wrap=True)
    t.add_column("baseline WAF", justify="right")
    t.add_column("best", no_wrap=True)
    others = [p for p in policies if p in SHOWN] or [p for p in policies if p != BASELINE]
    for p in others:
        t.add_column(p, justify="right")
    for name, row in cells.items():
        base = row.get(BASELINE)
        rivals = {p: w for p, w in row.items() if p not in (BASELINE, ORACLE) and w is not None}
        best = min(rivals, key=lambda p: (rivals[p], p)) if rivals and base else None
        line: list[Text] = [Text(name), Text(f"{base:.3f}" if base else "—")]
        won = best is not None and base is not None and rivals[best] < base
        line.append(
            Text(
                f"{best} {rivals[best] / base:.3f}" if won else "baseline", style="bold green" if won else ""
            )
        )
        for p in others:
            w = row.get(p)
            if w is None or not base:
                line.append(Text("—" if w is None else f"{w:.3f}"))
                continue
            line.append(Text(f"{w / base:.3f}", style="bold green" if p == best and w < base else ""))
        t.add_row(*line)
    return t
