"""Record the file writes of a program: run it with the pcshim LD_PRELOAD shim, then convert the
per-process shim logs into one file-level trace (Parquet; design.md, "File-level trace").

The shim (``pcstream/_shim/pcshim.so``) is built by ``make install`` from ``shim/``; its log format
is documented in ``shim/include/pcshim.h`` and docs/RECORD.md.

After the conversion the PC table (footer key ``pcstream.pcs``: signature -> frames ``{module,
module_id, offset}``) gets a ``symbol`` for each frame whose module can still be read, from binutils:
``addr2line -f -C`` (one process per module, debug info or symbol table), checked against the
symbol sizes ``nm -S`` reports so that an address past the end of the last exported symbol is not
given its name. The trace is rewritten atomically with pyarrow (the rows are unchanged).
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pcstream.errors import EXIT_INPUT, EXIT_USAGE, CliError

METHODS = ("auto", "fp", "unwind", "scan")
EXIT_NOT_FOUND = 127


def shim_path() -> Path:
    """The built shim; a one-line error if it is missing."""
    path = Path(__file__).resolve().parent / "_shim" / "pcshim.so"
    if not path.is_file():
        raise CliError(f"{path}: the record shim is not built; run 'make install' (or 'make shim')")
    return path


def _check_output(out: Path) -> None:
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise CliError(f"{out}: is a directory; give a file name for the trace", EXIT_INPUT)
    if not parent.is_dir():
        raise CliError(f"{out}: directory {parent} does not exist; create it or pick another", EXIT_INPUT)
    if not os.access(parent, os.W_OK):
        raise CliError(f"{out}: directory {parent} is not writable; pick another path", EXIT_INPUT)


def _check_command(cmd: list[str]) -> None:
    if not cmd:
        raise CliError("no command to record; usage: pcstream record [OPTIONS] -- CMD [ARGS...]", EXIT_USAGE)
    prog = cmd[0]
    found = shutil.which(prog) if "/" not in prog else (prog if os.access(prog, os.X_OK) else None)
    if not found or os.path.isdir(found):
        raise CliError(f"{prog}: command not found (or not executable); check it and PATH", EXIT_NOT_FOUND)


def run_under_shim(
    cmd: list[str],
    logdir: Path,
    method: str = "auto",
    frames: int = 12,
    shim: Path | None = None,
    cwd: Path | None = None,
) -> int:
    """Run ``cmd`` with the shim preloaded, logs to ``logdir``, in ``cwd`` (default: ours);
    return its exit status (128+N if killed)."""
    env = dict(os.environ)
    so = str(shim or shim_path())
    env["LD_PRELOAD"] = so + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["PCSHIM_DIR"] = str(logdir.resolve())
    env["PCSHIM_METHOD"] = method
    env["PCSHIM_FRAMES"] = str(frames)
    proc = subprocess.Popen(cmd, env=env, cwd=cwd)
    forward = {signal.SIGTERM, signal.SIGHUP}
    old = {sig: signal.getsignal(sig) for sig in forward}
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets Ctrl-C; we convert after
    try:
        for sig in forward:
            signal.signal(sig, lambda s, _f: proc.send_signal(s))
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


def convert(logdir: Path, out: Path, source: str, coalesce: bool = False) -> dict[str, Any]:
    """Convert the shim logs in ``logdir`` into the file-level trace ``out``; the engine's summary.
    ``coalesce``: fold runs of small contiguous writes (one row per stretch of pages with the same
    last-writing PC; see docs/RECORD.md)."""
    from pcstream import _engine

    return json.loads(_engine.record_convert(str(logdir), str(out), source, coalesce))


KEY_PCS = "pcstream.pcs"
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
    raw = meta.get(KEY_PCS.encode())
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
    meta[KEY_PCS.encode()] = json.dumps(pcs, sort_keys=True, separators=(",", ":")).encode()
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


def _symbolize_or_warn(out: Path, summary: dict[str, Any]) -> None:
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


def record(
    cmd: list[str],
    out: Path,
    method: str = "auto",
    frames: int = 12,
    keep_logs: Path | None = None,
    symbols: bool = True,
    coalesce: bool = False,
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` under the shim and write the trace ``out``: (command's exit status, summary)."""
    if method not in METHODS:
        raise CliError(f"--method {method}: unknown; use one of {', '.join(METHODS)}", EXIT_USAGE)
    if not 1 <= frames <= 64:
        raise CliError(f"--frames {frames}: out of range; use 1..64", EXIT_USAGE)
    shim = shim_path()
    _check_output(out)
    _check_command(cmd)
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        logdir = keep_logs
    else:
        logdir = Path(tempfile.mkdtemp(prefix="pcstream-record-"))
    try:
        status = run_under_shim(cmd, logdir, method, frames, shim)
        summary = convert(logdir, out, "pcstream record " + " ".join(cmd), coalesce)
        if symbols and summary.get("signatures"):
            _symbolize_or_warn(out, summary)
    finally:
        if keep_logs is None:
            shutil.rmtree(logdir, ignore_errors=True)
    summary["status"] = status
    return status, summary


