"""Names for the frames of a file-level trace's PC table (footer key ``pcstream.pcs``: signature
-> frames ``{module, module_id, offset}``): a ``symbol`` for each frame whose module can still be
read, from binutils: ``addr2line -f -C`` (one process per module, debug info or symbol table),
checked against the symbol sizes ``nm -S`` reports so that an address past the end of the last
exported symbol is not given its name. The trace is rewritten atomically with pyarrow (the rows
are unchanged).
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pcstream import tracemeta

_TEXT_TYPES = frozenset("tTwWi")


def _nm_table(module: str) -> list[tuple[int, int, str]]:
    """(start, size, name) of the function symbols of ``module``, sorted; the static symbol table,
    else the dynamic one (stripped libraries keep only that)."""
    for extra in ([], ["-D"]):
        proc = subprocess.run(
            ["nm", *extra, "-S", "-C", "--defined-only", module], capture_output=True, text=True, check=False
        )
        table = []
        for line in proc.stdout.splitlines():
            parts = line.split(maxsplit=3)
            if len(parts) == 4 and parts[2] in _TEXT_TYPES:
                try:
                    table.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
                except ValueError:
                    continue
        if table:
            table.sort()
            return table
    return []


def _within(table: list[tuple[int, int, str]], addr: int, name: str) -> bool:
    """Whether ``addr`` lies inside a symbol called ``name`` (or no table says otherwise)."""
    if not table:
        return True
    i = bisect.bisect_right(table, (addr, float("inf"), "")) - 1
    while i >= 0 and table[i][0] + max(table[i][1], 1) > addr - (1 << 20):
        start, size, sym = table[i]
        if start <= addr < start + max(size, 1) and sym == name:
            return True
        i -= 1
    return False


def module_symbols(module: str, offsets: Iterable[int]) -> dict[int, str]:
    """Function names of return addresses ``offsets`` (from the module's load bias) in ``module``.

    The address looked up is offset - 1, inside the call instruction (a return address may be the
    first byte of the next function). Names without a source line (from a symbol table, not debug
    info) must lie inside that symbol's size; unknown addresses get no entry.
    """
    offs = sorted(set(offsets))
    if not offs or not os.path.isfile(module):
        return {}
    query = "".join(f"{max(o - 1, 0):x}\n" for o in offs)
    proc = subprocess.run(
        ["addr2line", "-f", "-C", "-e", module], input=query, capture_output=True, text=True, check=False
    )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != 2 * len(offs):
        return {}
    table: list[tuple[int, int, str]] | None = None
    names = {}
    for k, off in enumerate(offs):
        name, where = lines[2 * k], lines[2 * k + 1]
        if not name or name == "??":
            continue
        if where.startswith("??"):
            if table is None:
                table = _nm_table(module)
            if not _within(table, max(off - 1, 0), name):
                continue
        names[off] = name
    return names


def symbolize(trace: Path) -> int:
    """Add ``symbol`` to the frames of ``trace``'s PC table; returns the frames named.

    Rewrites the file atomically (a temporary file beside it, then a rename); the rows and every
    other footer key are kept. Needs pyarrow and binutils (``addr2line``, ``nm``).
    """
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(trace)
    meta = dict(pf.metadata.metadata or {})
    meta.pop(b"ARROW:schema", None)
    raw = tracemeta.get(meta, tracemeta.KEY_PCS)
    if raw is None:
        return 0
    pcs: dict[str, list[dict[str, Any]]] = json.loads(raw)
    wanted: dict[str, set[int]] = {}
    for frames in pcs.values():
        for f in frames:
            wanted.setdefault(f["module"], set()).add(int(f["offset"]))
    names = {m: module_symbols(m, offs) for m, offs in sorted(wanted.items())}
    named = 0
    for frames in pcs.values():
        for f in frames:
            sym = names[f["module"]].get(int(f["offset"]))
            if sym is not None:
                f["symbol"] = sym
                named += 1
    if named == 0:
        return 0
    meta[tracemeta.KEY_PCS.encode()] = tracemeta.encode_json(pcs)
    schema = pf.schema_arrow.with_metadata(meta)
    tmp = trace.with_name(f"{trace.name}.sym-{os.getpid()}")
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as w:
            for i in range(pf.num_row_groups):
                w.write_table(pf.read_row_group(i).replace_schema_metadata(meta))
        os.replace(tmp, trace)
    finally:
        if tmp.exists():
            tmp.unlink()
    return named


def symbolize_or_warn(out: Path, summary: dict[str, Any]) -> None:
    missing = [tool for tool in ("addr2line", "nm") if shutil.which(tool) is None]
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        missing.append("pyarrow")
    if missing:
        summary.setdefault("warnings", []).append(
            f"frames not symbolized: {', '.join(missing)} not found (install binutils / pyarrow)"
        )
        summary["symbolized"] = 0
        return
    summary["symbolized"] = symbolize(out)
