"""Type stub of the Rust engine module (crates/pcstream-py, built by maturin, abi3).

Every function that returns ``str`` returns one JSON document; :mod:`pcstream.api` decodes them.
Units: pages are 4 KiB, logical time is host pages written, latencies are in microseconds.
"""

from collections.abc import Callable

from pcstream.options import MapOptions, RecordOptions, SimOptions

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

def table_streams(
    table: str, ssd: str = "paper", policy: str = "pcstream", params: dict[str, str] | None = None
) -> str:
    """A persistent PC table loaded as a simulation on ``ssd`` loads it, saved again (JSON)."""

def simulate(
    trace: str,
    policy: str,
    options: SimOptions,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Simulate one block trace under one placement policy with ``options`` (its attributes are
    read); returns one JSON result object.

    ``progress(done_rows, total_rows)`` is called about every million rows. Honours Ctrl-C.
    """

def info(trace: str) -> str:
    """JSON summary of a block trace."""

def info_labelled(trace: str) -> tuple[str, list[tuple[str, str]] | None]:
    """:func:`info`, and (signature, label) of each of its top PCs but PC 0 (None when the trace
    names no PC)."""

def pc_labels(pcs_json: str, wanted: list[str]) -> tuple[int, list[str]]:
    """(the PCs of the ``pcstream.pcs`` table ``pcs_json``, the label of each PC of ``wanted``);
    ValueError for a table of another shape."""

def short_symbol(symbol: str) -> str:
    """A demangled C++ name without its parameter list and qualifiers."""

def footer_values(trace: str) -> list[tuple[str, str]]:
    """The footer's key-value pairs of the Parquet file ``trace``, in file order."""

def pc_file_amounts(trace: str) -> list[tuple[int, int, int]]:
    """(PC, file id, amount written) of every PC and file with writes: pages of a block trace's
    writes by ``file``, bytes of a file-level trace's ``write`` rows by ``path``."""

def gen(kind: str, out: str, params: dict[str, str]) -> str:
    """Write a synthetic block trace to ``out``; returns a JSON summary (path, kind, seed, rows,
    writes / trims / reads ``{requests, pages}``, capacity_pages, files)."""

def bench(
    ssd: str = "paper", policy: str = "baseline", pages: int = 0, timing: bool = False, seed: int = 1
) -> str:
    """Engine throughput benchmark; returns JSON (page_ops_per_s, host_pages_per_s, peak_rss_bytes, ...)."""

def record_convert(
    logdir: str, out: str, source: str, options: RecordOptions, capture: str | None = None
) -> str:
    """Convert the shim logs in ``logdir`` into the file-level trace ``out`` as ``options`` say
    (its ``coalesce`` is read: fold runs of small contiguous writes), with ``pcstream.capture`` =
    ``capture`` when given; JSON summary (records,
    writes, write_bytes, processes, signatures, paths, warnings, lost_processes, torn_bytes,
    coalesced_writes)."""

def import_trace(
    format: str,
    input: str,
    out: str,
    capacity_pages: int | None = None,
    device: str | None = None,
    skip_bad: int = 0,
    meta_map: list[tuple[int, int, int]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    label: str | None = None,
) -> str:
    """Import a field block trace (blkparse, msr, alibaba, tencent, fio, mqsim) into block-trace
    Parquet; JSON report (lines, rows, writes, reads, trims, flushes, write_pages, read_pages,
    trim_pages, filtered_out, capacity_pages, skipped, skipped_count).

    ``meta_map``: sorted, disjoint ``(first page, pages, meta class)`` ranges that set the ``meta``
    column by address (requests are split at range boundaries). ``progress(bytes_read,
    file_bytes)``. A malformed line is an InputError naming ``FILE:LINE``; no output is left on
    any error. Honours Ctrl-C.
    """

def map_trace(
    input: str,
    out: str,
    options: MapOptions,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Map a file-level trace through the ext4 model into a block trace as ``options`` say (its
    attributes are read); JSON MapSummary (events, requests, data_pages, journal_pages,
    metadata_pages{inode, directory, bitmap, other}, trim_pages, flushes, absorbed_pages, files,
    commits, checkpoints, peak_dirty_pages, capacity_pages, free_pages, unknown_ops, warnings,
    aged).

    ``options.device``: model only events about files with this ``st_dev`` (others are skipped
    and counted in a warning). ``progress(events_done, events_total)``. Honours Ctrl-C.
    """

def kept_outputs() -> list[str]:
    """The outputs the last engine call that writes renamed into place, complete."""

def stop_requested() -> bool:
    """Whether a signal (SIGINT, SIGTERM) asked the last engine call to stop."""

def footer_keys() -> dict[str, str]:
    """The footer keys of both trace formats by their Rust constant's name (``KEY_PCS``, ...):
    their one definition."""

def input_limits() -> dict[str, int]:
    """The size limits in bytes of the small input files (``ssd_config``, ``mix_spec``,
    ``pc_table``): their one definition."""

def set_footer_value(path: str, key: str, value: str) -> None:
    """Replace one footer value of a trace (either format), rows and other pairs kept; atomic."""

def write_block_trace(
    out: str, columns: dict[str, bytes], meta: dict[str, str], keep_unused_pcs: bool = False
) -> int:
    """Write the block trace ``out`` through the engine's writer (rows checked, written
    atomically): ``columns`` maps each of the ten block-trace columns to the little-endian bytes
    of its values at the column's width, all of one length; ``meta`` holds ``pcstream.*`` footer
    pairs (the format and page size are the writer's). ``keep_unused_pcs``: keep the PC table
    whole, not only the PCs of the rows. Returns the rows written; a bad row or key is an
    InputError and leaves no output.
    """
