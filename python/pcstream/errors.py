"""User errors → one line on stderr and a fixed exit status.

Every error a user can cause ends as ``pcstream: error: <message>`` on stderr — one line, naming
the file or option at fault and what to do — and one of the statuses below; never a traceback.
Bugs are not user errors: anything not listed in :func:`classify` propagates with its traceback.

| status | meaning                                                          |
|--------|------------------------------------------------------------------|
| 0      | success                                                          |
| 1      | some jobs of a batch failed (compare), or another failure        |
| 2      | usage: unknown policy / generator kind / option, bad parameter   |
| 3      | input: missing, unreadable or malformed trace or file            |
| 4      | config: bad SSD config, impossible geometry, unknown preset, a   |
|        | device (or info's page bitmap) larger than the memory available |
| 130    | interrupted (Ctrl-C)                                             |
| 141    | stdout closed early (``pcstream info T | head``): stops quietly   |
| 143    | terminated (SIGTERM): temporary outputs removed                  |

Outputs follow one policy (:func:`prepare_output`, every verb that writes a file): an existing
target that is not a regular file (device node, FIFO, directory) is refused with status 2 and
left alone; so is an output that is one of the command's inputs; an existing regular file is
replaced, with a one-line notice on stderr. Files are written to ``PATH.tmp-PID`` and renamed
into place at the end, so an error, Ctrl-C or SIGTERM leaves neither a partial output nor the
temporary file.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable

import click

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_CONFIG = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143

PREFIX = "pcstream: error: "


class CliError(Exception):
    """An error found by the Python front end itself (before or around an engine call)."""

    def __init__(self, message: str, status: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def one_line(message: str) -> str:
    """Collapse a message to a single line (engine messages already are; be safe)."""
    parts = [part.strip() for part in str(message).splitlines() if part.strip()]
    return "; ".join(parts) if parts else "unknown error"


def report(message: str) -> None:
    """Print ``pcstream: error: <message>`` as one line on stderr."""
    click.echo(PREFIX + one_line(message), err=True)


def require_file(path: str, what: str = "file") -> str:
    """Check that ``path`` is an existing, readable regular file; raise an input error otherwise."""
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file; check the path", EXIT_INPUT)
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, expected a {what}; check the path", EXIT_INPUT)
    if not os.access(path, os.R_OK):
        raise CliError(f"{path}: permission denied; check the file's permissions", EXIT_INPUT)
    return path


class Terminated(Exception):
    """Raised by the SIGTERM handler the CLI installs, so outputs in progress are cleaned up."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_output(path: str, inputs: Iterable[str] = (), *, quiet: bool = False) -> str:
    """The output-path policy of every verb that writes a file (see the module documentation):
    refuse (status 2) an existing ``path`` that is not a regular file or that is one of
    ``inputs``; note on stderr that an existing regular file will be replaced (unless ``quiet``)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CliError(f"{path}: cannot use as output ({exc.strerror}); check the path", EXIT_INPUT) from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise CliError(
                f"{path}: exists and is {_kind(st.st_mode)}, not a regular file; refusing to replace it: "
                "give a file name for the output",
                EXIT_USAGE,
            )
        for source in inputs:
            try:
                same = os.path.samefile(path, source)
            except OSError:
                same = False
            if same:
                raise CliError(
                    f"{path}: is also an input ({source}); writing it would destroy the input: "
                    "give another output file",
                    EXIT_USAGE,
                )
        if not quiet:
            click.echo(f"pcstream: note: {path} exists and will be replaced", err=True)
    return path


def prepare_output(path: str, inputs: Iterable[str] = (), *, quiet: bool = False) -> str:
    """:func:`check_output`, then create the parent directory (status 3 if it cannot be made)."""
    check_output(path, inputs, quiet=quiet)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise CliError(f"{parent}: cannot create the output directory ({exc.strerror})", EXIT_INPUT) from None
    return path


def engine_status(exc: BaseException) -> int | None:
    """Exit status of an engine exception, or None if ``exc`` is not one."""
    engine = sys.modules.get("pcstream._engine")
    if engine is None:
        return None
    if isinstance(exc, engine.InputError):
        return EXIT_INPUT
    if isinstance(exc, engine.ConfigError):
        return EXIT_CONFIG
    if isinstance(exc, engine.UsageError):
        return EXIT_USAGE
    if isinstance(exc, engine.PcstreamError):
        return EXIT_FAILURE
    return None


def classify(exc: BaseException) -> tuple[str, int] | None:
    """(one-line message, exit status) for a user error; None for a bug (let it propagate)."""
    if isinstance(exc, CliError):
        return one_line(exc.message), exc.status
    status = engine_status(exc)
    if status is not None:
        return one_line(str(exc)), status
    if isinstance(exc, click.UsageError):
        hint = ""
        if exc.ctx is not None:
            hint = f"; see '{exc.ctx.command_path} --help'"
        return one_line(exc.format_message()).rstrip(".") + hint, EXIT_USAGE
    if isinstance(exc, click.ClickException):
        return one_line(exc.format_message()), exc.exit_code
    if isinstance(exc, (KeyboardInterrupt, click.Abort)):
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM); nothing was written", EXIT_TERMINATED
    if isinstance(exc, ImportError) and exc.name == "pcstream._engine":
        return (
            "the engine module pcstream._engine is not built; run 'make install' (or 'maturin develop')",
            EXIT_FAILURE,
        )
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        what = (exc.strerror or str(exc)).lower()
        return f"{where}{what}; check the path and its permissions", EXIT_INPUT
    return None
