"""Names for the frames of a file-level trace's PC table (footer key ``pcstream.pcs``: signature
-> frames ``{module, module_id, offset}``): a ``symbol`` for each frame whose module can still be
read, from binutils: ``addr2line -f -C`` (one process per module, debug info or symbol table),
checked against the symbol sizes ``nm -S`` reports so that an address past the end of the last
exported symbol is not given its name. The engine rewrites the trace's PC table atomically (the
rows are unchanged).

Stripped modules are named from a separate debug file when one is found (docs/RECORD.md, "Names
for stripped programs"): in each directory given (``record --symbols DIR``) and then in
``/usr/lib/debug``, by build-id (``DIR/.build-id/xx/yyyy.debug``) and by path
(``DIR/usr/lib/...so.debug``, ``DIR/usr/lib/<its .gnu_debuglink name>`` or an unstripped copy at
``DIR/usr/lib/...so``). The shim records a hash of the build-id (``module_id``), not the build-id
itself, so the build-id is read from the module on disk, and the module is used only when its
hash equals the recorded one (a module replaced since the run, e.g. by an upgrade, would give
wrong names: its frames stay unnamed and the summary says so).
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcstream import api, tracemeta
from pcstream.record import elf

_TEXT_TYPES = frozenset("tTwWi")
# Always searched for separate debug files, after the directories given (Debian's -dbg and
# -dbgsym packages install theirs here).
DEBUG_ROOT = Path("/usr/lib/debug")


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


def debug_file_candidates(module: str, build: bytes | None, dirs: Sequence[Path]) -> list[Path]:
    """Where a separate debug file of ``module`` (build-id ``build``) may be, in the order tried:
    for each of ``dirs`` and then /usr/lib/debug, by build-id, then by path (the module's path and
    its real path under the directory, with ``.debug``, as its ``.gnu_debuglink`` name, as is)."""
    paths = list(dict.fromkeys([module, os.path.realpath(module)]))
    link = elf.debuglink(module)
    out: list[Path] = []
    for top in [*dirs, DEBUG_ROOT]:
        if build:
            out.append(top / ".build-id" / build[:1].hex() / f"{build[1:].hex()}.debug")
        for path in paths:
            rel = path.lstrip("/")
            out.append(top / f"{rel}.debug")
            if link:
                out.append(top / os.path.dirname(rel) / link)
            out.append(top / rel)
    return list(dict.fromkeys(out))


def find_debug_file(module: str, build: bytes | None, dirs: Sequence[Path]) -> Path | None:
    """The first candidate (:func:`debug_file_candidates`) that is a file other than the module,
    with the module's build-id (or none to compare: a module without one, a file without one)."""
    try:
        own = os.stat(module)
    except OSError:
        return None
    for candidate in debug_file_candidates(module, build, dirs):
        try:
            st = candidate.stat()
        except OSError:
            continue
        if not candidate.is_file() or (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            continue
        theirs = elf.build_id(candidate)
        if build and theirs and theirs != build:
            continue
        return candidate
    return None


@dataclass
class Naming:
    """How the frames of a trace were named."""

    named: int = 0
    debug_files: dict[str, str] = field(default_factory=dict)  # module -> separate debug file used
    changed: list[str] = field(default_factory=list)  # modules whose file differs from the recorded one


def module_matches(module: str, recorded_id: Any, build: bytes | None) -> bool:
    """Whether the file at ``module`` is the one recorded with ``recorded_id`` (True when the
    frame carries no id to compare)."""
    if not isinstance(recorded_id, str) or not recorded_id:
        return True
    return elf.module_id(module, build) == recorded_id.lower().rjust(16, "0")


def names_for(
    module: str, offsets: Iterable[int], recorded_id: Any, dirs: Sequence[Path], naming: Naming
) -> dict[int, str]:
    """Names of ``offsets`` in ``module``: from its separate debug file first, then the module."""
    offs = sorted(set(offsets))
    if not offs or not os.path.isfile(module):
        return {}
    build = elf.build_id(module)
    if not module_matches(module, recorded_id, build):
        naming.changed.append(module)
        return {}
    names: dict[int, str] = {}
    debug = find_debug_file(module, build, dirs)
    if debug is not None:
        names = module_symbols(str(debug), offs)
        if names:
            naming.debug_files[module] = str(debug)
    rest = [o for o in offs if o not in names]
    if rest:
        names.update(module_symbols(module, rest))
    return names


def symbolize(trace: Path, symbol_dirs: Sequence[Path] = ()) -> Naming:
    """Add ``symbol`` to the frames of ``trace``'s PC table; says how many frames were named,
    with which debug files, and which modules changed since the run.

    ``symbol_dirs``: directories searched for separate debug files before /usr/lib/debug.
    Rewrites the file atomically (a temporary file beside it, then a rename); the rows and every
    other footer key are kept. Needs pyarrow (to read the footer) and binutils (``addr2line``,
    ``nm``).
    """
    naming = Naming()
    raw = tracemeta.footer(trace).get(tracemeta.KEY_PCS)
    if raw is None:
        return naming
    pcs: dict[str, list[dict[str, Any]]] = json.loads(raw)
    wanted: dict[tuple[str, Any], set[int]] = {}
    for frames in pcs.values():
        for f in frames:
            if "symbol" not in f:  # named by the converter (Java frames): no file to look in
                wanted.setdefault((f["module"], f.get("module_id")), set()).add(int(f["offset"]))
    names = {
        key: names_for(key[0], offs, key[1], symbol_dirs, naming)
        for key, offs in sorted(wanted.items(), key=lambda item: (item[0][0], str(item[0][1])))
    }
    for frames in pcs.values():
        for f in frames:
            if "symbol" in f:
                continue
            sym = names[f["module"], f.get("module_id")].get(int(f["offset"]))
            if sym is not None:
                f["symbol"] = sym
                naming.named += 1
    if naming.named == 0:
        return naming
    api.set_footer_value(str(trace), tracemeta.KEY_PCS, tracemeta.encode_json(pcs).decode())
    return naming


def symbolize_or_warn(out: Path, summary: dict[str, Any], symbol_dirs: Sequence[Path] = ()) -> None:
    """:func:`symbolize` for ``pcstream record``: the counts go into ``summary`` (``symbolized``,
    ``debug_files``), and a missing tool or a module changed since the run into its warnings."""
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
    naming = symbolize(out, symbol_dirs)
    summary["symbolized"] = naming.named
    summary["debug_files"] = len(naming.debug_files)
    if naming.changed:
        changed = sorted(set(naming.changed))
        summary.setdefault("warnings", []).append(
            f"{len(changed)} module(s) changed on disk since the run (build-id differs), their frames "
            f"are not named: {', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}"
        )
