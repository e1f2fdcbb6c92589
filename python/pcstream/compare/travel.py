"""Files that travel with Ray tasks: a trace (or an SSD config) put once into Ray's object store,
in chunks, and written back to a temporary file on whichever worker runs a simulation of it.

A cluster's workers are other machines that need not see the driver's files: the driver reads
each file once (:func:`put_file`), every task that needs it gets the same chunk references, and
the worker fetches the chunks one at a time into a private temporary directory (its memory holds
one chunk, never the whole trace), checks the SHA-256, runs the simulation on its copy and removes
it (:func:`run_shipped`). Paths in the outcome are the driver's again, so results and messages are
those of a run on the driver's files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pcstream.compare.outcome import Job, Outcome

# The size of one object of a travelling file: what a worker holds in memory at a time while it
# writes its copy (and the driver while it reads the file).
CHUNK_BYTES = 32 << 20


@dataclass(frozen=True)
class Shipped:
    """A file in Ray's object store: the driver's path (results and messages name it), its size
    and SHA-256, and the references of its chunks, in order."""

    path: str
    size: int
    sha256: str
    chunks: tuple[Any, ...]


def _chunks(handle: Any) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK_BYTES):
        yield chunk


def put_file(ray: Any, path: str) -> Shipped:
    """Put the file at ``path`` into the object store, chunk by chunk (the driver owns the
    objects: they live as long as a task may still need them)."""
    digest = hashlib.sha256()
    refs = []
    size = 0
    with open(path, "rb") as handle:
        for chunk in _chunks(handle):
            digest.update(chunk)
            size += len(chunk)
            refs.append(ray.put(chunk))
    return Shipped(path, size, digest.hexdigest(), tuple(refs))


def fetch(ray: Any, shipped: Shipped, directory: str) -> str:
    """Write ``shipped`` into ``directory`` under its own base name; the local path. A copy that
    does not match the driver's SHA-256 is an error (a bug or a corrupted transfer, not user
    input): the task fails and Ray reports it."""
    local = os.path.join(directory, os.path.basename(shipped.path) or "trace")
    digest = hashlib.sha256()
    with open(local, "wb") as handle:
        for ref in shipped.chunks:
            chunk = ray.get(ref)
            digest.update(chunk)
            handle.write(chunk)
            del chunk  # one chunk in memory at a time
    if digest.hexdigest() != shipped.sha256:
        raise RuntimeError(f"{shipped.path}: the worker's copy does not match the driver's SHA-256")
    return local


@contextlib.contextmanager
def local_job(
    ray: Any, job: Job, trace: Shipped, ssd: Shipped | None
) -> Iterator[tuple[Job, dict[str, str]]]:
    """On a worker: ``job`` on copies of its trace (and SSD config file) in a temporary directory,
    removed when the block ends, and the map from those copies' paths to the driver's."""
    directory = tempfile.mkdtemp(prefix="pcstream-run-")
    try:
        local_trace = fetch(ray, trace, _subdir(directory, "trace"))
        options = job.options
        renames = {local_trace: job.trace}
        if ssd is not None:
            local_ssd = fetch(ray, ssd, _subdir(directory, "ssd"))
            options = dataclasses.replace(options, ssd=local_ssd)
            renames[local_ssd] = job.ssd
        yield Job(local_trace, job.policy, options), renames
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _subdir(directory: str, name: str) -> str:
    path = os.path.join(directory, name)
    os.mkdir(path)
    return path


def as_driver_saw_it(outcome: Outcome, job: Job, renames: dict[str, str]) -> Outcome:
    """``outcome`` with the worker's temporary paths replaced by the driver's."""

    def rename(text: str) -> str:
        for local, original in renames.items():
            text = text.replace(local, original)
        return text

    result = outcome.result
    if result is not None:
        result = {k: rename(v) if isinstance(v, str) else v for k, v in result.items()}
    error = rename(outcome.error) if outcome.error is not None else None
    return dataclasses.replace(outcome, job=job, result=result, error=error)
