"""Ground truth for the file-system model: run a program on a real ext4 file system and capture
the block I/O it causes (``pcstream record --block``).

The run, all as root:

1. a sparse image file of the requested size, ``mkfs.ext4`` with 4 KiB blocks, an inode per
   16 KiB, 256-byte inodes and no lazy initialisation (so no background zeroing shows up in the
   trace), attached to a loop device and mounted with ``discard,noatime`` (the model's defaults:
   it issues TRIMs at commit and models no atime updates);
   With an aging (``age``), the engine's aging plan is replayed on it first (:mod:`.agereplay`),
   then ``sync`` and ``umount`` (the journal checkpointed), the aged state read from the image,
   and the file system mounted again: the program starts on a freshly mounted aged file system,
   as in the model;
2. the bios of that loop device are captured from the ``block:block_bio_queue`` tracepoint —
   the bios the file system submits, before merging — by the BPF program of ``bpf/``
   (:mod:`.biotracer`: also each bio's write-life hint and the file pages it carries), or, where
   BPF cannot run (no BTF, not built, the load refused), by a private tracefs instance
   (:mod:`.tracefs`: no hints, no file pages); ``PCSTREAM_BLOCK_CAPTURE=bpf|tracefs`` forces one;
3. the program runs under the record shim with the mount point as its working directory (the
   same run yields the file-level trace; the caller, :mod:`pcstream.compose`, gives the run and
   the conversion), then ``sync``, the list of its files and directories,
   ``umount`` (its journal checkpoint and superblock writes are captured too);
4. the layout of the image is read back (``dumpe2fs``: superblocks, group descriptors, bitmaps,
   inode tables; ``debugfs``: the journal's extents, the blocks of every directory and the
   extent-tree blocks of every file still there) and becomes a map address → metadata class
   (:mod:`.ext4layout`);
5. the events become the block trace with that map, so its ``meta`` column says journal (1),
   inode table (2), directory (3), bitmap / group descriptor (4) or superblock / extent tree (5),
   and data (0) elsewhere; ``pcstream.capacity_pages`` is the image size. From the BPF capture
   (:mod:`.bio_to_blocktrace`) every data page also gets the ``pc`` and ``pid`` of the shim's last write
   to that file page before the bio, and ``hint`` the bio's hint; the share of data pages that
   got a PC is the summary's ``attribution.rate``. From tracefs the events go through blkparse
   text (``maj,min cpu seq sec.nsec pid D rwbs sector + n [comm]``, also written beside the
   trace from the BPF capture) and the engine's importer. An aged state leads the trace as in
   ``map --age``.

Everything set up is torn down in reverse order on success, error or Ctrl-C (tracing instance,
mount, loop device, image). Blocks that changed role during the run (a directory deleted, its
blocks reused for data) are classified by their role at the end; the capture reports lost trace
events, which make the trace incomplete.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcstream import api
from pcstream.aging import Aging
from pcstream.errors import Failure, InputError, NotRoot, UsageError
from pcstream.groundtruth import agereplay, bio_to_blocktrace, biotracer
from pcstream.groundtruth.ext4layout import Layout, parse_debugfs_stats, parse_dumpe2fs
from pcstream.groundtruth.tracefs import EVENT, BlockCapture, tracefs_root, tracefs_to_blkparse
from pcstream.record import runner
from pcstream.units import PAGE_BYTES

# Mount options matching the model's defaults (docs/FSMODEL.md).
DEFAULT_MOUNT_OPTS = "discard,noatime"
# 4 KiB blocks, mke2fs's default inode ratio and size for every image size (small images would
# otherwise get the "small" type: an inode per 4 KiB), no lazy initialisation.
MKFS_ARGS = (
    "-q",
    "-F",
    "-b",
    str(PAGE_BYTES),
    "-i",
    "16384",
    "-I",
    "256",
    "-E",
    "lazy_itable_init=0,lazy_journal_init=0",
)
TOOLS = ("losetup", "mkfs.ext4", "mount", "umount", "dumpe2fs", "debugfs")
# How the bios are captured: "auto" (BPF where it runs, else tracefs), "bpf" or "tracefs".
CAPTURE_ENV = "PCSTREAM_BLOCK_CAPTURE"
CAPTURES = ("auto", "bpf", "tracefs")
# Mount options that set atime behaviour; without one, noatime is added (the model has no atime).
ATIME_OPTS = ("atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime")


def _run(cmd: list[str], what: str, input_text: str | None = None) -> str:
    """Run a system tool; a failure is one line naming the tool and its own message."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, input=input_text, check=False)
    except OSError as exc:
        raise Failure(f"{cmd[0]}: cannot run ({exc.strerror}); is it installed?") from None
    if proc.returncode != 0:
        msg = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise Failure(f"{what} failed: {' '.join(cmd)}: {msg or f'exit {proc.returncode}'}")
    return proc.stdout


