"""Draws the report's per-trace figures on several cores.

A figure of a trace takes 1–3 s of matplotlib (the lifetimes grid: one log-scale panel per
policy), and a sweep of the bundled suite has 34 traces: drawn one after the other they were
half of ``pcstream demo``. Each figure depends only on the sweep, so worker processes draw them:
the sweep is sent once to each worker (the pool's initializer), a task names the figure. The
files are the same as drawn in process (Agg rendering does not depend on the process).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

from pcstream.report import figures
from pcstream.report.data import Sweep

# Below this many figures a worker's start-up (importing matplotlib, about a second) costs more
# than it saves: they are drawn in process.
MIN_FIGURES_PER_WORKER = 3

# The figures drawn per trace and SSD, by the name a task gives.
KINDS = {"lifetimes": figures.lifetimes, "latency": figures.latency_cdf}


class Task(NamedTuple):
    """One figure: its kind (a key of KINDS), trace, SSD and file name."""

    kind: str
    trace: str
    ssd: str
    name: str


_sweep: Sweep | None = None
_fig_dir = ""


def _init(data: Sweep, fig_dir: str) -> None:
    global _sweep, _fig_dir
    _sweep, _fig_dir = data, fig_dir


def _draw(task: Task) -> str | None:
    assert _sweep is not None, "drawing: a worker without its sweep (the pool's initializer did not run)"
    return KINDS[task.kind](_sweep, task.trace, task.ssd, _fig_dir, task.name)


def draw(data: Sweep, tasks: Sequence[Task], fig_dir: str, jobs: int) -> list[str | None]:
    """Draw every task's figure into ``fig_dir`` with up to ``jobs`` processes; each figure's
    file name, or None where it has no data, in the order of ``tasks``."""
    workers = min(jobs, len(tasks) // MIN_FIGURES_PER_WORKER)
    if workers <= 1:
        return [KINDS[t.kind](data, t.trace, t.ssd, fig_dir, t.name) for t in tasks]
    # "spawn": a worker starts clean (no inherited threads, such as a progress bar's refresher).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_init, initargs=(data, fig_dir)
    ) as pool:
        return list(pool.map(_draw, tasks))
