"""The Parquet footer keys of pcstream's traces, one Python definition each, and readers of the
ones Python decodes. The Rust writers define the same keys; docs/FORMATS.md tables them.

Block traces carry ``pcstream.format``, ``pcstream.page_bytes``, ``pcstream.capacity_pages``,
``pcstream.source``, ``pcstream.files``, ``pcstream.file_classes`` and ``pcstream.pcs``; file-level
traces (``pcstream record``) the same plus ``pcstream.paths``; aged block traces (``map --age``)
also ``pcstream.aged_rows`` and ``pcstream.aged_pages``. Every value is a string; the
tables are JSON objects keyed by decimal strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

KEY_FORMAT = "pcstream.format"
KEY_PAGE_BYTES = "pcstream.page_bytes"
KEY_CAPACITY = "pcstream.capacity_pages"
KEY_SOURCE = "pcstream.source"
# JSON: file id → path (block traces).
KEY_FILES = "pcstream.files"
# JSON: file class id → class name.
KEY_FILE_CLASSES = "pcstream.file_classes"
# JSON: PC signature → frames {module, module_id, offset, symbol?}, innermost first.
KEY_PCS = "pcstream.pcs"
# JSON: path id → absolute path (file-level traces).
KEY_PATHS = "pcstream.paths"
# The aged state (``map --age``): the trace's first rows and their pages.
KEY_AGED_ROWS = "pcstream.aged_rows"
KEY_AGED_PAGES = "pcstream.aged_pages"

Footer = Mapping[Union[bytes, str], Union[bytes, str]]


def footer(path: str | Path) -> dict[str, str]:
    """The key-value metadata of a Parquet file, decoded (needs pyarrow)."""
    import pyarrow.parquet as pq

    raw = pq.read_metadata(path).metadata or {}
    return {_text(k): _text(v) for k, v in raw.items()}


def get(meta: Footer, key: str) -> str | None:
    """The value of ``key`` in footer metadata given with bytes or str keys (as pyarrow gives it)."""
    value = meta.get(key.encode(), meta.get(key))  # type: ignore[call-overload]
    return None if value is None else _text(value)


def paths(meta: Footer) -> dict[int, str]:
    """The path table of a file-level trace: path id → path (empty when the key is absent)."""
    return {int(k): str(v) for k, v in json.loads(get(meta, KEY_PATHS) or "{}").items()}


def aged_pages(path: str | Path) -> int:
    """Pages of a block trace's aged state (0 when it has none); reads only the footer."""
    return int(get(footer(path), KEY_AGED_PAGES) or 0)


def encode_json(value: Any) -> bytes:
    """A JSON table as a footer value (compact, keys sorted)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value