def real_mount_opts(opts: str | None) -> str:
    """The options the image is mounted with: ``opts`` (default ``discard,noatime``), with
    ``noatime`` added when they say nothing of atime (the model makes no atime updates)."""
    if not opts:
        return DEFAULT_MOUNT_OPTS
    names = [o.strip().split("=")[0] for o in opts.split(",") if o.strip()]
    return opts if any(n in ATIME_OPTS for n in names) else f"{opts},noatime"


def choose_capture(method: str | None = None) -> tuple[str, str | None]:
    """The capture to use ("bpf" or "tracefs") for ``method`` (default: $PCSTREAM_BLOCK_CAPTURE,
    else auto), and why not BPF when auto fell back to tracefs. Asking for bpf where it cannot
    run is a one-line error naming what is missing."""
    method = method or os.environ.get(CAPTURE_ENV) or "auto"
    if method not in CAPTURES:
        raise UsageError(f"{CAPTURE_ENV}={method}: use one of {', '.join(CAPTURES)}")
    if method == "tracefs":
        return "tracefs", None
    why = biotracer.unavailable()
    if why is None:
        return "bpf", None
    if method == "bpf":
        raise Failure(f"record {{block}}: {why}", params=("block",))
    return "tracefs", why


def check_environment(tracefs: bool = True) -> None:
    """Root, the tools, loop devices and (``tracefs``) tracefs — or a one-line error saying what
    is missing."""
    if os.geteuid() != 0:
        raise NotRoot(
            "record {block} needs root (it makes a loop device, mounts it and reads tracefs); "
            "run it as root, or record without {block}",
            params=("block",),
        )
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise Failure(
            f"record {{block}} needs {', '.join(missing)}; install e2fsprogs, mount and util-linux",
            params=("block",),
        )
    if not Path("/dev/loop-control").exists():
        raise Failure(
            "record {block} needs loop devices (/dev/loop-control is missing); modprobe loop",
            params=("block",),
        )
    if tracefs:
        tracefs_root()


# --------------------------------------------------------------------------- reading the layout


def read_layout(device: str, paths: list[tuple[str, bool]]) -> Layout:
    """The layout of the (unmounted) file system on ``device``; ``paths`` = (path inside the
    file system, is a directory) of what should be looked at (directories and files)."""
    layout = Layout()
    parse_dumpe2fs(_run(["dumpe2fs", device], "reading the layout (dumpe2fs)"), layout)
    parse_debugfs_stats(
        _run(["debugfs", "-R", "stat <8>", device], "reading the journal (debugfs)"), layout, True
    )
    if paths:
        script = "".join(f'stat "{p}"\n' for p, _ in paths)
        with tempfile.NamedTemporaryFile("w", suffix=".debugfs", delete=False) as cmdfile:
            cmdfile.write(script)
        try:
            out = _run(
                ["debugfs", "-f", cmdfile.name, device], "reading directories and extent trees (debugfs)"
            )
        finally:
            os.unlink(cmdfile.name)
        parse_debugfs_stats(out, layout)
    return layout


def walk(mount: Path) -> list[tuple[str, bool]]:
    """Every directory and regular file under ``mount``, as paths inside the file system."""
    found: list[tuple[str, bool]] = [("/", True)]
    for root, dirs, files in os.walk(mount):
        rel = "/" + os.path.relpath(root, mount).lstrip(".").lstrip("/")
        base = rel.rstrip("/")
        for d in sorted(dirs):
            found.append((f"{base}/{d}", True))
        for f in sorted(files):
            if os.path.isfile(os.path.join(root, f)) and not os.path.islink(os.path.join(root, f)):
                found.append((f"{base}/{f}", False))
    return [(p, d) for p, d in found if '"' not in p and "\n" not in p]


# --------------------------------------------------------------------------- the run


