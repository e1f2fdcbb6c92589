"""filebench-like personalities, small and deterministic: ``varmail`` and ``fileserver``.

* ``varmail`` (a mail server): a set of small files (mean 16 KiB); each loop deletes one file,
  creates a new one (write + fsync), appends to an existing one (append + fsync) and reads one.
* ``fileserver``: larger files (mean 128 KiB) written whole, appended to (16 KiB), read and
  deleted; no fsync.

Both keep the file set's size bounded, write at most ``--rate`` MiB/s and stop after
``--duration`` seconds or ``--loops`` loops. Run:
``python -m pcstream.workloads.fileops {varmail|fileserver} [--dir D] [--duration S]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Personality:
    files: int
    mean_bytes: int
    append_bytes: int
    fsync: bool


PERSONALITIES = {
    "varmail": Personality(files=1000, mean_bytes=16 << 10, append_bytes=16 << 10, fsync=True),
    "fileserver": Personality(files=600, mean_bytes=128 << 10, append_bytes=16 << 10, fsync=False),
}


class Workload:
    def __init__(self, root: str, p: Personality, seed: int, rate_bytes: float) -> None:
        self.root, self.p = root, p
        self.r = random.Random(seed)
        self.rate = rate_bytes
        self.written = 0
        self.t0 = time.monotonic()
        self.names: list[str] = []
        self.next_id = 0
        os.makedirs(root, exist_ok=True)

    def _size(self) -> int:
        # Gamma-like spread around the mean, as filebench's file sizes.
        return max(512, int(self.r.gammavariate(1.5, self.p.mean_bytes / 1.5)))

    def _throttle(self, n: int) -> None:
        self.written += n
        ahead = self.written / self.rate - (time.monotonic() - self.t0)
        if ahead > 0:
            time.sleep(ahead)

    def _write(self, path: str, n: int, append: bool) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
        try:
            left = n
            while left > 0:
                k = min(left, 64 << 10)
                os.write(fd, self.r.randbytes(k))
                left -= k
            if self.p.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._throttle(n)

    def create(self) -> None:
        name = os.path.join(self.root, f"f{self.next_id:07d}")
        self.next_id += 1
        self._write(name, self._size(), append=False)
        self.names.append(name)

    def loop(self) -> None:
        if len(self.names) >= self.p.files:
            victim = self.names.pop(self.r.randrange(len(self.names)))
            os.unlink(victim)
        self.create()
        if self.names:
            self._write(self.r.choice(self.names), self.p.append_bytes, append=True)
            with open(self.r.choice(self.names), "rb") as f:
                f.read()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("personality", choices=sorted(PERSONALITIES))
    ap.add_argument("--dir", default="fileset")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--loops", type=int, default=None)
    ap.add_argument("--rate", type=float, default=4.0, help="write rate limit, MiB/s")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", type=int, default=None, help="files in the set (default: the personality's)")
    a = ap.parse_args(argv)
    if a.rate <= 0 or a.duration <= 0 or (a.files is not None and a.files < 2):
        print("error: --rate and --duration must be > 0 and --files at least 2", file=sys.stderr)
        return 2
    p = PERSONALITIES[a.personality]
    if a.files is not None:
        p = dataclasses.replace(p, files=a.files)
    w = Workload(a.dir, p, a.seed, a.rate * (1 << 20))
    # Pre-populate half the file set, as filebench does before the run.
    for _ in range(p.files // 2):
        w.create()
    start, loops = time.monotonic(), 0
    while (a.loops is None or loops < a.loops) and time.monotonic() - start < a.duration:
        w.loop()
        loops += 1
    print(f"{a.personality}: {loops} loops, {w.written >> 20} MiB written, {len(w.names)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
