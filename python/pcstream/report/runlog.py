"""``results.jsonl`` while a sweep runs: one line appended per finished run, so a sweep cut short
(Ctrl-C, a lost driver, a full cluster) keeps what it finished, and ``compare --resume`` skips it.

Each successful row carries ``trace_sha256`` (the trace's content) and ``run_key``: the SHA-256 of
everything that decides the run's result, namely the trace's SHA-256, the SSD (a preset's name, or
``sha256:`` and the TOML file's SHA-256), the policy and its parameters, seed, prefill, warm-up,
timing and the latency CDF's points. A resumed sweep runs only the jobs whose key no successful row
holds (failed runs are tried again); the key does not depend on where the trace lies. A torn last
line (the writer stopped mid-line) is ignored and cut before the next line is appended.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from typing import IO, Any

from pcstream.compare.outcome import Job, Outcome
from pcstream.errors import InputError, file_problem

JSONL = "results.jsonl"
# Read size while hashing a file.
_HASH_CHUNK = 8 << 20


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256_or_none(path: str) -> str | None:
    """A file's SHA-256, None when it is not a readable regular file (its runs fail anyway)."""
    if file_problem(path) is not None:
        return None
    try:
        return file_sha256(path)
    except OSError:
        return None


def is_ssd_file(ssd: str) -> bool:
    """Whether ``ssd`` names a TOML file rather than a preset (as compare's jobs decide)."""
    return ssd.endswith(".toml") or os.sep in ssd or os.path.exists(ssd)


class RunLog:
    """The results.jsonl of ``out_dir`` for ``jobs``: :meth:`done` gives the rows a resumed sweep
    keeps, :meth:`append` adds a finished run."""

    def __init__(self, out_dir: str, jobs: Sequence[Job], *, resume: bool) -> None:
        self.path = os.path.join(out_dir, JSONL)
        self._resume = resume
        self._handle: IO[bytes] | None = None
        traces = {job.trace: _sha256_or_none(job.trace) for job in jobs}
        ssds = {job.ssd: self._ssd_identity(job.ssd) for job in jobs}
        self._trace_sha = traces
        self._keys = {job: run_key(job, traces[job.trace], ssds[job.ssd]) for job in jobs}

    @staticmethod
    def _ssd_identity(ssd: str) -> str | None:
        if not is_ssd_file(ssd):
            return ssd
        digest = _sha256_or_none(ssd)
        return None if digest is None else f"sha256:{digest}"

    def done(self, jobs: Sequence[Job]) -> dict[int, Outcome]:
        """Index in ``jobs`` → the outcome a successful row of the existing file gives (only when
        resuming; the first row of a key wins)."""
        if not self._resume:
            return {}
        rows = {}
        for row in read_rows(self.path):
            key = row.get("run_key")
            if isinstance(key, str) and "error" not in row:
                rows.setdefault(key, row)
        found = {}
        for index, job in enumerate(jobs):
            key = self._keys.get(job)
            if key is not None and key in rows:
                found[index] = Outcome(job, result={**rows[key], "trace": job.trace})
        return found

    def annotate(self, outcome: Outcome) -> None:
        """Give a successful outcome its ``trace_sha256`` and ``run_key``."""
        key = self._keys.get(outcome.job)
        if outcome.result is None or key is None:
            return
        outcome.result["trace_sha256"] = self._trace_sha[outcome.job.trace]
        outcome.result["run_key"] = key

    def append(self, outcome: Outcome) -> None:
        """Write the outcome's line now (flushed to disk: a lost driver keeps it)."""
        line = (json.dumps(outcome.record(), separators=(",", ":")) + "\n").encode()
        try:
            if self._handle is None:
                self._handle = self._open()
            start = self._handle.tell()
            try:
                _write_all(self._handle.fileno(), line)
                os.fsync(self._handle.fileno())
            except OSError:
                # No torn line left behind: the file keeps only complete rows.
                with contextlib.suppress(OSError):
                    os.truncate(self.path, start)
                raise
        except OSError as exc:
            what = (exc.strerror or str(exc)).lower()
            message = f"{self.path}: cannot write ({what}); check free disk space and permissions"
            raise InputError(self.path, message) from None

    def _open(self) -> IO[bytes]:
        if self._resume:
            _cut_torn_line(self.path)
            return open(self.path, "ab", buffering=0)
        return open(self.path, "wb", buffering=0)

    def close(self) -> None:
        """Close the file. Every line was flushed when written; a close that fails can only meet
        the line whose write already failed (and was reported)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            with contextlib.suppress(OSError):
                handle.close()


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a write may take only part of it when the disk fills)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def run_key(job: Job, trace_sha256: str | None, ssd_identity: str | None) -> str | None:
    """The key of a run (None when its trace or SSD file cannot be read)."""
    if trace_sha256 is None or ssd_identity is None:
        return None
    options = job.options
    fields = {
        "trace_sha256": trace_sha256,
        "ssd": ssd_identity,
        "policy": job.policy,
        "params": sorted(options.params),
        "seed": options.seed,
        "prefill": options.prefill,
        "warmup": options.warmup,
        "timing": options.timing,
        "cdf_points": options.cdf_points,
    }
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def read_rows(path: str) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one a line; a line that does not parse (a torn last line) is
    skipped. No file: none."""
    rows = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(path, f"{path}: cannot read the results to resume from ({exc.strerror})") from None
    return rows


def _cut_torn_line(path: str) -> None:
    """Remove what follows the last newline of ``path`` (a line the writer did not finish)."""
    try:
        with open(path, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(max(0, size - 1))
            if handle.read(1) == b"\n":
                return
            end = size
            while end > 0:
                start = max(0, end - 65536)
                handle.seek(start)
                block = handle.read(end - start)
                cut = block.rfind(b"\n")
                if cut >= 0:
                    handle.truncate(start + cut + 1)
                    return
                end = start
            handle.truncate(0)
    except FileNotFoundError:
        return
