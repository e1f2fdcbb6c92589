"""Java call paths as the PCs of a JVM's writes, through Java Flight Recorder (docs/RECORD.md,
"Java programs").

Under the shim alone every write of a JVM gets one signature: the native walk ends in libjava and
libjvm frames. When the recorded program is a JVM (the ``java`` launcher, or an executable linking
libjvm), :func:`prepare` turns on JFR's ``jdk.FileWrite`` and ``jdk.FileForce`` events (stack
traces on, threshold 0 ms, every other event off) recording into the log directory. After the run
:meth:`JavaRun.attribute` reads the recording (:data:`READER`, streamed), joins each event to
the shim records it belongs to (same OS thread, same file, in order, the bytes adding up) and
rewrites the shim's logs before conversion: a joined record's ``pc`` becomes the hash of its
innermost Java frames, and new ``S``/``F``/``N`` lines in the process image's ``.txt`` give those
frames their method names (``N`` lines: shim/include/pcshim.h). JFR's own files are removed from
the logs. Writes JFR does not report (mapped buffers, native code) keep their native signature.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import struct
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcstream.record import elf

# The module every Java frame names, and its module id (the shim's hash of a path without a
# build-id: elf.module_id("java", None)).
JAVA_MODULE = "java"
JAVA_MODULE_ID = elf.shim_hash(JAVA_MODULE.encode())
# In the log directory: the settings file, the recording and JFR's repository (its chunks).
JFR_DIR = "jfr"
SETTINGS_FILE = "writes.jfc"
RECORDING_FILE = "run.jfr"
REPOSITORY_DIR = "repository"
# The recordings of the JVMs the program starts itself (one file per JVM, named by JFR).
CHILDREN_DIR = "children"
# The shim's variable carrying the JVM options for those (shim/include/pcshim.h).
SHIM_JFR_ENV = "PCSHIM_JFR"
FILE_WRITE = "jdk.FileWrite"
FILE_FORCE = "jdk.FileForce"
# A write's shim timestamp may lie this far outside its event's span: JFR's event times are wall
# clock, turned into CLOCK_MONOTONIC with an offset measured before the run (off by microseconds;
# more if the wall clock is stepped during the run).
SLACK_NS = 2_000_000
# Characters a path in the JVM options cannot hold.
UNSAFE_IN_OPTIONS = frozenset(", \t\n\r")
# The reader of a recording's file events, a Java source file run by the JDK's launcher.
READER = Path(__file__).with_name("JfrWrites.java")

# The shim's .bin layout (shim/include/pcshim.h, struct pcshim_record): 88 bytes, little-endian.
HEADER_BYTES = 32
RECORD = struct.Struct("<8QIIiIHHI")
OP_WRITE, OP_FSYNC, OP_FDATASYNC = 2, 3, 4
# Write flags JFR can report: a plain write/pwrite/writev call, or syscall(SYS_write) (0 or 64),
# on a description with or without O_DIRECT (512: a FileChannel opened with
# ExtendedOpenOption.DIRECT, as Cassandra's commit log in `direct` mode).
VIA_SYSCALL = 1 << 6
VIA_DIRECT = 1 << 9


def settings_text() -> str:
    """The .jfc file: FileWrite and FileForce with stack traces and no threshold; nothing else
    (events a settings file does not name stay off)."""
    events = "".join(
        f'  <event name="{name}">\n'
        '    <setting name="enabled">true</setting>\n'
        '    <setting name="stackTrace">true</setting>\n'
        '    <setting name="threshold">0 ms</setting>\n'
        "  </event>\n"
        for name in (FILE_WRITE, FILE_FORCE)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0">\n{events}</configuration>\n'
    )


def is_jvm(program: str) -> str | None:
    """How ``program`` (a resolved path) runs a JVM: "launcher" for the ``java`` launcher (it
    takes JVM options on its command line), "libjvm" for an executable that links libjvm (only
    ``JAVA_TOOL_OPTIONS`` reaches its JVM), else None."""
    if os.path.basename(program) == "java":
        return "launcher"
    if any(name.startswith("libjvm.so") for name in elf.needed(program) or []):
        return "libjvm"
    return None


def jvm_options(jfr_dir: Path, frames: int, filename: Path | None = None) -> list[str]:
    """The JVM options of a recording: JFR started with our settings, its repository and the
    stack depth (``frames``: the innermost frames are those kept), its start-up message off.
    ``filename``: where the recording goes (a directory: JFR names the file by the JVM's pid),
    the run's :data:`RECORDING_FILE` by default."""
    target = filename or jfr_dir / RECORDING_FILE
    return [
        f"-XX:StartFlightRecording=settings={jfr_dir / SETTINGS_FILE},filename={target}",
        f"-XX:FlightRecorderOptions=stackdepth={frames},repository={jfr_dir / REPOSITORY_DIR}",
        "-Xlog:jfr+startup=off",
    ]


def clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the closest of a few paired readings."""
    best: tuple[int, int] | None = None
    for _ in range(5):
        a = time.monotonic_ns()
        wall = time.time_ns()
        b = time.monotonic_ns()
        if best is None or b - a < best[0]:
            best = (b - a, wall - (a + b) // 2)
    assert best is not None
    return best[1]


@dataclass
class JavaRun:
    """How the program runs (``cmd``, ``env``: None = ours) and, for a JVM, where its recording goes."""

    cmd: list[str]
    env: dict[str, str] | None = None
    jfr_dir: Path | None = None
    frames: int = 12
    java: str | None = None  # the launcher that runs READER
    offset_ns: int = 0
    cwd: str = field(default_factory=os.getcwd)
    not_started: str | None = None  # why a JVM runs without JFR
    # Processes whose logs are the JVM's whatever files they wrote (record --pid: the recording is
    # written after the capture ends, so its writes cannot name the JVM's images)
    pids: frozenset[int] = frozenset()
    # The recorded program is itself a JVM (its recording is RECORDING_FILE); else only the JVMs
    # it starts are recorded, each into CHILDREN_DIR
    top: bool = True

    def attribute(self, logdir: Path) -> dict[str, Any]:
        """After the run: join the recording to the logs and rewrite them (see the module's doc).
        The summary's ``java_*`` counts and its ``warnings``; {} for a program that is not a JVM."""
        if self.not_started is not None:
            return {"warnings": [self.not_started]}
        if self.jfr_dir is None:
            return {}
        recording = self.jfr_dir / RECORDING_FILE
        children = sorted(p for p in (self.jfr_dir / CHILDREN_DIR).glob("*.jfr") if _regular(p))
        if not self.top and not children:
            return {}  # the program started no JVM (or none lived to write its recording)
        logs = JvmLogs.read(logdir, self.jfr_dir, self.pids)
        join = Join()
        problem = None
        if self.java is None:
            problem = "no 'java' launcher found to read it with (a JDK's)"
        elif self.top and not recording.is_file():
            problem = f"{recording} was not written (JFR did not start, or the JVM was killed before its end)"
        else:
            try:
                recordings = [recording] if self.top else []
                join.run(
                    logs,
                    read_events(self.java, [*recordings, *children], self.frames, self.offset_ns, self.cwd),
                )
            except JfrError as exc:
                problem = str(exc)
                join = Join()
        logs.rewrite(join.assigned, join.sigs)
        return join.summary(logs, problem)


def prepare(cmd: list[str], program: str, logdir: Path, frames: int) -> JavaRun:
    """How to run ``cmd`` (its program resolved to ``program``) with logs in ``logdir``: as it is,
    or for a JVM with JFR recording its file writes (options right after ``java``; for another
    executable linking libjvm in ``JAVA_TOOL_OPTIONS``, which makes the JVM print "Picked up
    JAVA_TOOL_OPTIONS: ..." on stderr)."""
    kind = is_jvm(program)
    java = os.path.realpath(program) if kind == "launcher" else shutil.which("java")
    if kind is None and java is None:
        return JavaRun(cmd)  # no JVM here, nor one the program could start by name
    jfr_dir = (logdir / JFR_DIR).resolve()
    if any(c in str(jfr_dir) for c in UNSAFE_IN_OPTIONS):
        # JFR's options are split at commas, JAVA_TOOL_OPTIONS at white space: such a path would
        # make the JVM refuse to start
        if kind is None:
            return JavaRun(cmd)
        why = f"the log directory {logdir} has a comma or white space in its path"
        return JavaRun(cmd, not_started=f"JFR not started, the JVM's writes keep native signatures: {why}")
    jfr_dir.mkdir(parents=True, exist_ok=True)
    (jfr_dir / SETTINGS_FILE).write_text(settings_text())
    # a kept log directory's last recordings
    (jfr_dir / RECORDING_FILE).unlink(missing_ok=True)
    shutil.rmtree(jfr_dir / CHILDREN_DIR, ignore_errors=True)
    (jfr_dir / CHILDREN_DIR).mkdir()
    # A `java` the program runs itself gets JFR's options from the shim, recording into CHILDREN_DIR.
    children = jvm_options(jfr_dir, frames, jfr_dir / CHILDREN_DIR)
    env = dict(os.environ, **{SHIM_JFR_ENV: " ".join(children)})
    run = JavaRun(cmd, env, jfr_dir, frames, java, clock_offset_ns(), top=kind is not None)
    options = jvm_options(jfr_dir, frames)
    if kind == "launcher":
        run.cmd = [cmd[0], *options, *cmd[1:]]
    elif kind == "libjvm":
        theirs = os.environ.get("JAVA_TOOL_OPTIONS")
        env["JAVA_TOOL_OPTIONS"] = " ".join([*([theirs] if theirs else []), *options])
    return run


# --------------------------------------------------------------------------- the recording


class JfrError(Exception):
    """The recording could not be read (one line: what and why)."""


@dataclass(frozen=True)
class JfrEvent:
    """One FileWrite (``force`` False) or FileForce event: OS thread, path as the program gave it
    (None for a descriptor without one, e.g. a standard stream), bytes written, span in
    CLOCK_MONOTONIC ns, innermost frames (``package.Class.method``, line)."""

    force: bool
    tid: int
    path: str | None
    bytes: int
    start_ns: int
    end_ns: int
    frames: tuple[tuple[str, int], ...]
    # The path as the program gave it, when relative (normalized): the JVM's working directory
    # may not be ``cwd`` (a JVM a script started elsewhere), see :meth:`Join.records_of`
    relative: str | None = None


def unescape(text: bytes) -> str:
    """A text field of the reader's output: UTF-8 with backslash and newline escaped."""
    plain = text.decode("utf-8", "replace")
    if "\\" not in plain:
        return plain
    return _ESCAPED.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), plain)


