"""A seeded file workload for validating the file-system model against a real ext4: files are
created, appended to, overwritten in place, fsync'ed / fdatasync'ed, renamed over each other and
deleted, in the current directory, with the live data kept under a budget; beside them a
database-like file of fixed size takes random 4 KiB overwrites (what makes an SSD's GC copy).

    python3 tools/fs_workload.py [--total 256M] [--live 96M] [--db 48M] [--rate 32M] [--seed 1]

--total: bytes written in all; --live: the other files' total size is kept below this by
deleting the oldest files; --db: size of the database file (0: none); --rate: bytes per second
(0: as fast as possible; pacing lets writeback timers and journal commits act as they do in
applications). Prints one summary line. Deterministic for a seed (the operations, not the
timing).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = text[-1] if text and text[-1] in UNITS else ""
    return int(float(text[: len(text) - len(unit)]) * UNITS[unit])


class Workload:
    def __init__(self, seed: int, live_budget: int, db_bytes: int) -> None:
        self.rng = random.Random(seed)
        self.live_budget = live_budget
        self.db_pages = db_bytes // 4096
        self.db_fd = -1
        self.files: dict[str, int] = {}  # name -> size, in creation order
        self.fds: dict[str, int] = {}
        self.serial = 0
        self.written = 0
        self.ops = {
            "create": 0,
            "append": 0,
            "overwrite": 0,
            "fsync": 0,
            "fdatasync": 0,
            "rename": 0,
            "delete": 0,
            "db_write": 0,
            "db_sync": 0,
        }
        self.block = os.urandom(1 << 20)

    def _data(self, n: int) -> bytes:
        start = self.rng.randrange(0, len(self.block) - n + 1) if n < len(self.block) else 0
        return self.block[start : start + n]

    def _write(self, fd: int, offset: int, n: int) -> None:
        done = 0
        while done < n:
            chunk = min(n - done, len(self.block))
            os.pwrite(fd, self._data(chunk), offset + done)
            done += chunk
        self.written += n

    def _name(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}{self.serial:06d}.dat"

    def create(self) -> None:
        name = self._name(self.rng.choice(("log", "tbl", "tmp")))
        fd = os.open(name, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        n = self.rng.choice((4096, 16384, 65536, 262144, 1 << 20))
        self._write(fd, 0, n)
        self.files[name] = n
        self.fds[name] = fd
        self.ops["create"] += 1
        if len(self.fds) > 16:  # keep a bounded set of open files
            old = next(iter(self.fds))
            os.close(self.fds.pop(old))

    def _open(self, name: str) -> int:
        if name not in self.fds:
            self.fds[name] = os.open(name, os.O_WRONLY)
        return self.fds[name]

    def append(self) -> None:
        name = self.rng.choice(list(self.files)[-16:])
        n = self.rng.randrange(1, 17) * 4096 - self.rng.choice((0, 0, 100))
        self._write(self._open(name), self.files[name], n)
        self.files[name] += n
        self.ops["append"] += 1

    def overwrite(self) -> None:
        name = self.rng.choice(list(self.files))
        pages = max(1, self.files[name] // 4096)
        n = self.rng.randrange(1, 5) * 4096
        self._write(self._open(name), self.rng.randrange(0, pages) * 4096, n)
        self.files[name] = max(self.files[name], n)
        self.ops["overwrite"] += 1

    def sync(self) -> None:
        name = self.rng.choice(list(self.files)[-16:])
        if self.rng.random() < 0.5:
            os.fsync(self._open(name))
            self.ops["fsync"] += 1
        else:
            os.fdatasync(self._open(name))
            self.ops["fdatasync"] += 1

    def rename(self) -> None:
        """Write a new version beside an old file, sync it, rename it over the old one."""
        old = self.rng.choice(list(self.files))
        tmp = self._name("new")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        n = self.rng.choice((4096, 8192, 32768))
        self._write(fd, 0, n)
        os.fsync(fd)
        os.close(fd)
        if old in self.fds:
            os.close(self.fds.pop(old))
        os.rename(tmp, old)
        self.files[old] = n
        self.ops["rename"] += 1

    def delete_oldest(self) -> None:
        name = next(iter(self.files))
        if name in self.fds:
            os.close(self.fds.pop(name))
        os.unlink(name)
        del self.files[name]
        self.ops["delete"] += 1

    def db_open(self) -> None:
        """Create the database file, written once in full and synced."""
        if self.db_pages:
            self.db_fd = os.open("db.dat", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
            self._write(self.db_fd, 0, self.db_pages * 4096)
            os.fsync(self.db_fd)

    def db_write(self) -> None:
        """A transaction: 1-4 random pages overwritten, sometimes followed by fdatasync."""
        for _ in range(self.rng.randrange(1, 5)):
            self._write(self.db_fd, self.rng.randrange(self.db_pages) * 4096, 4096)
        self.ops["db_write"] += 1
        if self.rng.random() < 0.1:
            os.fdatasync(self.db_fd)
            self.ops["db_sync"] += 1

    def step(self) -> None:
        while self.files and sum(self.files.values()) > self.live_budget:
            self.delete_oldest()
        if self.db_pages and self.rng.random() < 0.5:
            self.db_write()
            return
        r = self.rng.random()
        if not self.files or r < 0.12:
            self.create()
        elif r < 0.62:
            self.append()
        elif r < 0.77:
            self.overwrite()
        elif r < 0.92:
            self.sync()
        elif r < 0.96:
            self.rename()
        else:
            self.delete_oldest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--total", type=size, default=size("256M"), help="bytes to write in all")
    ap.add_argument("--live", type=size, default=size("96M"), help="keep the files' total size below this")
    ap.add_argument("--db", type=size, default=size("48M"), help="size of the randomly overwritten file")
    ap.add_argument("--rate", type=size, default=size("32M"), help="bytes per second (0: unpaced)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    w = Workload(a.seed, a.live, a.db)
    t0 = time.monotonic()
    w.db_open()
    while w.written < a.total:
        w.step()
        if a.rate:
            ahead = w.written / a.rate - (time.monotonic() - t0)
            if ahead > 0.005:
                time.sleep(ahead)
    for fd in w.fds.values():
        os.close(fd)
    if w.db_fd >= 0:
        os.close(w.db_fd)
    ops = " ".join(f"{k}={v}" for k, v in w.ops.items())
    live = sum(w.files.values())
    print(f"fs_workload: wrote {w.written} bytes in {time.monotonic() - t0:.1f} s; {ops}; live {live} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