def record_block(
    cmd: list[str],
    out: Path,
    capacity_pages: int,
    method: str = "auto",
    frames: int = 12,
    mount_opts: str | None = None,
    symbols: bool = True,
    say: Any = None,
) -> tuple[int, dict[str, Any]]:
    """``record --block``: run ``cmd`` under the shim on a fresh ext4 (loop device, as root) and
    write the real block trace, the file-level trace and the layout (see
    :mod:`pcstream.blocktrace`). ``out``: a directory, or the block trace's ``.parquet`` name.
    Returns the command's exit status and the capture summary."""
    from pcstream import blocktrace

    if method not in METHODS:
        raise CliError(f"--method {method}: unknown; use one of {', '.join(METHODS)}", EXIT_USAGE)
    shim = shim_path()
    _check_command(cmd)
    blocktrace.check_environment()
    # CMD runs in the mount point: a program named by a relative path is taken from here.
    if "/" in cmd[0] and not os.path.isabs(cmd[0]):
        cmd = [os.path.abspath(cmd[0]), *cmd[1:]]
    outputs = blocktrace.Outputs.at(out)
    if out.suffix != ".parquet" and out.exists() and not out.is_dir():
        raise CliError(
            f"{out}: exists and is not a directory; give a directory or a .parquet name", EXIT_INPUT
        )
    logdir = Path(tempfile.mkdtemp(prefix="pcstream-record-"))
    source = "pcstream record --block " + " ".join(cmd)

    def run(c: list[str], cwd: Path) -> int:
        return run_under_shim(c, logdir, method, frames, shim, cwd=cwd)

    def files() -> dict[str, Any]:
        summary = convert(logdir, outputs.files, source)
        if symbols and summary.get("signatures"):
            _symbolize_or_warn(outputs.files, summary)
        return summary

    try:
        return blocktrace.capture(
            cmd,
            outputs,
            capacity_pages,
            run,
            files,
            mount_opts=mount_opts or blocktrace.DEFAULT_MOUNT_OPTS,
            progress=say,
        )
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def summary_line(out: Path, s: dict[str, Any]) -> str:
    """The one-line summary printed to stderr."""
    line = (
        f"pcstream record: {s['records']} records ({s['writes']} writes, {s['write_bytes']} bytes) "
        f"from {s['processes']} processes, {s['signatures']} signatures"
        + (f" ({s['symbolized']} frames named)" if s.get("symbolized") else "")
        + f", {s['paths']} files -> {out}"
    )
    notes = list(s.get("warnings", []))
    if s.get("lost_processes"):
        lost = ", ".join(str(p) for p in s["lost_processes"])
        notes.append(f"records lost: process(es) {lost} ended without flushing (killed?)")
    if notes:
        line += "; warning: " + "; ".join(notes)
    return line