@dataclass
class Outputs:
    """Where ``record --block`` writes: the real block trace, the file-level trace of the same
    run, the layout (JSON), the captured events as blkparse text and (BPF) the raw capture."""

    block: Path
    files: Path
    layout: Path
    text: Path
    bio: Path | None = None

    def __post_init__(self) -> None:
        if self.bio is None:
            self.bio = self.text.with_suffix(".pcbio")

    @staticmethod
    def at(out: Path) -> Outputs:
        """``X.parquet`` → X.parquet, X.files.parquet, X.layout.json, X.blkparse; anything else
        is a directory holding block.parquet, files.parquet, layout.json, block.blkparse."""
        if out.suffix == ".parquet":
            base = out.with_suffix("")
            return Outputs(
                out, Path(f"{base}.files.parquet"), Path(f"{base}.layout.json"), Path(f"{base}.blkparse")
            )
        return Outputs(
            out / "block.parquet", out / "files.parquet", out / "layout.json", out / "block.blkparse"
        )

    @staticmethod
    def layout_for(block: Path) -> Path | None:
        """The layout file that belongs to the block trace ``block``, if there is one."""
        for cand in (block.with_suffix("").with_suffix(".layout.json"), block.parent / "layout.json"):
            if cand.is_file():
                return cand
        return None


def _dev_t(st_rdev: int) -> int:
    """The kernel's dev_t (tracepoint ``dev``) of a device number from stat."""
    return (os.major(st_rdev) << 20) | os.minor(st_rdev)