_ESCAPED = re.compile(r"\\(.)", re.S)


def parse_events(lines: Iterable[bytes], offset_ns: int, cwd: str) -> Iterator[JfrEvent]:
    """The events of :data:`READER`'s output (its format is in the file), their times turned
    into CLOCK_MONOTONIC (``offset_ns`` = wall - monotonic) and their paths made absolute against
    the JVM's working directory ``cwd``."""
    it = iter(lines)
    names: dict[bytes, tuple[str, int]] = {}  # a frame line -> the frame (call sites repeat)
    paths: dict[bytes, str] = {}
    relative: dict[bytes, str | None] = {}
    for line in it:
        fields = line.rstrip(b"\n").split(b" ", 8)
        if len(fields) != 9 or fields[0] != b"E" or fields[1] not in (b"W", b"F"):
            raise JfrError(f"unexpected line from the reader: {line[:80]!r}")
        _e, kind, tid, start, duration, written, n, has_path, path = fields
        frames = []
        for _ in range(int(n)):
            raw = next(it, b"")
            frame = names.get(raw)
            if frame is None:
                number, _sp, name = raw.rstrip(b"\n").partition(b" ")
                frame = names[raw] = (unescape(name), max(int(number or b"x"), 0))
            frames.append(frame)
        if has_path == b"1" and path not in paths:
            given = unescape(path)
            paths[path] = os.path.normpath(os.path.join(cwd, given))
            relative[path] = None if os.path.isabs(given) else os.path.normpath(given)
        begin = int(start) - offset_ns
        yield JfrEvent(
            force=kind == b"F",
            tid=int(tid),
            path=paths[path] if has_path == b"1" else None,
            bytes=int(written),
            start_ns=begin,
            end_ns=begin + max(int(duration), 0),
            frames=tuple(frames),
            relative=relative.get(path) if has_path == b"1" else None,
        )


