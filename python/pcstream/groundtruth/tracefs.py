"""The block I/O of one device as the file system submits it, from a private tracefs instance
(``record --block``): the ``block:block_bio_queue`` events of that device, before merging — data
``W``, journal ``WSM`` (jbd2), preflush + FUA commit blocks ``FWFSM``, discards ``D``, cache
flushes ``FWS 0 + 0`` — and their conversion to blkparse issue lines, which the engine imports.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pcstream.errors import Failure

TRACEFS = Path("/sys/kernel/tracing")
EVENT = "block_bio_queue"
BUFFER_KB = 16384


def tracefs_root() -> Path:
    """The tracefs mount with block events; mounts tracefs at its usual place if needed."""
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, check=False)
    if not (TRACEFS / "instances").is_dir() or not (TRACEFS / "events" / "block" / EVENT).is_dir():
        raise Failure(
            f"tracefs with block events is not available at {TRACEFS} (mount -t tracefs nodev {TRACEFS} "
            "failed or the kernel has no block tracepoints)",
        )
    return TRACEFS


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
            raise Failure(f"{self.dir}/trace_pipe: reading failed ({self._error})")
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
