"""The bio capture of ``record --block``: the BPF program of ``bpf/`` (built by ``make bpf`` into
``pcstream/_bpf/pcbio-capture``) on the ``block_bio_queue`` tracepoint of one device, and the file
it writes.

Per bio it gives what the tracefs capture (:mod:`.tracefs`) gives — time, operation and flags,
sector, bytes, the submitting process — plus the bio's write-life hint and, for writes, the file
pages it carries: runs of (inode, page index in the file, first page in the bio, pages). The
time is ``bpf_ktime_get_ns``, CLOCK_MONOTONIC, the clock of the record shim, so a bio's pages can
be joined with the shim's writes of the same run (:mod:`.bio_to_blocktrace`).

The file (``bpf/pcbio.h``): 64-byte little-endian records, the first byte the kind — a header,
then bios, each followed by the runs of its pages (a run names its bio by index), then an end
record with the counts when the loader stopped cleanly.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import numpy as np

from pcstream.errors import Failure

BINARY = Path(__file__).resolve().parent.parent / "_bpf" / "pcbio-capture"
BTF = Path("/sys/kernel/btf/vmlinux")
RECORD_BYTES = 64
KIND_HEADER, KIND_BIO, KIND_RUN, KIND_END = range(4)
# enum pcbio_op (the kernel's req_op) and enum pcbio_flag (pcbio.h).
OP_READ, OP_WRITE, OP_FLUSH, OP_DISCARD, OP_SECURE_ERASE, OP_WRITE_ZEROES = 0, 1, 2, 3, 5, 9
F_PREFLUSH, F_FUA, F_SYNC, F_META, F_TRUNCATED = 1, 2, 4, 8, 16
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 60.0
# Records read or written at a time: 4 MiB of the capture file.
READ_RECORDS = 1 << 16

BIO_DTYPE = np.dtype(
    [("kind", "u1"), ("op", "u1"), ("flags", "u1"), ("hint", "u1"), ("pid", "<u4"), ("ts_ns", "<u8"),
     ("sector", "<u8"), ("bytes", "<u4"), ("dev", "<u4"), ("nruns", "<u4"), ("_pad", "<u4"),
     ("comm", "S16"), ("_pad2", "V8")]
)  # fmt: skip
RUN_DTYPE = np.dtype(
    [("kind", "u1"), ("_pad", "V3"), ("pages", "<u4"), ("bio", "<u8"), ("ino", "<u8"), ("index", "<u8"),
     ("bio_page", "<u4"), ("sdev", "<u4"), ("_pad2", "V24")]
)  # fmt: skip
HEADER_DTYPE = np.dtype(
    [("kind", "u1"), ("magic", "S7"), ("version", "<u4"), ("record_bytes", "<u4"), ("dev", "<u4"),
     ("ringbuf_bytes", "<u4"), ("start_ns", "<u8"), ("_pad", "V32")]
)  # fmt: skip
END_DTYPE = np.dtype(
    [("kind", "u1"), ("_pad", "V7"), ("bios", "<u8"), ("runs", "<u8"), ("lost", "<u8"), ("orphans", "<u8"),
     ("truncated", "<u8"), ("stop_ns", "<u8"), ("_pad2", "V8")]
)  # fmt: skip
assert all(d.itemsize == RECORD_BYTES for d in (BIO_DTYPE, RUN_DTYPE, HEADER_DTYPE, END_DTYPE))


def kernel_dev(st_rdev: int) -> int:
    """The kernel's dev_t (``bd_dev``, ``s_dev``: major << 20 | minor) of a device number from stat."""
    return (os.major(st_rdev) << 20) | os.minor(st_rdev)


_PROBED: dict[str, str | None] = {}


