"""Files the Python side writes (CDF CSV, results.jsonl, results.parquet), written atomically.

The engine writes traces to ``PATH.tmp-PID`` and renames them at the end; these helpers do the
same for Python's own outputs, so a full disk, an error, Ctrl-C or SIGTERM (which the CLI turns
into :class:`pcstream.errors.Terminated`) leaves neither a truncated file nor the temporary one,
and a write error names the file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import IO, Any

from pcstream.errors import InputError


def temp_path(path: str) -> str:
    """The temporary file ``path`` is written to before the rename."""
    return f"{path}.tmp-{os.getpid()}"


def _failed(path: str, exc: OSError) -> InputError:
    what = (exc.strerror or str(exc)).lower()
    fix = "check free disk space and permissions; nothing was written"
    return InputError(path, f"{path}: cannot write ({what}); {fix}")


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path to write ``path`` through; it is renamed onto ``path`` when the
    block ends normally and removed otherwise. An ``OSError`` becomes a one-line input error
    naming ``path``."""
    tmp = temp_path(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise _failed(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` through a temporary file (see :func:`atomic_path`); the data is
    flushed to disk before the rename, so a full disk is an error, not a short file."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
