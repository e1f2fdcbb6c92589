"""The Parquet footer keys of pcstream's traces (``KEY_*``) and readers of the ones Python decodes.

The keys are defined once, by the engine (crates/pcstream-trace/src/parquet/keys.rs, which says
which format carries which), and reach this module through :func:`pcstream.api.footer_keys`;
docs/FORMATS.md tables them. Every value is a string; the tables are JSON objects keyed by
decimal strings.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

from pcstream import api
from pcstream.errors import InputError, engine_kind, require_file

# The keys, named as the engine names them (footer_keys()); declared here for readers and type
# checkers, their values filled from the engine.
KEY_FORMAT: str
KEY_PAGE_BYTES: str
KEY_CAPACITY: str
KEY_SOURCE: str
# JSON: file id → path (block traces).
KEY_FILES: str
# JSON: file class id → class name.
KEY_FILE_CLASSES: str
# JSON: PC signature → frames {module, module_id, offset, symbol?}, innermost first.
KEY_PCS: str
# JSON: path id → absolute path (file-level traces).
KEY_PATHS: str
# The aged state (``map --age``): the trace's first rows and their pages.
KEY_AGED_ROWS: str
KEY_AGED_PAGES: str
# How a recorded file-level trace was captured: shim, bpf or shim+bpf.
KEY_CAPTURE: str


def _fill() -> dict[str, str]:
    """Set this module's ``KEY_*`` names from the engine; raises ImportError without one."""
    keys = api.footer_keys()
    globals().update(keys)
    return keys


# A source tree whose engine is not built still imports this module (``pcstream --help``): the
# names are then looked up on first use, by __getattr__, which reports the missing engine.
with contextlib.suppress(ImportError):
    _fill()


def __getattr__(name: str) -> str:
    if name.startswith("KEY_"):
        keys = _fill()
        if name in keys:
            return keys[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _key(name: str) -> str:
    """The key ``name`` for this module's functions, which __getattr__ does not serve."""
    value = globals().get(name)
    return value if isinstance(value, str) else __getattr__(name)


Footer = Mapping[Union[bytes, str], Union[bytes, str]]


def footer(path: str | Path) -> dict[str, str]:
    """The key-value metadata of a Parquet file, read by the engine with the trace readers' checks
    of the footer (no Parquet library imported here: pyarrow's import alone took longer). An
    InputError naming the file when it is missing, not a regular file or not readable Parquet."""
    require_file(str(path), "trace file")
    try:
        return api.footer_values(str(path))
    except Exception as exc:
        if engine_kind(exc) is None:
            raise
        raise InputError(path, str(exc)) from None


def get(meta: Footer, key: str) -> str | None:
    """The value of ``key`` in footer metadata given with bytes or str keys (as pyarrow gives it)."""
    value = meta.get(key.encode(), meta.get(key))  # type: ignore[call-overload]
    return None if value is None else _text(value)


def paths(meta: Footer) -> dict[int, str]:
    """The path table of a file-level trace: path id → path (empty when the key is absent)."""
    return {int(k): str(v) for k, v in json.loads(get(meta, _key("KEY_PATHS")) or "{}").items()}


def aged_pages(path: str | Path) -> int:
    """Pages of a block trace's aged state (0 when it has none); reads only the footer."""
    return int(get(footer(path), _key("KEY_AGED_PAGES")) or 0)


def encode_json(value: Any) -> bytes:
    """A JSON table as a footer value (compact, keys sorted)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value
