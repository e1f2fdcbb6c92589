"""Ground truth for the file-system model: run a program on a real ext4 file system and capture
the block I/O it causes (``pcstream record --block``).

The run, all as root:

1. a sparse image file of the requested size, ``mkfs.ext4`` with 4 KiB blocks, an inode per
   16 KiB, 256-byte inodes and no lazy initialisation (so no background zeroing shows up in the
   trace), attached to a loop device and mounted with ``discard,noatime`` (the model's defaults:
   it issues TRIMs at commit and models no atime updates);
2. a private tracefs instance records ``block:block_bio_queue`` of that loop device only — the
   bios the file system submits, before merging: data ``W``, journal ``WSM`` (jbd2), preflush +
   FUA commit blocks ``FWFSM``, discards ``D``, cache flushes ``FWS 0 + 0``; a reader thread
   drains ``trace_pipe`` to a file while the program runs, so the ring buffer does not overflow;
3. the program runs under the record shim with the mount point as its working directory (the
   same run yields the file-level trace), then ``sync``, the list of its files and directories,
   ``umount`` (its journal checkpoint and superblock writes are traced too);
4. the layout of the image is read back (``dumpe2fs``: superblocks, group descriptors, bitmaps,
   inode tables; ``debugfs``: the journal's extents, the blocks of every directory and the
   extent-tree blocks of every file still there) and becomes a map address → metadata class;
5. the events are written as blkparse text (``maj,min cpu seq sec.nsec pid D rwbs sector + n
   [comm]``) and imported with that map, so the block trace's ``meta`` column says journal (1),
   inode table (2), directory (3), bitmap / group descriptor (4) or superblock / extent tree (5),
   and data (0) elsewhere; ``pcstream.capacity_pages`` is the image size.

Everything set up is torn down in reverse order on success, error or Ctrl-C (tracing instance,
mount, loop device, image). Blocks that changed role during the run (a directory deleted, its
blocks reused for data) are classified by their role at the end; the capture reports lost trace
events, which make the trace incomplete.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcstream.errors import EXIT_FAILURE, EXIT_INPUT, CliError

PAGE = 4096
SECTOR = 512
# sysexits.h EX_NOPERM: the run needs root.
EXIT_NOT_ROOT = 77
# Mount options matching the model's defaults (docs/FSMODEL.md).
DEFAULT_MOUNT_OPTS = "discard,noatime"
# 4 KiB blocks, mke2fs's default inode ratio and size for every image size (small images would
# otherwise get the "small" type: an inode per 4 KiB), no lazy initialisation.
MKFS_ARGS = (
    "-q",
    "-F",
    "-b",
    "4096",
    "-i",
    "16384",
    "-I",
    "256",
    "-E",
    "lazy_itable_init=0,lazy_journal_init=0",
)
TRACEFS = Path("/sys/kernel/tracing")
EVENT = "block_bio_queue"
BUFFER_KB = 16384
TOOLS = ("losetup", "mkfs.ext4", "mount", "umount", "dumpe2fs", "debugfs")

# meta classes (design.md, block-trace columns)
DATA, JOURNAL, INODE, DIRECTORY, BITMAP, OTHER = range(6)
META_NAMES = ("data", "journal", "inode", "directory", "bitmap", "other")


def _run(cmd: list[str], what: str, input_text: str | None = None) -> str:
    """Run a system tool; a failure is one line naming the tool and its own message."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, input=input_text, check=False)
    except OSError as exc:
        raise CliError(f"{cmd[0]}: cannot run ({exc.strerror}); is it installed?", EXIT_FAILURE) from None
    if proc.returncode != 0:
        msg = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise CliError(f"{what} failed: {' '.join(cmd)}: {msg or f'exit {proc.returncode}'}", EXIT_FAILURE)
    return proc.stdout


def check_environment() -> None:
    """Root, the tools, loop devices and tracefs — or a one-line error saying what is missing."""
    if os.geteuid() != 0:
        raise CliError(
            "record --block needs root (it makes a loop device, mounts it and reads tracefs); "
            "run it as root, or record without --block",
            EXIT_NOT_ROOT,
        )
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise CliError(
            f"record --block needs {', '.join(missing)}; install e2fsprogs, mount and util-linux",
            EXIT_FAILURE,
        )
    if not Path("/dev/loop-control").exists():
        raise CliError(
            "record --block needs loop devices (/dev/loop-control is missing); modprobe loop", EXIT_FAILURE
        )
    tracefs_root()


