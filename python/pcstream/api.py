"""Typed Python view of the engine: the one module that calls :mod:`pcstream._engine`.

Each function calls the engine and decodes its JSON answer into plain dicts, so the library, the
CLI, the tests and notebooks share one entry point. The engine is imported on first use: a source
tree without a built engine still answers ``--help``. The JSON fields are those of
docs/FORMATS.md.

Units everywhere: a page is 4 KiB; logical time is the number of host pages written; latencies are
microseconds; ``prefill`` is a share of the SSD's logical pages; ``warmup`` is in host pages.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Optional

from pcstream.errors import BadParameter
from pcstream.options import MAX_SIZE_PAGES, MapOptions, RecordOptions, SimOptions

Json = dict[str, Any]
# ``progress(done, total)``: called by a long engine call as it goes (rows, bytes or events).
Progress = Callable[[int, int], None]
# ``bar(description, unit)``: a context giving the Progress of one engine call, or None; the CLI
# passes its progress bar, so a library function making several calls shows one bar per call.
ProgressBar = Callable[[str, str], AbstractContextManager[Optional[Progress]]]


@contextlib.contextmanager
def no_progress_bar(_description: str, _unit: str) -> Iterator[Progress | None]:
    """The ProgressBar that shows nothing."""
    yield None


# The fields every simulate result carries (docs/FORMATS.md, "Result JSON"); tests check them.
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
    """The compiled engine module (raises ImportError naming ``pcstream._engine`` if not built).

    For this module's functions only: everything else calls them."""
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


def simulate(
    trace: str, policy: str, options: SimOptions | None = None, *, progress: Progress | None = None
) -> Json:
    """Simulate one trace under one policy with ``options`` (the defaults when None); returns the
    result object (see RESULT_FIELDS). ``progress(done_rows, total_rows)``."""
    return _decode(simulate_json(trace, policy, options, progress=progress))


def simulate_json(
    trace: str, policy: str, options: SimOptions | None = None, *, progress: Progress | None = None
) -> str:
    """As :func:`simulate`, but the engine's JSON text unchanged (byte-stable for equal inputs)."""
    return str(engine().simulate(trace, policy, options or SimOptions(), progress=progress))


def table_streams(
    table: str, ssd: str = "paper", policy: str = "pcstream", params: dict[str, str] | None = None
) -> str:
    """A persistent PC table (JSON text) loaded as a simulation on ``ssd`` loads it (re-clustered for
    its stream count) and saved again: the streams and centroids that simulation starts with."""
    return str(engine().table_streams(table, ssd=ssd, policy=policy, params=params))


def info(trace: str) -> Json:
    """Summary of a block trace (rows, pages written/trimmed/read, footprint, PCs, ...)."""
    return _decode(engine().info(trace))


def info_labelled(trace: str) -> tuple[Json, dict[str, str] | None]:
    """:func:`info`, and the label of each of its top PCs (``pcs.top``, PC 0 left out): the frames
    that tell it from every PC of the trace's ``pcstream.pcs`` (None when the trace names no PC),
    from the PC table the engine parses once for both."""
    summary, labels = engine().info_labelled(trace)
    return _decode(summary), None if labels is None else {str(sig): str(text) for sig, text in labels}


def footer_values(trace: str) -> dict[str, str]:
    """The footer's key-value pairs of a Parquet file (the last value of a key given twice), after
    the trace readers' checks of the footer: an engine InputError when they fail."""
    return {str(k): str(v) for k, v in engine().footer_values(trace)}


def pc_file_amounts(trace: str) -> list[tuple[int, int, int]]:
    """(PC, file id, amount written) of every PC and file of ``trace`` with writes: pages of a
    block trace's writes by ``file``, bytes of a file-level trace's ``write`` rows by ``path``;
    rows without a PC or a file are left out. Streams the trace."""
    return [(int(pc), int(f), int(n)) for pc, f, n in engine().pc_file_amounts(trace)]


def pc_labels(pcs_json: str, wanted: Sequence[str]) -> tuple[int, list[str]]:
    """(the PCs of the ``pcstream.pcs`` table ``pcs_json``, the label of each PC of ``wanted``:
    the frames that tell it from every PC of the table). ValueError for a table of the wrong shape."""
    count, labels = engine().pc_labels(pcs_json, list(wanted))
    return int(count), [str(label) for label in labels]


def short_symbol(symbol: str) -> str:
    """A demangled C++ name without its parameter list and qualifiers (``ns::f(int) const`` →
    ``ns::f``); other names unchanged."""
    return str(engine().short_symbol(symbol))


def gen(kind: str, out: str, params: dict[str, str]) -> Json:
    """Write a synthetic block trace; returns {path, kind, seed, rows, writes, trims, reads,
    capacity_pages, files}, where writes, trims and reads are {requests, pages}."""
    return _decode(engine().gen(kind, out, params))


def written_pages(gen_summary: Json) -> int:
    """Pages written by a generated trace: ``writes.pages`` of the summary :func:`gen` returns."""
    return int(gen_summary["writes"]["pages"])


def bench(options: SimOptions, *, policy: str = "baseline", pages: int = 0) -> Json:
    """Engine throughput on a synthetic workload of ``pages`` host pages (0: the engine's default
    for the SSD) simulated as ``options`` say (its SSD, timing and seed, the workload's seed):
    page_ops_per_s, peak_rss_bytes, ..."""
    o = options
    return _decode(engine().bench(ssd=o.ssd, policy=policy, pages=pages, timing=o.timing, seed=o.seed))