@contextlib.contextmanager
def _loop_fs(image: Path, size_bytes: int, mount_opts: str) -> Iterator[tuple[str, Path]]:
    """A fresh ext4 on a loop device over ``image``, mounted on a temporary directory; every
    step undone on the way out (also on errors and Ctrl-C)."""
    with open(image, "wb") as f:
        f.truncate(size_bytes)
    _run(["mkfs.ext4", *MKFS_ARGS, str(image)], "making the file system (mkfs.ext4)")
    device = _run(["losetup", "--show", "-f", str(image)], "attaching a loop device (losetup)").strip()
    mount = Path(tempfile.mkdtemp(prefix="pcstream-mnt-"))
    try:
        mount_fs(device, mount, mount_opts)
        try:
            yield device, mount
        finally:
            if os.path.ismount(mount):
                unmount(mount)
    finally:
        subprocess.run(["losetup", "-d", device], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


def mount_fs(device: str, mount: Path, mount_opts: str) -> None:
    _run(["mount", "-t", "ext4", "-o", mount_opts, device, str(mount)], "mounting the file system")


def age_fs(
    device: str, mount: Path, image: Path, capacity_pages: int, mount_opts: str, age: Aging
) -> dict[str, Any]:
    """Replay the model's aging plan on the mounted file system, unmount (everything on disk),
    read the aged state, mount again; the replay's counts and the state (:mod:`.agereplay`)."""
    assert age.share is not None
    plan = api.aging_plan(capacity_pages, age.share, seed=age.seed, churn=age.churn, mount_opts=mount_opts)
    counts = agereplay.replay(plan, mount)
    unmount(mount)
    state = agereplay.aged_state(_run(["dumpe2fs", device], "reading the aged state (dumpe2fs)"), image,
                                 capacity_pages)  # fmt: skip
    mount_fs(device, mount, mount_opts)
    spec = {"share": age.share, "seed": age.seed, "churn": age.churn, "plan_ops": len(plan)}
    return {**spec, **counts, **state}


def unmount(mount: Path) -> None:
    """umount, retrying while the file system is busy; lazily as a last resort."""
    for _ in range(20):
        if subprocess.run(["umount", str(mount)], capture_output=True, check=False).returncode == 0:
            return
        time.sleep(0.25)
    subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def capture(
    cmd: list[str],
    outputs: Outputs,
    capacity_pages: int,
    run: Callable[[list[str], Path], int],
    convert_files: Callable[[], dict[str, Any]],
    mount_opts: str = DEFAULT_MOUNT_OPTS,
    progress: Callable[[str], None] | None = None,
    age: Aging | None = None,
    method: str | None = None,
    source: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` on a fresh ext4 of ``capacity_pages`` 4 KiB blocks (aged first with ``age``)
    and capture its block I/O (``method``: see :func:`choose_capture`).

    ``run(cmd, cwd)`` runs the command (under the shim) and returns its exit status;
    ``convert_files()`` then writes the file-level trace and returns its summary. Returns the
    command's status and a summary of the block capture (also written to ``outputs.layout``).
    """
    kind, fallback = choose_capture(method)
    check_environment(tracefs=kind == "tracefs")
    say = progress or (lambda _msg: None)
    assert outputs.bio is not None
    for p in (outputs.block, outputs.files, outputs.layout, outputs.text, outputs.bio):
        p.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pcstream-block-", dir=outputs.block.parent))
    try:
        raw = work / "trace.txt"
        image = _Image(work / "ext4.img", capacity_pages, mount_opts)
        done = _run_on_image(cmd, image, kind, outputs, raw, run, age, say)
        files = convert_files()
        source = source or f"{runner.SOURCE_VERB_BLOCK} " + " ".join(cmd)
        trace = _block_trace(kind, done, outputs, raw, capacity_pages, source, say)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = _summary(cmd, image, kind, fallback, done, trace, files, outputs)
    outputs.layout.write_text(json.dumps(summary, indent=1) + "\n")
    warnings = trace.warnings
    if fallback:
        warnings.append(f"captured with tracefs, without PCs or hints in the block trace ({fallback})")
    if trace.lost:
        what = "ring buffer full" if kind == "bpf" else "tracefs buffer overrun"
        warnings.append(f"{trace.lost} block events were lost ({what}); the block trace is incomplete")
    if warnings:
        summary["warnings"] = warnings
    return done.status, summary


@dataclass(frozen=True)
class _Image:
    """The image file of a capture, its size in 4 KiB blocks and its mount options."""

    path: Path
    capacity_pages: int
    mount_opts: str


@dataclass
class _Done:
    """What the run on the image gave: the command's status and time, what stopping the capture
    returned, the device numbers, the aged state (None: not aged) and the layout read back."""

    status: int
    run_s: float
    stopped: Any
    devno: int
    fs_dev: int
    aged: dict[str, Any] | None
    layout: Layout


@dataclass
class _Trace:
    """The block trace written: the engine's summary, the events captured and lost, warnings."""

    block: dict[str, Any]
    events: int
    lost: int
    warnings: list[str]


def _run_on_image(
    cmd: list[str],
    image: _Image,
    kind: str,
    outputs: Outputs,
    raw: Path,
    run: Callable[[list[str], Path], int],
    age: Aging | None,
    say: Callable[[str], None],
) -> _Done:
    """Steps 1 to 4 of the module's doc: the file system (aged with ``age``), the capture of
    ``kind`` around ``run``, and the layout read back after the unmount; the loop device is gone
    on return."""
    assert outputs.bio is not None
    aged: dict[str, Any] | None = None
    capacity_pages, mount_opts = image.capacity_pages, image.mount_opts
    say(f"mkfs.ext4 on a {capacity_pages * PAGE_BYTES >> 20} MiB image")
    with _loop_fs(image.path, capacity_pages * PAGE_BYTES, mount_opts) as (device, mount):
        st = os.stat(device)
        devno = _dev_t(st.st_rdev)
        fs_dev = os.stat(mount).st_dev
        if age is not None and age.share is not None:
            say(f"aging to {age.share:g} of the blocks (seed {age.seed}, churn {age.churn})")
            aged = age_fs(device, mount, image.path, capacity_pages, mount_opts, age)
        cap: BlockCapture | biotracer.BioCapture
        cap = biotracer.BioCapture(devno, outputs.bio) if kind == "bpf" else BlockCapture(devno, raw)
        try:
            cap.start()
            say(f"running {' '.join(cmd)} in {mount} ({device}, capture: {kind})")
            t0 = time.monotonic()
            status = run(cmd, mount)
            run_s = time.monotonic() - t0
            os.sync()
            paths = walk(mount)
            unmount(mount)
            stopped = cap.stop()
        finally:
            cap.close()
        say("reading the layout (dumpe2fs, debugfs)")
        layout = read_layout(device, paths)
    return _Done(status, run_s, stopped, devno, fs_dev, aged, layout)


def _block_trace(
    kind: str,
    done: _Done,
    outputs: Outputs,
    raw: Path,
    capacity_pages: int,
    source: str,
    say: Callable[[str], None],
) -> _Trace:
    """Step 5 of the module's doc: the block trace from the BPF capture (with PCs and hints) or
    through blkparse text and the engine's importer (tracefs), the aged state leading it."""
    extents = done.aged["extents"] if done.aged else []
    layout = done.layout
    if kind == "bpf":
        assert outputs.bio is not None
        bios = biotracer.read(outputs.bio)
        say(f"building the block trace from {len(bios.bios)} bios")
        block = bio_to_blocktrace.build(
            bios,
            outputs.files,
            done.fs_dev,
            capacity_pages,
            layout.meta_map(),
            outputs.block,
            source,
            extents,
        )
        events = biotracer.to_blkparse(bios, outputs.text)
        end = bios.end or {}
        lost = int(done.stopped.get("lost", 0)) + int(end.get("orphans", 0))
        return _Trace(block, events, lost, list(bios.warnings))
    assert isinstance(done.stopped, int)
    conv = tracefs_to_blkparse(raw, outputs.text)
    say(f"importing {conv.events} block events")
    block = api.import_trace(
        "blkparse",
        str(outputs.text),
        str(outputs.block),
        capacity_pages=capacity_pages,
        meta_map=layout.meta_map(),
    )
    if extents:
        bio_to_blocktrace.prepend_aged(outputs.block, extents)
    return _Trace(block, conv.events, done.stopped + conv.lost, [])


def _summary(
    cmd: list[str],
    image: _Image,
    kind: str,
    fallback: str | None,
    done: _Done,
    trace: _Trace,
    files: dict[str, Any],
    outputs: Outputs,
) -> dict[str, Any]:
    """The capture's summary, as the layout file holds it (warnings are added after)."""
    layout, aged = done.layout, done.aged
    return {
        "command": cmd,
        "status": done.status,
        "run_s": round(done.run_s, 3),
        "capacity_pages": image.capacity_pages,
        "mount_opts": image.mount_opts,
        "cpus": possible_cpus(),
        "mkfs": ["mkfs.ext4", *MKFS_ARGS],
        "tracepoint": f"block:{EVENT}",
        "capture": kind,
        "bpf_unavailable": fallback,
        "fs_dev": done.fs_dev,
        "loop_dev_t": done.devno,
        "events": trace.events,
        "lost_events": trace.lost,
        "block": trace.block,
        "attribution": trace.block.get("attribution"),
        "aged": {k: v for k, v in aged.items() if k != "extents"} if aged else None,
        "files": files,
        "layout": {
            "blocks": layout.blocks,
            "groups": layout.groups,
            "inodes_per_group": layout.inodes_per_group,
            "journal": layout.journal,
            "directories": layout.directories,
            "regular_files": layout.files,
            "metadata_pages": layout.pages_by_class(),
            "meta_map": layout.meta_map(),
        },
        "outputs": {k: str(v) for k, v in vars(outputs).items() if kind == "bpf" or k != "bio"},
    }


def possible_cpus() -> int:
    """The kernel's count of possible CPUs: mballoc keeps a locality group per CPU and a stream
    goal per CPU (at most one per four groups), so the model needs the recording machine's count.
    ``/sys/devices/system/cpu/possible`` lists ranges such as ``0-3,8``; else the online count."""
    try:
        text = Path("/sys/devices/system/cpu/possible").read_text().strip()
        count = 0
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            count += int(hi or lo) - int(lo) + 1
        return max(count, 1)
    except (OSError, ValueError):
        return os.cpu_count() or 1


def load_layout(path: Path) -> dict[str, Any]:
    """A layout file written by :func:`capture`."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(
            path,
            f"{path}: not a readable layout file ({exc}); re-run record {{block}}",
            params=("block",),
        ) from None
    if not isinstance(value, dict) or "fs_dev" not in value:
        raise InputError(
            path, f"{path}: not a layout file of record {{block}} (no fs_dev)", params=("block",)
        )
    return value


def summary_line(out: Outputs, s: dict[str, Any]) -> str:
    b = s["block"]
    line = (
        f"pcstream record --block: {s['events']} block events -> {b['rows']} rows "
        f"({b['write_pages']} pages written, {b['trim_pages']} trimmed, {b['flushes']} flushes) "
        f"-> {out.block}; "
        f"file-level trace -> {out.files}; layout -> {out.layout}"
    )
    attribution = s.get("attribution")
    if attribution:
        line += (
            f"; capture bpf: {100 * attribution['rate']:.1f} % of {attribution['data_pages']} data pages "
            f"attributed to a PC, {attribution['hinted_pages']} pages with a hint"
        )
    elif s.get("capture"):
        line += f"; capture {s['capture']}"
    if s.get("fidelity"):
        f = s["fidelity"]
        line += (
            f"; live hints: {100 * s['live']['match_rate']:.1f} % of writes matched the table, "
            f"{100 * f['rate']:.1f} % of {f['data_pages']} attributed data pages carried their PC's hint"
        )
    if s.get("aged"):
        a = s["aged"]
        line += f"; aged to {100 * a['used_share']:.1f} % ({a['creates']} files, {a['deletes']} deleted)"
    if s.get("warnings"):
        line += "; warning: " + "; ".join(s["warnings"])
    return line