def tracefs_root() -> Path:
    """The tracefs mount with block events; mounts tracefs at its usual place if needed."""
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, check=False)
    if not (TRACEFS / "instances").is_dir() or not (TRACEFS / "events" / "block" / EVENT).is_dir():
        raise CliError(
            f"tracefs with block events is not available at {TRACEFS} (mount -t tracefs nodev {TRACEFS} "
            "failed or the kernel has no block tracepoints)",
            EXIT_FAILURE,
        )
    return TRACEFS


# --------------------------------------------------------------------------- tracefs capture


class BlockCapture:
    """A private tracefs instance tracing ``block_bio_queue`` of one device into a text file.

    ``start()`` creates and enables it and starts a thread that copies ``trace_pipe`` to
    ``out``; ``stop()`` turns tracing off, drains the pipe and returns the lost-event count;
    ``close()`` (always; idempotent) removes the instance.
    """

    def __init__(self, devno: int, out: Path) -> None:
        self.devno = devno
        self.out = out
        self.dir = tracefs_root() / "instances" / f"pcstream-{os.getpid()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.bytes = 0

    def _write(self, name: str, value: str) -> None:
        (self.dir / name).write_text(value)

    def start(self) -> None:
        if self.dir.exists():
            self.close()
        self.dir.mkdir()
        self._write("tracing_on", "0")
        self._write("buffer_size_kb", str(BUFFER_KB))
        event = self.dir / "events" / "block" / EVENT
        # The tracepoint's dev is the kernel's dev_t: major << 20 | minor.
        (event / "filter").write_text(f"dev == {self.devno}")
        (event / "enable").write_text("1")
        self._thread = threading.Thread(target=self._drain, name="pcstream-tracefs", daemon=True)
        self._thread.start()
        self._write("tracing_on", "1")

    def _drain(self) -> None:
        try:
            fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
            try:
                with open(self.out, "wb") as sink:
                    while True:
                        ready, _, _ = select.select([fd], [], [], 0.1)
                        got = 0
                        if ready:
                            try:
                                chunk = os.read(fd, 1 << 20)
                            except BlockingIOError:
                                chunk = b""
                            if chunk:
                                sink.write(chunk)
                                got = len(chunk)
                                self.bytes += got
                        if not got and self._stop.is_set():
                            return
            finally:
                os.close(fd)
        except BaseException as exc:  # reported by stop()
            self._error = exc

    def stop(self) -> int:
        """Stop tracing, drain what is buffered; return the number of events lost."""
        self._write("tracing_on", "0")
        time.sleep(0.2)  # let the reader catch up with the last page of the buffer
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._error is not None:
            raise CliError(f"{self.dir}/trace_pipe: reading failed ({self._error})", EXIT_FAILURE)
        lost = 0
        for stats in sorted((self.dir / "per_cpu").glob("cpu*/stats")):
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events"):
                    with contextlib.suppress(ValueError):
                        lost += int(value.strip())
        return lost

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.dir.exists():
            with contextlib.suppress(OSError):
                (self.dir / "tracing_on").write_text("0")
            with contextlib.suppress(OSError):
                (self.dir / "events" / "block" / EVENT / "enable").write_text("0")
            for _ in range(20):
                try:
                    self.dir.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


_LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<sec>\d+)\.(?P<frac>\d+): " + EVENT + r": (?P<dev>\d+,\d+) (?P<rwbs>\S+) "
    r"(?P<sector>\d+) \+ (?P<sectors>\d+)"
)
_LOST = re.compile(r"\[LOST (\d+) EVENTS\]")


@dataclass
class Converted:
    events: int = 0
    lost: int = 0
    other_lines: int = 0