def record_convert(
    logdir: str, out: str, source: str, options: RecordOptions, capture: str | None = None
) -> Json:
    """Convert the shim logs in ``logdir`` into the file-level trace ``out``; returns {records,
    writes, write_bytes, processes, signatures, paths, warnings, lost_processes, torn_bytes,
    coalesced_writes}. Of ``options`` the engine reads ``coalesce``: fold runs of small
    contiguous writes (docs/RECORD.md). ``capture``: the trace's ``pcstream.capture`` (shim, bpf,
    shim+bpf; None: not written)."""
    return _decode(engine().record_convert(logdir, out, source, options, capture))


def import_trace(
    format: str,
    input: str,
    out: str,
    *,
    capacity_pages: int | None = None,
    device: str | None = None,
    skip_bad: int = 0,
    meta_map: Sequence[tuple[int, int, int]] | None = None,
    progress: Progress | None = None,
    label: str | None = None,
) -> Json:
    """Import a field block trace (blkparse, msr, alibaba, tencent, fio, mqsim) into block-trace
    Parquet; returns {lines, rows, writes, reads, trims, flushes, write_pages, read_pages,
    trim_pages, filtered_out, capacity_pages, skipped, skipped_count}.

    ``label``: the input's name in the trace's ``pcstream.source`` and in errors (``LABEL:LINE``)
    when it is not ``input`` itself.

    ``meta_map``: sorted, disjoint ``(first page, pages, meta class)`` ranges that set the ``meta``
    column by address. ``progress(bytes_read, file_bytes)``. No output is left on any error.
    """
    if capacity_pages is not None and not 0 < capacity_pages <= MAX_SIZE_PAGES:
        raise BadParameter(
            "capacity_pages", capacity_pages, "{param} {value}: must be between 1 and 2^64 - 1 pages"
        )
    return _decode(
        engine().import_trace(
            format,
            input,
            out,
            capacity_pages=capacity_pages,
            device=device,
            skip_bad=skip_bad,
            meta_map=list(meta_map) if meta_map is not None else None,
            progress=progress,
            label=label,
        )
    )


def map_trace(file_trace: str, out: str, options: MapOptions, *, progress: Progress | None = None) -> Json:
    """Map a file-level trace through the ext4 model into the block trace ``out`` as ``options``
    say; returns the MapSummary {events, requests, data_pages, journal_pages, metadata_pages
    {inode, directory, bitmap, other}, trim_pages, flushes, absorbed_pages, files, commits,
    checkpoints, peak_dirty_pages, capacity_pages, free_pages, unknown_ops, warnings, aged}.

    ``options.device``: model only the files with this ``st_dev``. ``options.age``: first fill
    the file system with seeded cold files to this share of its blocks (``age_seed``, after
    ``age_churn`` create/delete rounds); ``aged`` then describes the state the trace starts from.
    ``progress(events_done, events_total)``.
    """
    return _decode(engine().map_trace(file_trace, out, options, progress=progress))


def aging_plan(
    capacity_pages: int, share: float, seed: int = 0, churn: int = 0, mount_opts: str = ""
) -> list[Json]:
    """The file operations ``map --age`` ages the model with, in order, to replay on a real file
    system: ``{"op": "create", "path", "bytes"}``, ``{"op": "delete", "path"}``, ``{"op": "sync"}``
    (paths relative to the file system's root)."""
    plan = json.loads(
        engine().aging_plan(capacity_pages, share, seed=seed, churn=churn, mount_opts=mount_opts)
    )
    if not isinstance(plan, list):
        raise TypeError(f"the engine returned {type(plan).__name__}, expected a JSON list")
    return plan


def kept_outputs() -> list[str]:
    """The trace files the last engine call that writes renamed into place, complete. A signal
    that stops a verb after its output was renamed leaves the output in place; this tells it
    from one that came before (``nothing was written``). Empty when the engine was never used."""
    if "pcstream._engine" not in sys.modules:
        return []
    return [str(path) for path in engine().kept_outputs()]


def stop_requested() -> bool:
    """Whether a signal (SIGINT, SIGTERM) asked the engine's last call to stop; False when the
    engine was never used."""
    return "pcstream._engine" in sys.modules and bool(engine().stop_requested())


def footer_keys() -> dict[str, str]:
    """The footer keys of both trace formats by their Rust constant's name (``KEY_PCS``, ...), as
    the engine defines them (:mod:`pcstream.tracemeta` exposes them)."""
    return {str(name): str(key) for name, key in engine().footer_keys().items()}


def input_limit(what: str) -> int:
    """The size limit in bytes of a small input file: ``ssd_config``, ``mix_spec`` or
    ``pc_table``, as the engine defines it (the engine's own readers keep to it too)."""
    return int(engine().input_limits()[what])


def set_footer_value(trace: str, key: str, value: str) -> None:
    """Replace footer key ``key`` of ``trace`` (either trace format) with ``value``: the rows and
    every other footer pair are kept, and the file is replaced atomically."""
    engine().set_footer_value(trace, key, value)


def write_block_trace(
    out: str, columns: Mapping[str, bytes], meta: Mapping[str, str], *, keep_unused_pcs: bool = False
) -> int:
    """Write the block trace ``out`` with the engine's writer (rows checked, atomic); returns its
    rows. ``columns``: each of the ten block-trace columns (docs/FORMATS.md) as the little-endian
    bytes of its values at the column's width (numpy's ``tobytes()``), all of one length.
    ``meta``: ``pcstream.*`` footer pairs (the format and page size are the writer's).
    ``keep_unused_pcs``: keep the PC table whole rather than only the PCs of the rows."""
    return int(engine().write_block_trace(out, dict(columns), dict(meta), keep_unused_pcs=keep_unused_pcs))


def _decode(text: str) -> Json:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError(f"the engine returned {type(value).__name__}, expected a JSON object")
    return value
