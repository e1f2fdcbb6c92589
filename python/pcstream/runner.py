"""Batches of simulations (trace × policy), serial or in worker processes, in a fixed order.

A job that fails (a missing trace, a malformed file, an unknown policy) becomes an
:class:`Outcome` carrying its one-line message and exit status; the other jobs still run. Results
come back in job order whatever the order of completion, so output is deterministic.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from pcstream import api
from pcstream.errors import EXIT_FAILURE, CliError, classify, require_file


@dataclass(frozen=True)
class Job:
    """One simulation: every argument of :func:`pcstream.api.simulate` except progress."""

    trace: str
    policy: str
    ssd: str = "paper"
    prefill: float = 0.0
    warmup: int = 0
    seed: int = 0
    timing: bool = True
    params: tuple[tuple[str, str], ...] = ()


@dataclass
class Outcome:
    """The result of a job: ``result`` on success, else ``error`` (one line) and ``status``."""

    job: Job
    result: dict[str, Any] | None = None
    error: str | None = None
    status: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result is not None

    def record(self) -> dict[str, Any]:
        """The JSON object printed for this job: the engine result, or an error record."""
        if self.result is not None:
            return self.result
        return {
            "trace": self.job.trace,
            "policy": self.job.policy,
            "ssd": self.job.ssd,
            "error": self.error,
            "exit_status": self.status,
        }


def run_job(job: Job) -> Outcome:
    """Run one job; user errors become a failed Outcome, bugs propagate."""
    try:
        require_file(job.trace, "trace file")
        result = api.simulate(
            job.trace,
            job.policy,
            ssd=job.ssd,
            prefill=job.prefill,
            warmup=job.warmup,
            seed=job.seed,
            timing=job.timing,
            params=dict(job.params) or None,
        )
        return Outcome(job, result=result)
    except Exception as exc:  # classify() decides what is a user error; Ctrl-C is not an Exception
        found = classify(exc)
        if found is None:
            raise
        message, status = found
        return Outcome(job, error=message, status=status)


def run_jobs(
    jobs: Sequence[Job], n_jobs: int = 1, on_done: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Run ``jobs`` with up to ``n_jobs`` worker processes; outcomes in the order of ``jobs``."""
    if n_jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {n_jobs}", EXIT_FAILURE)
    n_jobs = min(n_jobs, len(jobs)) or 1
    if n_jobs == 1:
        outcomes = []
        for job in jobs:
            outcome = run_job(job)
            outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
        return outcomes

    # "spawn": workers start clean (no inherited threads such as a progress bar's refresher).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context) as pool:
        futures: list[Future[Outcome]] = [pool.submit(run_job, job) for job in jobs]
        try:
            for future in as_completed(futures):
                if on_done is not None:
                    on_done(future.result())
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        return [future.result() for future in futures]


def default_jobs() -> int:
    """Worker processes to use when the user asks for 'all cores'."""
    return max(1, os.cpu_count() or 1)
