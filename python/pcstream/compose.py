"""The one module besides :mod:`pcstream.cli` that puts stages together: ``record --block``
(also ``validate --run``) runs a program under the record shim (:mod:`pcstream.record`) inside
the ground-truth capture of a real ext4 (:mod:`pcstream.groundtruth.loopdev`), with live
write-lifetime hints from a PC table when asked (:mod:`pcstream.live`). Neither the record stage
nor the capture imports live hints; they meet here.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from pcstream import live
from pcstream.errors import BadParameter, InputError
from pcstream.groundtruth import loopdev
from pcstream.options import BLOCK_CAPACITY, METHODS, RecordOptions
from pcstream.record import runner, shimrun
from pcstream.record.symbols import symbolize_or_warn
from pcstream.units import parse_size


def record_block(
    cmd: list[str],
    out: Path,
    options: RecordOptions,
    *,
    say: Any = None,
    capture_method: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """``record --block``: run ``cmd`` under the shim on a fresh ext4 (loop device, as root) and
    write the real block trace, the file-level trace and the layout (see
    :func:`.loopdev.capture`), as ``options`` say. ``out``: a directory, or the block trace's
    ``.parquet`` name. Returns the command's exit status and the capture summary.

    From ``options``: ``capacity`` the image's size in 4 KiB blocks (None:
    :data:`~pcstream.options.BLOCK_CAPACITY`); ``method``, ``frames``, ``coalesce``,
    ``no_symbols`` and ``symbol_dirs`` as for the file-level trace
    (:func:`pcstream.record.shimrun.record`; ``record --block`` coalesces, ``validate --run``
    keeps one row per write); ``mount_opts`` see :func:`.loopdev.real_mount_opts`; the aging
    replays the model's aging first; ``table``: run with live write-lifetime hints from this PC
    table resolved for ``ssd`` (:mod:`pcstream.live`), with the table's signature method; the
    summary then has ``live`` (the shim's counts) and ``fidelity`` (the share of data pages whose
    bio carried their PC's hint). ``keep_logs`` does not apply (the logs are always removed).
    ``capture_method``: see :func:`.loopdev.choose_capture`."""
    method, frames = options.method, options.frames
    if method not in METHODS:
        raise BadParameter("method", method, f"{{param}} {{value}}: unknown; use one of {', '.join(METHODS)}")
    table = Path(options.table) if options.table else None
    resolved = live.resolve(table, options.ssd) if table is not None else None
    if resolved is not None:
        method, frames = str(resolved.signature["method"]), int(resolved.signature["frames"])
        capture_method = capture_method or "bpf"  # the hints are read from the bios: BPF or an error
    capacity_pages = options.capacity if options.capacity is not None else parse_size(BLOCK_CAPACITY)
    symbol_dirs = [Path(d) for d in options.symbol_dirs]
    shim, cmd, outputs = _checked(cmd, out)
    logdir = shimrun.new_logdir()
    source = runner.record_source(cmd, method, frames, block=True)
    hints_file = logdir.with_name(logdir.name + ".hints")
    if resolved is not None:
        live.write_hints(resolved.hints, hints_file)

    def run(c: list[str], cwd: Path) -> int:
        if resolved is None:
            return shimrun.run_under_shim(c, logdir, method, frames, shim, cwd=cwd)
        env = live.live_env(dict(os.environ), hints_file, resolved.signature)
        return shimrun.run_under_shim(c, logdir, method, frames, shim, cwd=cwd, env=env)

    def files() -> dict[str, Any]:
        summary = shimrun.convert(logdir, outputs.files, source, options)
        if not options.no_symbols and summary.get("signatures"):
            symbolize_or_warn(outputs.files, summary, symbol_dirs)
        return summary

    try:
        status, summary = loopdev.capture(
            cmd,
            outputs,
            capacity_pages,
            run,
            files,
            mount_opts=loopdev.real_mount_opts(options.mount_opts),
            progress=say,
            age=options.aging,
            method=capture_method,
            source=source,
        )
        if resolved is not None:
            add_live(summary, resolved, live.read_live_log(Path(str(hints_file) + ".log")), outputs, table)
        return status, summary
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
        for p in (hints_file, Path(str(hints_file) + ".log")):
            p.unlink(missing_ok=True)


def _checked(cmd: list[str], out: Path) -> tuple[Path, list[str], loopdev.Outputs]:
    """Before anything is set up: the shim, the command and the machine checked (one-line errors);
    the shim's path, the command as it runs in the mount point and the outputs of ``out``."""
    shim = runner.shim_path()
    runner.check_command(cmd)
    loopdev.check_environment(tracefs=False)
    # CMD runs in the mount point: a program named by a relative path is taken from here.
    if "/" in cmd[0] and not os.path.isabs(cmd[0]):
        cmd = [os.path.abspath(cmd[0]), *cmd[1:]]
    outputs = loopdev.Outputs.at(out)
    if out.suffix != ".parquet" and out.exists() and not out.is_dir():
        raise InputError(out, f"{out}: exists and is not a directory; give a directory or a .parquet name")
    return shim, cmd, outputs


def add_live(
    summary: dict[str, Any],
    resolved: live.Resolved,
    counts: live.LiveCounts,
    outputs: loopdev.Outputs,
    table: Path | None,
) -> None:
    """The live hints of a ``record --block --table`` run into its summary (and layout file): the
    table's resolution, the shim's counts, their warnings and, with the BPF capture, the fidelity."""
    summary["table"] = resolved.summary()
    summary["live"] = counts.as_dict()
    if summary.get("capture") == "bpf":
        summary["fidelity"] = live.fidelity(outputs.block, resolved.hints)
    else:
        summary.setdefault("warnings", []).append(
            "no hint fidelity: without BPF the block trace has no hints"
        )
    more = live.warnings(counts, table or "")
    if not resolved.signature_stored:
        sig = resolved.signature
        more.insert(0, f"{table}: the table does not say which signature method learned it; "
                    f"used {sig['method']} with {sig['frames']} frames")  # fmt: skip
    if more:
        summary.setdefault("warnings", []).extend(more)
    outputs.layout.write_text(json.dumps(summary, indent=1) + "\n")
