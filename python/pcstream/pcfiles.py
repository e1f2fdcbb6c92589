"""The files each program context (PC) of a trace writes, as path patterns, for the PC labels
(:mod:`pcstream.pclabels`): from a block trace's ``pc``, ``file`` and ``pages`` columns (names in
``pcstream.files``) or a file-level trace's ``pc``, ``path`` and ``len`` (``pcstream.paths``).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pcstream import tracemeta
from pcstream.errors import require_file

# Files shown per PC, and the share of its writes above which the first one is shown alone.
MAX_FILES = 2
ALONE_SHARE = 0.9
WRITE_OP = 0  # block-trace op code of a write


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


def files_by_pc(trace: str | Path) -> dict[str, Counter[str]]:
    """PC (decimal string) → path pattern → pages (block trace: ``pc``, ``file``, ``pages``,
    writes only, names from ``pcstream.files``) or bytes (file-level trace: ``pc``, ``path``,
    ``len`` of the ``write`` rows, names from ``pcstream.paths``). Rows without a PC or a file
    are left out; a trace without these columns gives {}. Streams the file in batches."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    require_file(str(trace), "trace file")  # pyarrow would wait on a FIFO
    pf = pq.ParquetFile(trace)
    meta = pf.metadata.metadata or {}
    names = set(pf.schema_arrow.names)
    if {"pc", "file", "pages"} <= names:
        file_col, size_col, table_key = "file", "pages", tracemeta.KEY_FILES
    elif {"pc", "path", "len", "op"} <= names:
        file_col, size_col, table_key = "path", "len", tracemeta.KEY_PATHS
    else:
        return {}
    files = {str(k): str(v) for k, v in json.loads(tracemeta.get(meta, table_key) or "{}").items()}
    patterns: dict[str, str] = {}
    out: dict[str, Counter[str]] = {}
    columns = ["pc", file_col, size_col] + (["op"] if "op" in names else [])
    for batch in pf.iter_batches(columns=columns, batch_size=1 << 20):
        table = pa.Table.from_batches([batch])
        zero_pc, zero_file = pa.scalar(0, table["pc"].type), pa.scalar(0, table[file_col].type)
        keep = pc.and_(pc.not_equal(table["pc"], zero_pc), pc.not_equal(table[file_col], zero_file))
        if "op" in names:
            write = "write" if file_col == "path" else WRITE_OP
            op = table["op"]
            if pa.types.is_dictionary(op.type):
                op = op.cast(pa.string())
            keep = pc.and_(keep, pc.equal(op, pa.scalar(write, op.type)))
        table = table.filter(keep)
        if table.num_rows == 0:
            continue
        grouped = table.group_by(["pc", file_col]).aggregate([(size_col, "sum")])
        for sig, file_id, size in zip(
            grouped["pc"].to_pylist(), grouped[file_col].to_pylist(), grouped[f"{size_col}_sum"].to_pylist()
        ):
            key = str(file_id)
            if key not in patterns:
                patterns[key] = path_pattern(files[key]) if key in files else f"file {key}"
            out.setdefault(str(sig), Counter())[patterns[key]] += int(size)
    return out
