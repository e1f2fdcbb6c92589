"""The jobs of a comparison: one simulation each (trace × SSD × policy), run serially, in worker
processes, or as Ray tasks.

A job that fails (a missing trace, a malformed file, an unknown policy or SSD) becomes an
:class:`Outcome` carrying its one-line message and exit status; the other jobs still run. Results
come back in job order whatever the order of completion, so output is deterministic, and every
executor runs the same :func:`run_job`, so their results are identical (wall-clock fields aside).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

import click

from pcstream import api
from pcstream.compare import travel as travel_module
from pcstream.compare.outcome import Job, Outcome
from pcstream.errors import (
    BadParameter,
    Terminated,
    describe,
    file_problem,
    one_line,
    require_config_file,
    require_file,
)

# How to get a Ray cluster, after a failed connection ({param}: how the caller spells the option).
RAY_HOW = (
    "start one with 'ray start --head' and pass its address, "
    "or give {param} without an address for a local Ray"
)
# Times Ray runs a task again when its worker process or its node dies. A simulation's own failure
# (a bad trace, an unknown policy) is an outcome and a bug an exception: neither is retried.
RAY_RETRIES = 3
# How often the Ray executor looks whether its cluster still has CPUs while no run finishes, and
# after how long without a finished run it says so when none are left (Ray would wait silently).
RAY_IDLE_CHECK_S = 5.0
RAY_IDLE_NOTICE_S = 30.0


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


def run_shipped(job: Job, trace: travel_module.Shipped, ssd: travel_module.Shipped | None) -> Outcome:
    """Run ``job`` on a Ray worker from the files that travelled with it (:mod:`.travel`)."""
    import ray

    with travel_module.local_job(ray, job, trace, ssd) as (local, renames):
        outcome = run_job(local)
    return travel_module.as_driver_saw_it(outcome, job, renames)


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
    dashboard) and stops it afterwards; its tasks read the traces at their paths. Otherwise Ray
    connects to that cluster (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``), whose workers need
    pcstream installed but none of the driver's files: each trace and SSD config file travels
    through the object store (:mod:`.travel`). A task whose worker or node dies is run again
    elsewhere, up to :data:`RAY_RETRIES` times; a failed simulation is an outcome, not retried. A
    Ray session already open in this process is used as it is and left open (its tasks read paths
    unless ``address`` is given).
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
        return _run_tasks(ray, jobs, travel=bool(address), on_done=on_done)
    finally:
        if started_here:
            ray.shutdown()


def _run_tasks(
    ray: Any, jobs: Sequence[Job], *, travel: bool, on_done: Callable[[Outcome], None] | None
) -> list[Outcome]:
    outcomes: list[Outcome | None] = [None] * len(jobs)
    files: dict[str, travel_module.Shipped | None] = {}
    uses: dict[str, int] = {}  # runs under way per travelling file

    def finish(index: int, outcome: Outcome) -> None:
        outcomes[index] = outcome
        for path in (jobs[index].trace, jobs[index].ssd):
            if path in uses:
                uses[path] -= 1
                if not uses[path]:  # its last run is done: the object store may free its chunks
                    del uses[path]
                    files.pop(path, None)
        if on_done is not None:
            on_done(outcome)

    options = {"num_cpus": 1, "max_retries": RAY_RETRIES}
    by_path = ray.remote(**options)(run_job)
    shipped = ray.remote(**options)(run_shipped)
    pending: dict[Any, int] = {}
    try:
        for index, job in enumerate(jobs):
            if not travel:
                pending[by_path.remote(job)] = index
                continue
            trace = _shipped(ray, job.trace, files)
            ssd = _shipped(ray, job.ssd, files) if _looks_like_path(job.ssd) else None
            if trace is None or (ssd is None and _looks_like_path(job.ssd)):
                finish(index, run_job(job))  # unreadable here: fails at once with its message
            else:
                pending[shipped.remote(job, trace, ssd)] = index
                for path in (job.trace, job.ssd) if ssd is not None else (job.trace,):
                    uses[path] = uses.get(path, 0) + 1
        idle = 0.0
        while pending:
            ready, waiting = ray.wait(list(pending), num_returns=1, timeout=RAY_IDLE_CHECK_S)
            if ready and waiting:  # every other run already finished too: one pass over the list each
                ready += ray.wait(waiting, num_returns=len(waiting), timeout=0)[0]
            idle = 0.0 if ready else idle + RAY_IDLE_CHECK_S
            if idle == RAY_IDLE_NOTICE_S and not ray.cluster_resources().get("CPU"):
                click.echo(
                    f"pcstream: note: the Ray cluster has no CPU left; {len(pending)} runs wait for a "
                    "worker node to join (Ctrl-C stops the sweep; finished runs are kept)",
                    err=True,
                )
            for ref in ready:
                finish(pending.pop(ref), ray.get(ref))
    except BaseException:
        # Ctrl-C, SIGTERM (or a bug): the tasks still queued or running are cancelled, so the
        # cluster does not go on with a sweep nobody waits for.
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise
    return [outcome for outcome in outcomes if outcome is not None]


def _shipped(
    ray: Any, path: str, files: dict[str, travel_module.Shipped | None]
) -> travel_module.Shipped | None:
    """``path`` put into the object store once per sweep; None when it is not a readable file
    (the job then fails on the driver with the usual message)."""
    if path not in files:
        shipped = None
        if file_problem(path) is None:
            with contextlib.suppress(OSError):
                shipped = travel_module.put_file(ray, path)
        files[path] = shipped
    return files[path]


def _ray_init(ray: Any, address: str | None, num_cpus: int | None) -> None:
    import logging

    _cluster_events_to_stderr()
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


def _cluster_events_to_stderr() -> None:
    """Send the cluster events Ray's driver prints (a node lost, a worker killed) to stderr.

    Ray prints them to stdout, between the results of ``--json``; its printer is a module
    function the driver's listener looks up at each message, so it is wrapped once (a Ray
    without it prints as it does)."""
    import ray._private.worker as ray_worker

    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "pcstream_stderr", False):
        return

    def to_stderr(data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        printer({**data, "is_err": True}, *args, **kwargs)

    to_stderr.pcstream_stderr = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr


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
