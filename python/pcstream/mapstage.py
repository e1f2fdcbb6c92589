"""Map: a file-level trace (``pcstream record``) goes through the ext4 model into the block trace
the file system would issue (``pcstream map``: :func:`pcstream.api.map_trace` with a
:class:`pcstream.options.MapOptions`); this module holds the figures of the engine's summary.

The model (ext4 defaults, jbd2 in ordered mode, delayed allocation, writeback timers, discard)
and its mount options are described in docs/FSMODEL.md.
"""

from __future__ import annotations

from typing import Any

# (label, keys) of the summary figures in display order; a key "a.b" is field b of object a, and
# a row with two keys shows both ("x / y").
SUMMARY_FIGURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("file events", ("events",)),
    ("requests", ("requests",)),
    ("data pages / of them O_DIRECT (at the call)", ("data_pages", "direct_pages")),
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
