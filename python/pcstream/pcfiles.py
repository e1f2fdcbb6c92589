"""The files each program context (PC) of a trace writes, as path patterns, for the PC labels
(:mod:`pcstream.pclabels`): from a block trace's ``pc``, ``file`` and ``pages`` columns (names in
``pcstream.files``) or a file-level trace's ``pc``, ``path`` and ``len`` (``pcstream.paths``).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path

from pcstream import api, tracemeta
from pcstream.errors import InputError, engine_kind

# Files shown per PC, and the share of its writes above which the first one is shown alone.
MAX_FILES = 2
ALONE_SHARE = 0.9


_EXTENSION = re.compile(r"(.+?)(\.[A-Za-z][A-Za-z0-9_]{0,7})")
_NUMBERS = re.compile(r"[0-9A-Fa-f]{8,}|\d{3,}|^\d+$")


def _generalise(part: str) -> str:
    """Numbers that name one file of many as ``*``: hex runs of 8+, digit runs of 3+, an
    all-digit part (``MANIFEST-000005`` → ``MANIFEST-*``, ``.tmp_21249`` → ``.tmp_*``; ``ext4``
    stays)."""
    return re.sub(r"\*+", "*", _NUMBERS.sub("*", part))


def path_pattern(path: str) -> str:
    """A file's path as a pattern of its kind: the directory (its last two components when long)
    and ``*`` plus the extension (``/db/000012.sst`` → ``/db/*.sst``); numbers that tell files
    of one kind apart become ``*`` in the other names and in directories (``…/pg_wal/*``,
    ``…/base/*/*``)."""
    directory, name = os.path.split(path)
    m = _EXTENSION.fullmatch(name)
    name = "*" + m.group(2) if m else _generalise(name)
    parts = [_generalise(p) for p in directory.split("/") if p]
    if len(directory) > 24 and len(parts) > 2:
        directory = "…/" + "/".join(parts[-2:])
    else:
        directory = ("/" if directory.startswith("/") else "") + "/".join(parts)
    return f"{directory.rstrip('/')}/{name}" if directory else name


def files_text(counts: Mapping[str, int]) -> str:
    """``…/db/*.sst`` when one pattern has most of the writes, else the first ones with shares."""
    total = sum(counts.values())
    if total <= 0:
        return ""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if ranked[0][1] >= ALONE_SHARE * total:
        return ranked[0][0]
    shown = [f"{pattern} {100 * n / total:.0f} %" for pattern, n in ranked[:MAX_FILES]]
    return ", ".join(shown) + (", …" if len(ranked) > MAX_FILES else "")


def files_by_pc(
    trace: str | Path, footer: tracemeta.Footer | None = None, only: Collection[str] | None = None
) -> dict[str, Counter[str]]:
    """PC (decimal string) → path pattern → pages (block trace: ``pc``, ``file``, ``pages``,
    writes only, names from ``pcstream.files``) or bytes (file-level trace: ``pc``, ``path``,
    ``len`` of the ``write`` rows, names from ``pcstream.paths``). Rows without a PC or a file
    are left out. The engine streams the trace (:func:`pcstream.api.pc_file_amounts`).
    ``footer``: the trace's footer when already read; ``only``: the PCs wanted (default all)."""
    meta = tracemeta.footer(trace) if footer is None else footer  # checks the file first
    try:
        amounts = api.pc_file_amounts(str(trace))
    except Exception as exc:
        if engine_kind(exc) is None:
            raise
        raise InputError(trace, str(exc)) from None
    table_key = (
        tracemeta.KEY_PATHS if tracemeta.get(meta, tracemeta.KEY_PATHS) is not None else tracemeta.KEY_FILES
    )
    files = {str(k): str(v) for k, v in json.loads(tracemeta.get(meta, table_key) or "{}").items()}
    patterns: dict[str, str] = {}
    out: dict[str, Counter[str]] = {}
    for sig, file_id, size in amounts:
        if only is not None and str(sig) not in only:
            continue
        key = str(file_id)
        if key not in patterns:
            patterns[key] = path_pattern(files[key]) if key in files else f"file {key}"
        out.setdefault(str(sig), Counter())[patterns[key]] += size
    return out