def read_events(
    java: str, recordings: list[Path], frames: int, offset_ns: int, cwd: str
) -> Iterator[JfrEvent]:
    """The FileWrite and FileForce events of ``recordings`` (:func:`parse_events`), read in
    order by one run of :data:`READER` with the JDK's ``java`` as a single-file source program,
    streamed."""
    recording = recordings[0] if len(recordings) == 1 else recordings[0].parent
    try:
        proc = subprocess.Popen(
            [java, str(READER), *map(str, recordings), str(frames)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise JfrError(f"{java}: {exc.strerror or exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    try:
        yield from parse_events(proc.stdout, offset_ns, cwd)
    except (JfrError, ValueError) as exc:
        proc.kill()
        raise JfrError(f"{recording}: {exc}") from None
    finally:
        proc.stdout.close()
        status = proc.wait()
        err = [x for x in proc.stderr.read().decode(errors="replace").splitlines() if x.strip()]
        proc.stderr.close()
    if status != 0:
        raise JfrError(f"{recording}: {java} {READER.name} failed: {err[0] if err else f'status {status}'}")


# --------------------------------------------------------------------------- the shim logs


def java_signature(frames: Iterable[tuple[str, int]]) -> int:
    """The PC signature of Java frames, innermost first: the shim's hash (FNV-1a, then a 64-bit
    mix: :func:`elf.shim_hash`) of the UTF-8 text ``java`` followed by ``\\n<symbol> <line>`` per
    frame. Never 0."""
    text = JAVA_MODULE + "".join(f"\n{symbol} {line}" for symbol, line in frames)
    return elf.shim_hash(text.encode())


def sig_lines(sig: int, frames: tuple[tuple[str, int], ...]) -> bytes:
    """The ``S`` line of a Java signature and its ``F`` + ``N`` lines (module ``java``, offset =
    the line, ``N`` = the method's name)."""
    out = [f"S {sig:016x} {len(frames)}\n".encode()]
    for symbol, line in frames:
        name = symbol.encode()
        out.append(f"F {JAVA_MODULE_ID:016x} {line:x} {len(JAVA_MODULE)} {JAVA_MODULE}\n".encode())
        out.append(f"N {len(name)} ".encode() + name + b"\n")
    return b"".join(out)


def txt_lines(b: bytes) -> Iterator[tuple[int, bytes]]:
    """(tag, whole line) of a shim ``.txt`` file; ``P``, ``F`` and ``N`` lines carry
    length-prefixed bytes that may hold a newline. ValueError at a line without its end."""
    at = 0
    while at < len(b):
        tag = b[at]
        start = at + 2
        skip = {ord("P"): 1, ord("F"): 2, ord("N"): 0}.get(tag)
        if skip is not None:
            for _ in range(skip):
                start = b.index(b" ", start) + 1
            sp = b.index(b" ", start)
            end = sp + 1 + int(b[start:sp]) + 1
        else:
            end = b.find(b"\n", at) + 1
        if end <= at or end > len(b) or b[end - 1] != ord("\n"):
            raise ValueError(f"byte {at}: a line without its end (torn)")
        yield tag, b[at:end]
        at = end


def path_table(b: bytes) -> dict[int, str] | None:
    """The ``P`` lines of a ``.txt`` file: hash -> normalized path; None when the file does not
    parse (torn: the converter reports it, and such an image is left as it is)."""
    paths = {}
    try:
        for tag, line in txt_lines(b):
            if tag == ord("P"):
                h, _n, p = line[2:-1].split(b" ", 2)
                paths[int(h, 16)] = os.path.normpath(p.decode(errors="replace"))
    except (ValueError, IndexError):
        return None
    return paths


@dataclass
class Image:
    """One process image's logs, if the JVM's: its ``.bin``, ``.txt`` and path table."""

    bin: Path
    txt: Path
    paths: dict[int, str]


def _regular(path: Path) -> bool:
    """``path`` is a regular file (lstat: a symbolic link is not)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


@dataclass
class JvmLogs:
    """The process images of a log directory that wrote JFR's files (the recorded JVM), and the
    records of theirs that JFR events can be joined to."""

    jfr_dir: Path
    images: list[Image]
    # (tid, normalized path) -> [(ts_ns, bytes or 1 for a sync, (image, record index))] in log order
    writes: dict[tuple[int, str], list[tuple[int, int, tuple[int, int]]]]
    syncs: dict[tuple[int, str], list[tuple[int, int, tuple[int, int]]]]
    dropped: int = 0

    @staticmethod
    def read(logdir: Path, jfr_dir: Path, pids: frozenset[int] = frozenset()) -> JvmLogs:
        logs = JvmLogs(jfr_dir, [], {}, {})
        for bin_path in sorted(logdir.glob("*.bin")):
            txt = bin_path.with_suffix(".txt")
            # The program can make a FIFO with a log's name: reading it would wait for a writer.
            # The converter warns about such names; here they are left alone.
            if not (_regular(bin_path) and _regular(txt)):
                continue
            try:
                table = txt.read_bytes()
            except OSError:
                continue
            paths = path_table(table)
            pid = bin_path.name.split(".", 1)[0]
            ours = pid.isdigit() and int(pid) in pids
            if paths is not None and (ours or any(logs.is_jfr(p) for p in paths.values())):
                logs.add_image(Image(bin_path, txt, paths))
        return logs

    def is_jfr(self, path: str | None) -> bool:
        return path is not None and (path == str(self.jfr_dir) or path.startswith(str(self.jfr_dir) + "/"))

    def add_image(self, image: Image) -> None:
        k = len(self.images)
        self.images.append(image)
        data = image.bin.read_bytes()
        whole = (len(data) - HEADER_BYTES) // RECORD.size
        for i, rec in enumerate(RECORD.iter_unpack(data[HEADER_BYTES : HEADER_BYTES + whole * RECORD.size])):
            ts, _off, length, _pc, _dev, _ino, path, _aux, _pid, tid, _fd, flags, op, _nf, _r = rec
            name = image.paths.get(path)
            if name is None:
                continue
            if op == OP_WRITE and flags & ~(VIA_SYSCALL | VIA_DIRECT) == 0:
                self.writes.setdefault((tid, name), []).append((ts, length, (k, i)))
            elif op in (OP_FSYNC, OP_FDATASYNC):
                self.syncs.setdefault((tid, name), []).append((ts, 1, (k, i)))

    def rewrite(self, assigned: dict[tuple[int, int], tuple[int, int]], sigs: dict[int, bytes]) -> None:
        """Rewrite each image: records on JFR's files dropped, joined ones given their Java
        signature (``assigned``: (image, record) -> (signature, frames)), the signatures used
        added to the ``.txt`` (``sigs``: their S/F/N lines), warnings about JFR's files and the
        record count of the ``E`` line adjusted."""
        for k, image in enumerate(self.images):
            data = image.bin.read_bytes()
            whole = (len(data) - HEADER_BYTES) // RECORD.size
            out = [data[:HEADER_BYTES]]
            used: set[int] = set()
            kept = 0
            for i, rec in enumerate(
                RECORD.iter_unpack(data[HEADER_BYTES : HEADER_BYTES + whole * RECORD.size])
            ):
                fields = list(rec)
                if self.is_jfr(image.paths.get(fields[6])) or self.is_jfr(image.paths.get(fields[7])):
                    self.dropped += 1
                    continue
                if (k, i) in assigned:
                    fields[3], fields[13] = assigned[k, i]
                    used.add(fields[3])
                out.append(RECORD.pack(*fields))
                kept += 1
            out.append(data[HEADER_BYTES + whole * RECORD.size :])
            replace(image.bin, b"".join(out))
            replace(image.txt, self.new_txt(image.txt.read_bytes(), kept, [sigs[s] for s in sorted(used)]))

    def new_txt(self, old: bytes, kept: int, added: list[bytes]) -> bytes:
        lines, end = [], b""
        for tag, line in txt_lines(old):
            if tag == ord("W") and str(self.jfr_dir).encode() in line:
                continue
            if tag == ord("E"):
                end = f"E {kept}\n".encode()
                continue
            lines.append(line)
        return b"".join([*lines, *added, end])


def replace(path: Path, data: bytes) -> None:
    """Write ``path`` anew, atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- the join


@dataclass
class Join:
    """Events joined to records: ``assigned`` (image, record) -> (signature, frames),
    ``sigs`` signature -> its .txt lines, and the counts."""

    assigned: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    sigs: dict[int, bytes] = field(default_factory=dict)
    # frames -> signature: a call site's events share their frames, and hashing is slow here
    sig_of: dict[tuple[tuple[str, int], ...], int] = field(default_factory=dict)
    events: int = 0
    joined: int = 0
    java_writes: int = 0
    java_bytes: int = 0
    no_path: int = 0
    no_file: int = 0
    unmatched: int = 0

    def run(self, logs: JvmLogs, events: Iterable[JfrEvent]) -> None:
        """Join ``events`` to ``logs`` (see :func:`match_one`), per (thread, file) in time order;
        then the events without a path (a standard stream, a descriptor from elsewhere) to the
        records of their thread no event took, whatever their file (``java ... > log``)."""
        keyed: dict[tuple[bool, int, str | None], list[JfrEvent]] = {}
        for ev in events:
            self.events += 1
            if ev.bytes == 0 and not ev.force:
                self.joined += 1  # a write of nothing: no write call to find
            else:
                keyed.setdefault((ev.force, ev.tid, ev.path), []).append(ev)
        for (force, tid, path), evs in sorted(keyed.items(), key=lambda kv: kv[0][2] is None):
            if path is None:
                records = sorted(
                    (
                        r
                        for (t, _p), rs in logs.writes.items()
                        if t == tid
                        for r in rs
                        if r[2] not in self.assigned
                    ),
                    key=lambda r: r[0],
                )
                self.no_path += len(evs) - self.join(evs, records, force)
                continue
            records = self.records_of(logs.syncs if force else logs.writes, tid, path, evs[0].relative)
            if not records:
                self.no_file += len(evs)
                continue
            self.unmatched += len(evs) - self.join(evs, records, force)

    @staticmethod
    def records_of(
        by_file: dict[tuple[int, str], list[tuple[int, int, tuple[int, int]]]],
        tid: int,
        path: str,
        relative: str | None,
    ) -> list[tuple[int, int, tuple[int, int]]]:
        """The records of thread ``tid`` on ``path``; for a path the program gave relative to a
        working directory that is not the recording's, those on the one file of the thread
        whose absolute path ends with it (none when several do)."""
        records = by_file.get((tid, path), [])
        if records or relative is None:
            return records
        tail = "/" + relative
        found = [rs for (t, p), rs in by_file.items() if t == tid and p.endswith(tail)]
        return found[0] if len(found) == 1 else []

    def join(self, evs: list[JfrEvent], records: list[tuple[int, int, tuple[int, int]]], force: bool) -> int:
        """Join ``evs`` in time order to ``records`` (in time order); how many were joined."""
        evs.sort(key=lambda e: e.start_ns)
        nxt, joined = 0, 0
        for ev in evs:
            run = match_one(records, nxt, ev)
            if run is not None:
                self.take(ev, records[run[0] : run[1]], force)
                nxt, joined = run[1], joined + 1
        return joined

    def take(self, ev: JfrEvent, records: list[tuple[int, int, tuple[int, int]]], force: bool) -> None:
        sig = self.sig_of.get(ev.frames)
        if sig is None:
            sig = self.sig_of[ev.frames] = java_signature(ev.frames)
            self.sigs[sig] = sig_lines(sig, ev.frames)
        for _ts, length, where in records:
            self.assigned[where] = (sig, len(ev.frames))
            if not force:
                self.java_writes += 1
                self.java_bytes += length
        self.joined += 1

    def summary(self, logs: JvmLogs, problem: str | None) -> dict[str, Any]:
        """The ``java_*`` counts of the summary and its warnings."""
        warnings = []
        if problem is not None:
            warnings.append(
                f"the JVM's JFR recording could not be read, its writes keep native signatures: {problem}"
            )
        missed = self.no_path + self.no_file + self.unmatched
        if missed:
            warnings.append(
                f"{missed} of {self.events} JFR file events found no write: {self.no_path} without a "
                f"path (a standard stream to a pipe or terminal), {self.no_file} on files with no "
                f"recorded write of their thread (not regular files), {self.unmatched} with no write of "
                "their thread, file and bytes within their time"
            )
        return {
            "java_events": self.events,
            "java_writes": self.java_writes,
            "java_bytes": self.java_bytes,
            "java_unmatched_events": missed,
            "java_dropped_records": logs.dropped,
            "warnings": warnings,
        }


def match_one(
    records: list[tuple[int, int, tuple[int, int]]], nxt: int, ev: JfrEvent
) -> tuple[int, int] | None:
    """The run ``records[a:b]`` (a >= ``nxt``) of consecutive records within ``ev``'s span (give
    or take :data:`SLACK_NS`) whose bytes add up to exactly ``ev.bytes``, the earliest; None when
    there is none. A write call the JVM split into several (a partial write, a gathering write's
    parts) is a run of several records; a record before the run is a write JFR did not report."""
    lo, hi = ev.start_ns - SLACK_NS, ev.end_ns + SLACK_NS
    while nxt < len(records) and records[nxt][0] < lo:
        nxt += 1
    a = nxt
    while a < len(records) and records[a][0] <= hi:
        total, b = 0, a
        while b < len(records) and records[b][0] <= hi and total < ev.bytes:
            total += records[b][1]
            b += 1
        if total == ev.bytes:
            return a, b
        a += 1
    return None
