"""Map: a file-level trace (``pcstream record``) through the ext4 model into the block trace the
file system would issue (``pcstream map``), and the figures of the engine's summary.

The model (ext4 defaults, jbd2 in ordered mode, delayed allocation, writeback timers, discard)
and its mount options are described in docs/FSMODEL.md.
"""

from __future__ import annotations

from typing import Any

from pcstream import api
from pcstream.aging import Aging
from pcstream.options import MapOptions

# (label, keys) of the summary figures in display order; a key "a.b" is field b of object a, and
# a row with two keys shows both ("x / y").
SUMMARY_FIGURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("file events", ("events",)),
    ("requests", ("requests",)),
    ("data pages", ("data_pages",)),
    ("journal pages", ("journal_pages",)),
    ("inode-table pages", ("metadata_pages.inode",)),
    ("directory pages", ("metadata_pages.directory",)),
    ("bitmap / descriptor pages", ("metadata_pages.bitmap",)),
    ("other metadata pages", ("metadata_pages.other",)),
    ("trimmed pages / of them free space (discarded again)", ("trim_pages", "trim_free_pages")),
    ("cache flushes", ("flushes",)),
    ("pages dirtied / dropped dirty (never written)", ("dirtied_pages", "absorbed_pages")),
    ("writes onto dirty pages (absorbed)", ("absorbed_writes",)),
    ("files", ("files",)),
    ("commits / checkpoints", ("commits", "checkpoints")),
    ("peak dirty pages", ("peak_dirty_pages",)),
    ("capacity pages / free at end", ("capacity_pages", "free_pages")),
    ("aged: pages / share in use", ("aged.pages", "aged.used_share")),
    ("aged: files / stale pages", ("aged.files", "aged.stale_blocks")),
)


def map_trace(
    file_trace: str,
    out: str,
    capacity_pages: int,
    mount_opts: str = "",
    device: int | None = None,
    progress: api.Progress | None = None,
    age: Aging | None = None,
) -> dict[str, Any]:
    """Map ``file_trace`` onto an ext4 of ``capacity_pages`` 4 KiB blocks mounted with
    ``mount_opts``, writing the block trace ``out``; returns the engine's MapSummary.
    ``device``: model only the files of this ``st_dev``; ``age``: start from an aged file system.
    ``progress(events_done, events_total)``. (:func:`pcstream.api.map_trace` with the
    :class:`pcstream.options.MapOptions` these make.)"""
    aging = age or Aging(None)
    options = MapOptions(
        capacity=capacity_pages,
        mount_opts=mount_opts,
        device=device,
        age=aging.share,
        age_seed=aging.seed,
        age_churn=aging.churn,
    )
    return api.map_trace(file_trace, out, options, progress=progress)


def summary_figures(summary: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """(label, values) of :data:`SUMMARY_FIGURES`; a missing field is None."""

    def field(key: str) -> Any:
        value: Any = summary
        for part in key.split("."):
            value = (value or {}).get(part)
        return value

    rows = [(label, [field(key) for key in keys]) for label, keys in SUMMARY_FIGURES]
    # The aging rows only for aged traces.
    return [(label, values) for label, values in rows if not label.startswith("aged") or summary.get("aged")]
