"""Typed Python view of the engine.

Each function calls :mod:`pcstream._engine` and decodes its JSON answer into plain dicts, so the
CLI, the tests and notebooks share one entry point. The engine is imported on first use: a source
tree without a built engine still answers ``--help``.

Units everywhere: a page is 4 KiB; logical time is the number of host pages written; latencies are
microseconds; ``prefill`` is a share of the SSD's logical pages; ``warmup`` is in host pages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

Json = dict[str, Any]
Progress = Callable[[int, int], None]

# The fields every simulate result carries (design.md, "CLI"); tests check them.
RESULT_FIELDS: tuple[str, ...] = (
    "trace",
    "policy",
    "ssd",
    "seed",
    "prefill",
    "warmup",
    "waf",
    "host_pages",
    "gc_pages",
    "erases",
    "trims_pages",
    "reads_pages",
    "iops",
    "lat_p50_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_mean_us",
    "stream0_share",
    "per_stream",
    "policy_state_bytes",
    "wall_s",
    "host_pages_per_s",
    "page_ops_per_s",
    "open_write_points",
)

# Fields that measure the machine, not the simulated SSD: they differ between identical runs.
VOLATILE_FIELDS: frozenset[str] = frozenset({"wall_s", "host_pages_per_s", "page_ops_per_s"})


def engine() -> ModuleType:
    """The compiled engine module (raises ImportError naming ``pcstream._engine`` if not built)."""
    from pcstream import _engine

    return _engine


def version() -> str:
    return str(engine().version())


def policies() -> list[Json]:
    """``[{"name", "sees", "summary"}]`` in registry order."""
    return [dict(p) for p in engine().policies()]


def policy_names() -> list[str]:
    return [str(p["name"]) for p in policies()]


def presets() -> list[str]:
    return [str(name) for name in engine().presets()]


def preset_toml(name: str) -> str:
    return str(engine().preset_toml(name))


def ssd_summary(ssd: str) -> Json:
    """Geometry and FTL settings of a preset name or an SSD TOML file."""
    return _decode(engine().ssd_summary(ssd))


def simulate(trace: str, policy: str, **options: Any) -> Json:
    """Simulate one trace under one policy; returns the result object (see RESULT_FIELDS).

    Takes the keyword options of :func:`simulate_json`.
    """
    return _decode(simulate_json(trace, policy, **options))


def simulate_json(
    trace: str,
    policy: str,
    *,
    ssd: str = "paper",
    prefill: float = 0.0,
    warmup: int = 0,
    seed: int = 0,
    timing: bool = True,
    table: str | None = None,
    params: dict[str, str] | None = None,
    progress: Progress | None = None,
    cdf_points: int = 0,
) -> str:
    """As :func:`simulate`, but the engine's JSON text unchanged (byte-stable for equal inputs)."""
    return str(
        engine().simulate(
            trace,
            policy,
            ssd=ssd,
            prefill=prefill,
            warmup=warmup,
            seed=seed,
            timing=timing,
            table=table,
            params=params,
            progress=progress,
            cdf_points=cdf_points,
        )
    )


def info(trace: str) -> Json:
    """Summary of a block trace (rows, pages written/trimmed/read, footprint, PCs, ...)."""
    return _decode(engine().info(trace))


def gen(kind: str, out: str, params: dict[str, str]) -> Json:
    """Write a synthetic block trace; returns {rows, pages, path, ...}."""
    return _decode(engine().gen(kind, out, params))


def written_pages(gen_summary: Json) -> int | None:
    """Pages written by a generated trace, whichever way the summary spells it.

    The contract names it ``pages``; engines have also answered ``write_pages`` or ``writes.pages``.
    """
    for value in (
        gen_summary.get("pages"),
        gen_summary.get("write_pages"),
        (gen_summary.get("writes") or {}).get("pages"),
    ):
        if isinstance(value, int):
            return value
    return None


def bench(
    *, ssd: str = "paper", policy: str = "baseline", pages: int = 0, timing: bool = False, seed: int = 1
) -> Json:
    """Engine throughput on a synthetic workload (page_ops_per_s, peak_rss_bytes, ...)."""
    return _decode(engine().bench(ssd=ssd, policy=policy, pages=pages, timing=timing, seed=seed))


def _decode(text: str) -> Json:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"the engine returned {type(value).__name__}, expected a JSON object")
    return value
