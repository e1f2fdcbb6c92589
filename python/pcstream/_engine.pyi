"""Type stub of the Rust engine module (crates/pcstream-py, built by maturin, abi3).

Every function that returns ``str`` returns one JSON document; :mod:`pcstream.api` decodes them.
Units: pages are 4 KiB, logical time is host pages written, latencies are in microseconds.
"""

from collections.abc import Callable

class PcstreamError(Exception):
    """Base of every error the engine reports to a user (never a bug)."""

class InputError(PcstreamError):
    """A bad, missing or malformed trace or file (CLI exit status 3)."""

class ConfigError(PcstreamError):
    """A bad SSD config, an impossible geometry or an unknown preset (CLI exit status 4)."""

class UsageError(PcstreamError):
    """An unknown policy or generator kind, or a bad parameter (CLI exit status 2)."""

def version() -> str: ...
def policies() -> list[dict[str, object]]:
    """``[{"name": str, "sees": list[str], "summary": str}, ...]`` in registry order."""

def presets() -> list[str]: ...
def preset_toml(name: str) -> str: ...
def ssd_summary(ssd: str) -> str:
    """JSON summary of an SSD given by preset name or path to a TOML file."""

def simulate(
    trace: str,
    policy: str,
    ssd: str = "paper",
    prefill: float = 0.0,
    warmup: int = 0,
    seed: int = 0,
    timing: bool = True,
    table: str | None = None,
    params: dict[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cdf_points: int = 0,
) -> str:
    """Simulate one block trace under one placement policy; returns one JSON result object.

    ``progress(done_rows, total_rows)`` is called about every million rows. Honours Ctrl-C.
    """

def info(trace: str) -> str:
    """JSON summary of a block trace."""

def gen(kind: str, out: str, params: dict[str, str]) -> str:
    """Write a synthetic block trace to ``out``; returns a JSON summary (rows, pages, path)."""

def bench(
    ssd: str = "paper", policy: str = "baseline", pages: int = 0, timing: bool = False, seed: int = 1
) -> str:
    """Engine throughput benchmark; returns JSON (page_ops_per_s, host_pages_per_s, peak_rss_bytes, ...)."""