def tracefs_to_blkparse(src: Path, dst: Path) -> Converted:
    """Rewrite captured ``block_bio_queue`` lines as blkparse issue (``D``) lines.

    A write with a preflush (rwbs ``FW...`` with sectors) becomes a flush line followed by the
    write, so the cache flush is counted; the tracepoint's µs timestamps get nanosecond digits.
    """
    res = Converted()
    with open(src, encoding="utf-8", errors="replace") as fin, open(dst, "w", encoding="utf-8") as fout:
        seq = 0
        for line in fin:
            m = _LINE.match(line)
            if m is None:
                lost = _LOST.search(line)
                if lost:
                    res.lost += int(lost.group(1))
                elif line.strip() and not line.startswith("#"):
                    res.other_lines += 1
                continue
            res.events += 1
            ts = f"{m['sec']}.{m['frac'][:9].ljust(9, '0')}"
            comm = m["comm"].strip().replace(" ", "_") or "?"
            rwbs = m["rwbs"]
            head = f"{m['dev']} {m['cpu']}"
            if rwbs.startswith("F") and "W" in rwbs[1:] and m["sectors"] != "0":
                seq += 1
                fout.write(f"{head} {seq} {ts} {m['pid']} D F 0 + 0 [{comm}]\n")
                rwbs = rwbs[1:]
            seq += 1
            fout.write(f"{head} {seq} {ts} {m['pid']} D {rwbs} {m['sector']} + {m['sectors']} [{comm}]\n")
    return res


# --------------------------------------------------------------------------- ext4 layout


@dataclass
class Layout:
    """Where the metadata of the captured file system lies, in 4 KiB blocks."""

    blocks: int = 0
    ranges: list[tuple[int, int, int]] = field(default_factory=list)  # (start, count, class)
    journal: list[tuple[int, int]] = field(default_factory=list)
    groups: int = 0
    inodes_per_group: int = 0
    directories: int = 0
    files: int = 0

    def meta_map(self) -> list[tuple[int, int, int]]:
        """Sorted, disjoint ranges (first page, pages, class); overlaps keep the earlier range."""
        out: list[tuple[int, int, int]] = []
        for start, count, cls in sorted(self.ranges):
            if out:
                ps, pc, pcls = out[-1]
                if start < ps + pc:  # overlap: trim
                    cut = ps + pc - start
                    if cut >= count:
                        continue
                    start, count = start + cut, count - cut
                if start == ps + pc and cls == pcls:
                    out[-1] = (ps, pc + count, cls)
                    continue
            out.append((start, count, cls))
        return out

    def pages_by_class(self) -> dict[str, int]:
        sums = dict.fromkeys(META_NAMES[1:], 0)
        for _, count, cls in self.meta_map():
            sums[META_NAMES[cls]] += count
        return sums


_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def _span(text: str) -> tuple[int, int]:
    m = _RANGE.match(text)
    if m is None:
        raise ValueError(text)
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) else a
    return a, b - a + 1


def parse_dumpe2fs(text: str, layout: Layout) -> None:
    """Superblocks, descriptors, reserved descriptors, bitmaps and inode tables of every group."""
    patterns = (
        (re.compile(r"superblock at (\d+)"), OTHER),
        (re.compile(r"Group descriptors at ([\d-]+)"), BITMAP),
        (re.compile(r"Reserved GDT blocks at ([\d-]+)"), BITMAP),
        (re.compile(r"Block bitmap at (\d+)"), BITMAP),
        (re.compile(r"Inode bitmap at (\d+)"), BITMAP),
        (re.compile(r"Inode table at ([\d-]+)"), INODE),
    )
    for line in text.splitlines():
        if line.startswith("Block count:"):
            layout.blocks = int(line.split(":")[1])
        elif line.startswith("Inodes per group:"):
            layout.inodes_per_group = int(line.split(":")[1])
        elif line.startswith("Group "):
            layout.groups += 1
        for pat, cls in patterns:
            for m in pat.finditer(line):
                start, count = _span(m.group(1))
                layout.ranges.append((start, count, cls))


_EXTENT = re.compile(r"\((ETB\d+|[\d-]+)\):([\d-]+)")


