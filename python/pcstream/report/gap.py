"""The gap to the oracle: how much of it ``pcstream`` closes on a GC-bound workload, how much a
PC→stream table learned in advance recovers, and what is left (the placement of GC copies and
what PCs do not tell). Shared by RESULTS.md (``suite_results``) and the HTML report (``build``).

All shares are of the whole gap, baseline WAF − oracle WAF:
  closed    = (baseline − pcstream) / gap
  recovered = (pcstream − learned) / gap, ``learned`` being ``pcstream-star`` started from the
              table its own first run over the same trace saved (a learned table, not a bound)
  left      = (min(pcstream, learned) − oracle) / gap
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pcstream import api
from pcstream.compare.outcome import Outcome
from pcstream.options import SimOptions
from pcstream.report.answer import GC_BOUND

# WAFs closer than this (relative) are the same: GC noise, not a finding (no gap to split).
TIE = 0.001
# The policy run twice over the same trace, the second time from the first run's table.
LEARNER = "pcstream-star"


@dataclass(frozen=True)
class Gap:
    """WAF of the baseline, ``pcstream`` and the oracle on one trace and SSD, and of ``LEARNER``
    from a learned table (None when not run)."""

    base: float
    ours: float
    oracle: float
    learned: float | None = None

    @property
    def width(self) -> float:
        return self.base - self.oracle

    @property
    def splits(self) -> bool:
        """Whether there is a gap to split (the oracle below the baseline by more than a tie)."""
        return self.width > TIE * self.base

    @property
    def closed(self) -> float:
        assert self.splits
        return (self.base - self.ours) / self.width

    @property
    def recovered(self) -> float | None:
        assert self.splits
        return None if self.learned is None else (self.ours - self.learned) / self.width

    @property
    def left(self) -> float | None:
        assert self.splits
        return None if self.learned is None else (min(self.ours, self.learned) - self.oracle) / self.width


def learned_waf(trace: str, options: SimOptions) -> float:
    """WAF of ``LEARNER`` on ``trace`` starting from the table its first run over the same trace
    saved (``options`` as the sweep's run; the table lives in a temporary directory)."""
    with tempfile.TemporaryDirectory() as d:
        sim = dataclasses.replace(options, table=os.path.join(d, "pcs.json"), timing=False)
        api.simulate(trace, LEARNER, sim)
        return float(api.simulate(trace, LEARNER, sim)["waf"])


def gaps(outcomes: Sequence[Outcome], learn: bool = True) -> list[tuple[str, str, Gap]]:
    """(trace, ssd, gap) for every trace and SSD where the baseline, ``pcstream`` and the oracle
    ran, GC was busy (baseline WAF ≥ GC_BOUND) and the oracle leaves a gap; with ``learn``, the
    learned-table run is made for each (two simulations of ``LEARNER``)."""
    runs: dict[tuple[str, str], dict[str, Outcome]] = {}
    for o in outcomes:
        if o.result is not None:
            runs.setdefault((o.job.trace, o.job.ssd), {})[o.job.policy] = o
    out = []
    for (trace, ssd), r in runs.items():
        if not all(p in r for p in ("baseline", "pcstream", "oracle")):
            continue
        base, ours, best = (float(r[p].result["waf"]) for p in ("baseline", "pcstream", "oracle"))  # type: ignore[index]
        gap = Gap(base, ours, best)
        if base >= GC_BOUND and gap.splits:
            out.append((trace, ssd, gap, r["pcstream"].job.options))
    if not learn:
        return [(trace, ssd, gap) for trace, ssd, gap, _ in out]
    # The engine lets go of the interpreter while it simulates: one trace per core at a time.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        wafs = list(pool.map(lambda job: learned_waf(job[0], job[3]), out))
    return [(trace, ssd, dataclasses.replace(gap, learned=w)) for (trace, ssd, gap, _), w in zip(out, wafs)]
