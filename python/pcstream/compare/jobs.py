"""The jobs of a comparison: one simulation each (trace × SSD × policy), run serially, in worker
processes, or as Ray tasks.

A job that fails (a missing trace, a malformed file, an unknown policy or SSD) becomes an
:class:`Outcome` carrying its one-line message and exit status; the other jobs still run. Results
come back in job order whatever the order of completion, so output is deterministic, and every
executor runs the same :func:`run_job`, so their results are identical (wall-clock fields aside).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

from pcstream import api
from pcstream.compare.outcome import Job, Outcome
from pcstream.errors import BadParameter, Terminated, describe, one_line, require_config_file, require_file

# How to get a Ray cluster, after a failed connection ({param}: how the caller spells the option).
RAY_HOW = (
    "start one with 'ray start --head' and pass its address, "
    "or give {param} without an address for a local Ray"
)


def run_job(job: Job) -> Outcome:
    """Run one job; user errors become a failed Outcome, bugs propagate."""
    try:
        require_file(job.trace, "trace file")
        if _looks_like_path(job.ssd):
            require_config_file(job.ssd)
        options = job.options
        if not options.timing and options.cdf_points:
            options = dataclasses.replace(options, cdf_points=0)  # a CDF needs the timing model
        return Outcome(job, result=api.simulate(job.trace, job.policy, options))
    except Terminated:
        raise  # SIGTERM stops the comparison, not this job only
    except Exception as exc:  # describe() decides what is a user error; Ctrl-C is not an Exception
        found = describe(exc)
        if found is None:
            raise
        message, kind = found
        return Outcome(job, error=message, kind=kind.value)


def _looks_like_path(ssd: str) -> bool:
    """A preset name goes to the engine as is; a path must name an existing file (as ``--ssd`` says)."""
    return ssd.endswith(".toml") or os.sep in ssd or os.path.exists(ssd)


def run_jobs(
    jobs: Sequence[Job], n_jobs: int = 1, on_done: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Run ``jobs`` with up to ``n_jobs`` worker processes; outcomes in the order of ``jobs``."""
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be at least 1, got {n_jobs}")
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
            # Ctrl-C, SIGTERM (or a bug): leaving the pool waits for the simulations under way,
            # seconds each, so the workers are ended first; the jobs not started are dropped.
            _end_workers(pool)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        return [future.result() for future in futures]


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (SIGTERM, which a worker does not catch), and wait
    for each briefly. The executor has no public way to do this before Python 3.14
    (``terminate_workers``); its process table is read where it has one."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=1.0)


def run_jobs_ray(
    jobs: Sequence[Job],
    address: str | None = None,
    num_cpus: int | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run ``jobs`` as Ray tasks; outcomes in the order of ``jobs``, as :func:`run_jobs` gives them.

    ``address`` None or empty starts a private local Ray instance with ``num_cpus`` CPUs (no
    dashboard) and stops it afterwards; otherwise Ray connects to that cluster (``auto``,
    ``HOST:PORT`` or ``ray://HOST:PORT``), whose workers must have pcstream installed and see the
    trace paths (absolute paths on shared storage). A Ray session already open in this process is
    used as it is and left open.
    """
    try:
        import ray
    except ImportError:
        raise BadParameter(
            "ray",
            address,
            "{param} needs the Ray package, which is not installed; run 'pip install ray' "
            "(the version pinned in requirements.lock)",
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        _ray_init(ray, address, num_cpus)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_job)
        pending = {task.remote(job): index for index, job in enumerate(jobs)}
        outcomes: list[Outcome | None] = [None] * len(jobs)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                outcome = ray.get(ref)
                outcomes[pending.pop(ref)] = outcome
                if on_done is not None:
                    on_done(outcome)
        return [outcome for outcome in outcomes if outcome is not None]
    finally:
        if started_here:
            ray.shutdown()


def _ray_init(ray: Any, address: str | None, num_cpus: int | None) -> None:
    import logging

    quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
    if not address:
        # A private instance on loopback: token auth only adds a file under ~/.ray to clean up.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(num_cpus=num_cpus or default_jobs(), include_dashboard=False, **quiet)
        return
    problem = _unreachable(address)
    if problem is not None:
        raise BadParameter(
            "ray", address, f"{{param}} {{value}}: cannot connect to a Ray cluster ({problem}); {RAY_HOW}"
        )
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BadParameter(
            "ray",
            address,
            f"{{param}} {{value}}: cannot connect to a Ray cluster ({one_line(str(exc))}); {RAY_HOW}",
        ) from None


def _unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why HOST:PORT (or ray://HOST:PORT) takes no TCP connection, or None (also for ``auto``).

    Ray itself retries an unreachable address for minutes; a plain connect answers in seconds.
    """
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"


def default_jobs() -> int:
    """Worker processes to use when the user asks for 'all cores'."""
    return max(1, os.cpu_count() or 1)
