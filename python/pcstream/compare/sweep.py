"""A sweep: the traces to compare on (the bundled suite, or generated workloads), the jobs in the
order of every output (traces, then SSD configs, then policies), running them with a progress
callback, and the words that describe the run (executor, reproducing command line).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from pcstream import api, tracemeta
from pcstream.compare.jobs import run_jobs, run_jobs_ray
from pcstream.compare.outcome import Job, Outcome
from pcstream.errors import file_problem, prepare_output
from pcstream.options import SimOptions

# compare ages the SSD by default (simulate does not): steady-state GC is what placement changes.
DEFAULT_PREFILL = 0.9
# Points of the latency CDF each run returns when a report is written.
REPORT_CDF_POINTS = 100
# The bundled suite: traces/*.parquet at the top of the source tree (python/pcstream/compare/ →
# ../../..), recorded by 'pcstream workload suite' for the SSD preset workloads.recipes.SUITE_SSD.
SUITE_DIR = Path(__file__).resolve().parents[3] / "traces"

# The generated workloads (when the bundled suite is not used): the SSD they are sized for, and
# (file stem, generator kind, parameters beyond size and seed) of each.
GENERATED_SSD = "small"
GENERATED: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("uniform", "uniform", {}),
    ("zipf-0.99", "zipf", {"theta": "0.99"}),
    ("hotcold-10-90", "hotcold", {"hot_fraction": "0.1", "hot_ratio": "0.9"}),
    ("seq", "seq", {}),
    ("mix-rocksdb-like", "mix", {"mix": "rocksdb-like"}),
)


def bundled_traces(smallest: int | None = None) -> list[str]:
    """The bundled suite's traces, sorted by name (only the ``smallest`` ones by file size when
    given); empty when the suite is missing."""
    found = sorted(SUITE_DIR.glob("*.parquet")) if SUITE_DIR.is_dir() else []
    if smallest is not None:
        found = sorted(sorted(found, key=lambda p: (p.stat().st_size, p.name))[:smallest])
    return [str(p) for p in found]


def generate(out_dir: str, capacity_pages: int, writes: int, seed: int) -> list[str]:
    """Write the :data:`GENERATED` workloads into ``out_dir/traces``; their paths in order."""
    paths = []
    for stem, kind, extra in GENERATED:
        path = os.path.join(out_dir, "traces", f"{stem}.parquet")
        prepare_output(path, quiet=True)  # our own scratch traces, regenerated each run
        params = {"capacity_pages": str(capacity_pages), "writes": str(writes), "seed": str(seed), **extra}
        api.gen(kind, path, params)
        paths.append(path)
    return paths


def select_policies(spec: str) -> list[str]:
    """``all`` → every registered policy; ``a,b`` → those, in the given order, without repeats
    (empty when ``spec`` names none)."""
    if spec.strip() == "all":
        return api.policy_names()
    return list(dict.fromkeys(name.strip() for name in spec.split(",") if name.strip()))


def _aged(trace: str) -> bool:
    """Whether ``trace`` carries an aged state; an unreadable trace does not (its jobs then fail
    with the reader's message, like any other run)."""
    if file_problem(trace) is not None:  # a FIFO would block the footer's read
        return False
    try:
        return tracemeta.aged_pages(trace) > 0
    except (OSError, ValueError):
        return False


def default_prefill(trace: str) -> float:
    """The prefill a comparison ages the SSD with: none for a trace that carries its own aged
    state, :data:`DEFAULT_PREFILL` otherwise."""
    return 0.0 if _aged(trace) else DEFAULT_PREFILL


def aged_traces(traces: Sequence[str]) -> list[str]:
    """The traces that carry an aged state (``map --age``)."""
    return [t for t in traces if _aged(t)]


def make_jobs(
    traces: Sequence[str],
    policies: Sequence[str],
    options: SimOptions,
    *,
    ssd: str | Sequence[str],
    prefill: float | None,
) -> list[Job]:
    """Traces outer, then SSD configs, policies inner: the order of every output. Every job
    simulates with ``options`` but for its SSD (one of ``ssd``) and its prefill: ``prefill``, or
    when None :data:`DEFAULT_PREFILL` for traces without an aged state, none for aged traces (they
    carry their own)."""
    ssds = [ssd] if isinstance(ssd, str) else list(ssd)
    prefills = {t: prefill if prefill is not None else default_prefill(t) for t in traces}
    if not options.timing:
        options = dataclasses.replace(options, cdf_points=0)  # a CDF needs the timing model
    return [
        Job(trace, policy, dataclasses.replace(options, ssd=one_ssd, prefill=prefills[trace]))
        for trace in traces
        for one_ssd in ssds
        for policy in policies
    ]


def run(
    jobs: Sequence[Job],
    n_jobs: int,
    ray_address: str | None = None,
    progress: api.Progress | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run the jobs; outcomes in job order. ``on_outcome(outcome)`` as each run finishes (in the
    order they finish), then ``progress(runs_done, runs)``.

    ``ray_address`` None runs them in ``n_jobs`` local processes; "" in a local Ray instance of
    ``n_jobs`` CPUs; anything else on that Ray cluster.
    """
    done = 0

    def on_done(outcome: Outcome) -> None:
        nonlocal done
        if on_outcome is not None:
            on_outcome(outcome)
        done += 1
        if progress is not None:
            progress(done, len(jobs))

    if ray_address is not None:
        return run_jobs_ray(jobs, ray_address or None, n_jobs, on_done)
    return run_jobs(jobs, n_jobs, on_done)


def executor_name(n_jobs: int, ray_address: str | None) -> str:
    if ray_address is None:
        return f"local, {n_jobs} worker process(es)" if n_jobs > 1 else "local, in process"
    if ray_address == "":
        return f"ray, local instance with {n_jobs} CPU(s)"
    return f"ray, cluster at {ray_address}"


def command_line(
    traces: Sequence[str], policy_spec: str, ssds: Sequence[str], prefill: float | None, options: SimOptions
) -> str:
    """The compare command that reproduces these results (executor options left out; ``prefill``
    None: the default, per trace; ``options``: the warm-up, seed and timing of every run)."""
    warmup, seed, timing = options.warmup, options.seed, options.timing
    words = ["pcstream", "compare", *traces, "--policies", policy_spec]
    for ssd in ssds:
        words += ["--ssd", ssd]
    if prefill is not None:
        words += ["--prefill", f"{prefill:g}"]
    words += ["--warmup", str(warmup), "--seed", str(seed)]
    if not timing:
        words.append("--no-timing")
    return shlex.join(words)