def unavailable() -> str | None:
    """Why the BPF capture cannot run here (one line), or None when it can: root, BTF, the built
    loader, and a trial load and attach of the program (done once per process)."""
    if os.geteuid() != 0:
        return "the BPF capture needs root"
    if not BTF.is_file():
        return f"the kernel has no BTF ({BTF} is missing), which the BPF capture needs"
    if not BINARY.is_file():
        return f"the BPF capture is not built ({BINARY.name} missing; run make bpf)"
    if "probe" not in _PROBED:
        try:
            proc = subprocess.run(
                [str(BINARY), "--probe"], capture_output=True, text=True, timeout=60, check=False
            )
            err = " ".join(proc.stderr.split())[:300]
            _PROBED["probe"] = None if proc.returncode == 0 else (err or f"exit {proc.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _PROBED["probe"] = f"{BINARY.name}: {exc}"
    return _PROBED["probe"]


class BioCapture:
    """The loader, capturing the bios of device ``devno`` (kernel dev_t) into ``out``.

    ``start()`` returns once the program is attached; ``stop()`` ends it (SIGTERM: it drains its
    buffer and writes the end record) and returns its counts; ``close()`` (always; idempotent)
    kills it if it still runs. It runs in a session of its own, so a Ctrl-C at the terminal
    reaches the recorded program, not the capture, which still sees the unmount.
    """

    def __init__(self, devno: int, out: Path, ringbuf_mib: int = 8) -> None:
        self.devno = devno
        self.out = out
        self.ringbuf_mib = ringbuf_mib
        self.proc: subprocess.Popen[bytes] | None = None
        self._err_path = out.with_name(out.name + ".stderr")

    def start(self) -> None:
        dev = f"{self.devno >> 20}:{self.devno & 0xFFFFF}"
        cmd = [str(BINARY), "--dev", dev, "-o", str(self.out), "--ringbuf-mib", str(self.ringbuf_mib)]
        with open(self._err_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + READY_TIMEOUT_S
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            chunk = os.read(fd, 1) if ready else b""
            if not chunk:
                self.close()
                why = self._stderr() or ("no answer" if not ready else "it exited")
                raise Failure(f"the BPF capture did not start: {why}")
            line += chunk
        if line.strip() != b"ready":
            self.close()
            raise Failure(
                f"the BPF capture did not start: {line.decode(errors='replace').strip()}",
            )

    def _stderr(self) -> str:
        with contextlib.suppress(OSError):
            return " ".join(self._err_path.read_text(errors="replace").split())[:300]
        return ""

    def stop(self) -> dict[str, Any]:
        """End the capture; its counts {bios, runs, lost, orphans, truncated}."""
        if self.proc is None:
            return {}
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.close()
            raise Failure("the BPF capture did not stop within a minute") from None
        status = self.proc.returncode
        self.proc = None
        if status != 0:
            raise Failure(f"the BPF capture failed (exit {status}): {self._stderr()}")
        with contextlib.suppress(OSError):
            self._err_path.unlink()
        try:
            return dict(json.loads(out.decode().strip().splitlines()[-1]))
        except (ValueError, IndexError):
            raise Failure(f"the BPF capture ended without its counts: {out[:200]!r}") from None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        self.proc = None


@dataclass
class Capture:
    """A capture file read back: the bios in file order, the runs (``bio`` = index into
    ``bios``), the traced device, and the end counts (None when the file has no end record)."""

    bios: np.ndarray
    runs: np.ndarray
    dev: int
    start_ns: int
    end: dict[str, int] | None = None
    warnings: list[str] = field(default_factory=list)


def read(path: Path) -> Capture:
    """Read a capture file (see the module's docstring); a file that is not one is an error. The
    file is read in blocks of :data:`READ_RECORDS` records, twice (count, then fill), so the
    memory is that of its bios and runs, not the file and copies of it."""
    size = path.stat().st_size
    if size < RECORD_BYTES or size % RECORD_BYTES:
        raise Failure(f"{path}: not a pcbio capture ({size} bytes)")
    with open(path, "rb") as f:
        head = np.frombuffer(f.read(RECORD_BYTES), dtype=HEADER_DTYPE)[0]
        ok = head["kind"] == KIND_HEADER and bytes(head["magic"]).startswith(b"PCBIO")
        if not ok or head["version"] != 1:
            raise Failure(f"{path}: not a pcbio capture of version 1")
        counts = np.zeros(256, dtype=np.int64)
        for recs in _blocks(f):
            counts += np.bincount(recs[:, 0], minlength=256)
        bios = np.empty(int(counts[KIND_BIO]), dtype=BIO_DTYPE)
        runs = np.empty(int(counts[KIND_RUN]), dtype=RUN_DTYPE)
        nb = nr = 0
        end: np.ndarray | None = None
        for recs in _blocks(f):
            kinds = recs[:, 0]
            b, r = recs[kinds == KIND_BIO], recs[kinds == KIND_RUN]
            bios[nb : nb + len(b)] = b.view(BIO_DTYPE).reshape(-1)
            runs[nr : nr + len(r)] = r.view(RUN_DTYPE).reshape(-1)
            nb, nr = nb + len(b), nr + len(r)
            ends = recs[kinds == KIND_END]
            if len(ends):
                end = ends[-1:].copy().view(END_DTYPE).reshape(-1)[0]
    cap = Capture(bios, runs, int(head["dev"]), int(head["start_ns"]))
    if end is not None:
        cap.end = {k: int(end[k]) for k in ("bios", "runs", "lost", "orphans", "truncated")}
    else:
        cap.warnings.append("the capture file has no end record (the loader did not stop cleanly)")
    if len(runs) and int(runs["bio"].max()) >= len(bios):
        raise Failure(f"{path}: a run names a bio that is not in the file")
    return cap


def _blocks(f: BinaryIO) -> Iterator[np.ndarray]:
    """The records of the open capture file after its header, a block at a time (rows of bytes)."""
    f.seek(RECORD_BYTES)
    while block := f.read(READ_RECORDS * RECORD_BYTES):
        yield np.frombuffer(block, dtype=np.uint8).reshape(-1, RECORD_BYTES)


def rwbs(op: np.ndarray, flags: np.ndarray) -> list[str]:
    """blkparse's rwbs of each bio (F preflush, W/R/D/F operation, F FUA, S sync, M meta)."""
    out = []
    for o, f in zip(op.tolist(), flags.tolist()):
        s = "F" if f & F_PREFLUSH else ""
        s += {OP_WRITE: "W", OP_WRITE_ZEROES: "W", OP_READ: "R", OP_DISCARD: "D", OP_SECURE_ERASE: "DE",
              OP_FLUSH: "F"}.get(o, "N")  # fmt: skip
        s += ("F" if f & F_FUA else "") + ("S" if f & F_SYNC else "") + ("M" if f & F_META else "")
        out.append(s)
    return out


def to_blkparse(cap: Capture, dst: Path) -> int:
    """The bios as blkparse issue lines (as :func:`.tracefs.tracefs_to_blkparse` writes them: a
    write with a preflush is a flush line then the write), for reading and for the engine's
    importer; returns the number of bios written. Written :data:`READ_RECORDS` bios at a time."""
    order = np.argsort(cap.bios["ts_ns"], kind="stable")
    seq = 0
    with open(dst, "w", encoding="utf-8") as out:
        for at in range(0, len(order), READ_RECORDS):
            seq = _blkparse_lines(cap.bios[order[at : at + READ_RECORDS]], seq, out)
    return len(order)


def _blkparse_lines(b: np.ndarray, seq: int, out: TextIO) -> int:
    """Write the lines of the bios ``b`` (in time order), numbered after ``seq``; the last number."""
    sectors = (b["bytes"].astype(np.uint64) + 511) // 512
    kinds = rwbs(b["op"], b["flags"])
    for i, r in enumerate(kinds):
        ts = int(b["ts_ns"][i])
        stamp = f"{ts // 1_000_000_000}.{ts % 1_000_000_000:09d}"
        dev = int(b["dev"][i])
        head = f"{dev >> 20},{dev & 0xFFFFF} 0"
        comm = bytes(b["comm"][i]).split(b"\0")[0].decode(errors="replace").replace(" ", "_") or "?"
        pid = int(b["pid"][i])
        if r.startswith("F") and "W" in r[1:] and sectors[i]:
            seq += 1
            out.write(f"{head} {seq} {stamp} {pid} D F 0 + 0 [{comm}]\n")
            r = r[1:]
        seq += 1
        out.write(f"{head} {seq} {stamp} {pid} D {r} {int(b['sector'][i])} + {int(sectors[i])} [{comm}]\n")
    return seq