def parse_debugfs_stats(text: str, layout: Layout, journal: bool = False) -> None:
    """Blocks of the inodes in ``debugfs stat`` output: directory data → 3, extent-tree blocks
    → 5, the journal inode's blocks → 1 (``journal``: the text is the journal inode's)."""
    kind = ""
    in_extents = False
    for line in text.splitlines():
        m = re.search(r"Type: (\w+)", line)
        if line.startswith("Inode:") and m:
            kind = m.group(1)
            in_extents = False
            if kind == "directory":
                layout.directories += 1
            elif kind == "regular" and not journal:
                layout.files += 1
            continue
        if line.startswith("EXTENTS:") or line.startswith("BLOCKS:"):
            in_extents = True
            continue
        if not in_extents:
            continue
        if not line.strip() or line.startswith("debugfs"):
            in_extents = False
            continue
        for ext in _EXTENT.finditer(line):
            logical, phys = ext.group(1), ext.group(2)
            start, count = _span(phys)
            if logical.startswith("ETB"):
                layout.ranges.append((start, count, OTHER))
            elif journal:
                layout.ranges.append((start, count, JOURNAL))
                layout.journal.append((start, count))
            elif kind == "directory":
                layout.ranges.append((start, count, DIRECTORY))


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
    run, the layout (JSON) and the captured events as blkparse text."""

    block: Path
    files: Path
    layout: Path
    text: Path

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
        _run(["mount", "-t", "ext4", "-o", mount_opts, device, str(mount)], "mounting the file system")
        try:
            yield device, mount
        finally:
            if os.path.ismount(mount):
                unmount(mount)
    finally:
        subprocess.run(["losetup", "-d", device], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


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
) -> tuple[int, dict[str, Any]]:
    """Run ``cmd`` on a fresh ext4 of ``capacity_pages`` 4 KiB blocks and capture its block I/O.

    ``run(cmd, cwd)`` runs the command (under the shim) and returns its exit status;
    ``convert_files()`` then writes the file-level trace and returns its summary. Returns the
    command's status and a summary of the block capture (also written to ``outputs.layout``).
    """
    from pcstream import api

    check_environment()
    say = progress or (lambda _msg: None)
    for p in (outputs.block, outputs.files, outputs.layout, outputs.text):
        p.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pcstream-block-", dir=outputs.block.parent))
    try:
        image = work / "ext4.img"
        raw = work / "trace.txt"
        say(f"mkfs.ext4 on a {capacity_pages * PAGE >> 20} MiB image")
        with _loop_fs(image, capacity_pages * PAGE, mount_opts) as (device, mount):
            st = os.stat(device)
            devno = _dev_t(st.st_rdev)
            fs_dev = os.stat(mount).st_dev
            cap = BlockCapture(devno, raw)
            try:
                cap.start()
                say(f"running {' '.join(cmd)} in {mount} ({device})")
                t0 = time.monotonic()
                status = run(cmd, mount)
                run_s = time.monotonic() - t0
                os.sync()
                paths = walk(mount)
                unmount(mount)
                lost = cap.stop()
            finally:
                cap.close()
            say("reading the layout (dumpe2fs, debugfs)")
            layout = read_layout(device, paths)
        conv = tracefs_to_blkparse(raw, outputs.text)
        say(f"importing {conv.events} block events")
        rep = api.engine().import_trace(
            "blkparse",
            str(outputs.text),
            str(outputs.block),
            capacity_pages=capacity_pages,
            meta_map=layout.meta_map(),
        )
        imported = json.loads(rep)
        files = convert_files()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lost += conv.lost
    summary: dict[str, Any] = {
        "command": cmd,
        "status": status,
        "run_s": round(run_s, 3),
        "capacity_pages": capacity_pages,
        "mount_opts": mount_opts,
        "mkfs": ["mkfs.ext4", *MKFS_ARGS],
        "tracepoint": f"block:{EVENT}",
        "fs_dev": fs_dev,
        "loop_dev_t": devno,
        "events": conv.events,
        "lost_events": lost,
        "block": imported,
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
        "outputs": {k: str(v) for k, v in vars(outputs).items()},
    }
    outputs.layout.write_text(json.dumps(summary, indent=1) + "\n")
    if lost:
        summary.setdefault("warnings", []).append(
            f"{lost} block events were lost (tracefs buffer overrun); the block trace is incomplete"
        )
    return status, summary


def load_layout(path: Path) -> dict[str, Any]:
    """A layout file written by :func:`capture`."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CliError(
            f"{path}: not a readable layout file ({exc}); re-run record --block", EXIT_INPUT
        ) from None
    if not isinstance(value, dict) or "fs_dev" not in value:
        raise CliError(f"{path}: not a layout file of record --block (no fs_dev)", EXIT_INPUT)
    return value


def summary_line(out: Outputs, s: dict[str, Any]) -> str:
    b = s["block"]
    line = (
        f"pcstream record --block: {s['events']} block events -> {b['rows']} rows "
        f"({b['write_pages']} pages written, {b['trim_pages']} trimmed, {b['flushes']} flushes) "
        f"-> {out.block}; "
        f"file-level trace -> {out.files}; layout -> {out.layout}"
    )
    if s.get("warnings"):
        line += "; warning: " + "; ".join(s["warnings"])
    return line
