"""Domain errors: what a user did wrong, in the library's terms.

The library (everything outside ``pcstream.cli``) raises the exceptions below; each says what is
wrong and what to do, naming the file or the parameter at fault (a parameter by its name, e.g.
``method``, never by a command-line spelling). They know nothing of exit statuses: the CLI maps
them, with the engine's own exception classes (``pcstream._engine``: InputError, ConfigError,
UsageError, PcstreamError), to one ``pcstream: error: <message>`` line and a fixed exit status
(``pcstream.cli._common``). Bugs are not user errors: anything :func:`describe` does not know
propagates with its traceback.

Outputs follow one policy (:func:`prepare_output`, every verb that writes a file): an existing
target that is not a regular file (device node, FIFO, directory) is refused as a usage error and
left alone; so is an output that is one of the command's inputs; an existing regular file is
replaced, with a one-line notice on stderr. Files are written to ``PATH.tmp-PID`` and renamed
into place at the end, so an error, Ctrl-C or SIGTERM leaves neither a partial output nor the
temporary file. Within one command (:func:`one_command`, which the CLI opens around each
invocation), two outputs on one file (the same path after realpath, or the same inode) are refused:
the one written last would silently replace the other. An output name that is not valid UTF-8
(the engine takes paths as text) is refused too, before any work.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import click


class Kind(str, enum.Enum):
    """What sort of user error an exception is (the CLI gives each its exit status)."""

    USAGE = "usage"  # an unknown name, a bad parameter, a refused output
    INPUT = "input"  # a missing, unreadable or malformed file
    CONFIG = "config"  # a bad SSD config, an impossible geometry, too little memory
    FAILURE = "failure"  # the work itself failed: a tool, a capture, a program's set-up
    PROGRAM_NOT_RUNNABLE = "program-not-runnable"  # the program to run is no executable file
    PROGRAM_NOT_FOUND = "program-not-found"  # the program to run does not exist
    NOT_ROOT = "not-root"  # the work needs root privileges
    TERMINATED = "terminated"  # SIGTERM stopped the work


def plain(name: str) -> str:
    """A parameter named as the library knows it: by its name."""
    return name


class Error(Exception):
    """A user error the library found: ``message`` says what is wrong and what to do.

    A message that names parameters of the library (what the caller sets, e.g. ``ssd`` or
    ``block``) holds each as ``{name}`` and lists the names in ``params`` (replaced literally:
    other braces are text); ``message`` names them plainly, and :meth:`spelled` as the caller
    knows them (the CLI: as its options)."""

    kind = Kind.FAILURE

    def __init__(self, message: str, *, params: Sequence[str] = ()) -> None:
        self.template = message
        self.params = tuple(params)
        self.message = self.spelled(plain)
        super().__init__(self.message)

    def spelled(self, spelling: Callable[[str], str]) -> str:
        """The message with each parameter named as ``spelling(name)`` says."""
        text = self.template
        for name in self.params:
            text = text.replace("{" + name + "}", spelling(name))
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # Crosses process pools as it was raised (the default would call __init__(message)).
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: type[Error], state: dict[str, Any]) -> Error:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class UsageError(Error):
    """A request the library cannot carry out as given: an unknown name, a refused output."""

    kind = Kind.USAGE


class BadParameter(UsageError):
    """A parameter with a value the library refuses. ``template`` is the message with ``{param}``
    where the parameter is named and ``{value}`` where its value is (replaced literally: other
    braces are text); :meth:`render` spells the parameter as the caller knows it (the CLI: as
    its option)."""

    def __init__(self, param: str, value: Any, template: str) -> None:
        self.param = param
        self.value = value
        super().__init__(template)

    def render(self, spelling: str) -> str:
        return self.template.replace("{param}", spelling).replace("{value}", str(self.value))

    def spelled(self, spelling: Callable[[str], str]) -> str:
        return self.render(spelling(self.param))


class InputError(Error):
    """A missing, unreadable or malformed input file (``path``)."""

    kind = Kind.INPUT

    def __init__(self, path: str | os.PathLike[str], message: str, *, params: Sequence[str] = ()) -> None:
        super().__init__(message, params=params)
        self.path = os.fspath(path)


class ConfigError(Error):
    """A bad SSD config or an impossible set-up."""

    kind = Kind.CONFIG


class Failure(Error):
    """The work itself failed: a tool it runs, a capture, a program's set-up."""

    kind = Kind.FAILURE


class ProgramNotRunnable(Failure):
    """The program to run exists but is not an executable file."""

    kind = Kind.PROGRAM_NOT_RUNNABLE


class ProgramNotFound(Failure):
    """The program to run does not exist (not on PATH)."""

    kind = Kind.PROGRAM_NOT_FOUND


class NotRoot(Failure):
    """The work needs root privileges."""

    kind = Kind.NOT_ROOT


def one_line(message: str) -> str:
    """Collapse a message to a single line (engine messages already are; be safe)."""
    parts = [part.strip() for part in str(message).splitlines() if part.strip()]
    return "; ".join(parts) if parts else "unknown error"


def file_problem(path: str, what: str = "file") -> str | None:
    """Why ``path`` (a ``what``) cannot be read as a file, as one line; None when it is an existing,
    readable regular file. The type is checked with ``stat`` (symbolic links followed) before
    anything opens it: opening a FIFO without a writer blocks, and a device reads forever."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{path}: no such file; check the path"
    except OSError as exc:
        return (
            f"{path}: cannot use ({(exc.strerror or str(exc)).lower()}); check the path and its permissions"
        )
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: is {_kind(st.st_mode)}, not a regular file; give the {what} itself"
    if not os.access(path, os.R_OK):
        return f"{path}: permission denied; check the file's permissions"
    return None


def require_file(path: str, what: str = "file") -> str:
    """Check that ``path`` is an existing, readable regular file; raise an InputError otherwise."""
    problem = file_problem(path, what)
    if problem is not None:
        raise InputError(path, problem)
    return path


def require_config_file(path: str, what: str = "SSD config file") -> str:
    """:func:`require_file` for an SSD config: a ConfigError (a bad config, whatever is wrong)."""
    problem = file_problem(path, what)
    if problem is not None:
        raise ConfigError(problem)
    return path


def read_input(path: str, what: str, limit: int) -> str:
    """The text of the regular file ``path`` (a ``what``), at most ``limit`` bytes: never more is
    read. An InputError when it is not a readable regular file, holds more than ``limit`` bytes
    or is not UTF-8."""
    require_file(path, what)
    try:
        # O_NONBLOCK: a FIFO put in the file's place since the check cannot block the open.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(path, f"{path}: cannot open ({(exc.strerror or str(exc)).lower()})") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                path, f"{path}: is {_kind(st.st_mode)}, not a regular file; give the {what} itself"
            )
        data = b"" if st.st_size > limit else handle.read(limit + 1)
    size = max(st.st_size, len(data))
    if size > limit:
        raise InputError(
            path,
            f"{path}: {size} bytes, over the limit of {limit} bytes for the {what}; is it the right file?",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"{path}: not UTF-8 text (byte {exc.start}); the {what} must be text"
        ) from None


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


def shown(path: str) -> str:
    """``path`` printable: bytes that are not UTF-8 (kept by Python as surrogates) as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# The outputs named so far by the command in progress (output's realpath -> the name given), or
# None outside one (the library used directly: one process may write a file twice, in turn).
_outputs: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("outputs", default=None)


@contextlib.contextmanager
def one_command() -> Iterator[None]:
    """While inside, :func:`check_output` refuses an output already named (see the module doc)."""
    token = _outputs.set({})
    try:
        yield
    finally:
        _outputs.reset(token)


def _claim(path: str) -> None:
    """Note ``path`` as an output of the command in progress; a usage error if another output of
    it is the same file."""
    claimed = _outputs.get()
    if claimed is None:
        return
    real = os.path.realpath(path)
    for other_real, other in claimed.items():
        same = other_real == real
        if not same:
            with contextlib.suppress(OSError):
                same = os.path.samefile(path, other)
        if same:
            names = "" if other == path else f" ({shown(other)} and {shown(path)})"
            raise UsageError(
                f"{shown(path)}: named for two outputs{names}; each would replace the other: "
                "give each output its own file"
            )
    claimed[real] = path


def check_output_name(path: str) -> str:
    """A usage error when the output name ``path`` (a file or a directory) is not valid UTF-8: the
    engine takes paths as text, and finding out after the work would lose it."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{shown(path)}: the output name is not valid UTF-8; give a name in UTF-8") from None
    return path


def check_output(path: str, inputs: Iterable[str] = (), *, quiet: bool = False) -> str:
    """The output-path policy of every verb that writes a file (see the module documentation):
    refuse (a usage error) a name that is not UTF-8, an output the command already named, an
    existing ``path`` that is not a regular file or that is one of ``inputs``; note on stderr that
    an existing regular file will be replaced (unless ``quiet``)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{shown(path)}: the output name is not valid UTF-8; give a name in UTF-8") from None
    _claim(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(path, f"{path}: cannot use as output ({exc.strerror}); check the path") from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(
                f"{path}: exists and is {_kind(st.st_mode)}, not a regular file; refusing to replace it: "
                "give a file name for the output"
            )
        for source in inputs:
            try:
                same = os.path.samefile(path, source)
            except OSError:
                same = False
            if same:
                raise UsageError(
                    f"{path}: is also an input ({source}); writing it would destroy the input: "
                    "give another output file"
                )
        if not quiet:
            click.echo(f"pcstream: note: {path} exists and will be replaced", err=True)
    return path


def prepare_output(path: str, inputs: Iterable[str] = (), *, quiet: bool = False) -> str:
    """:func:`check_output`, then create the parent directory (an InputError if it cannot be made)."""
    check_output(path, inputs, quiet=quiet)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise InputError(parent, f"{parent}: cannot create the output directory ({exc.strerror})") from None
    return path


def engine_kind(exc: BaseException) -> Kind | None:
    """The kind of an exception of the engine (``pcstream._engine``), or None if ``exc`` is not one."""
    engine = sys.modules.get("pcstream._engine")
    if engine is None:
        return None
    if isinstance(exc, engine.InputError):
        return Kind.INPUT
    if isinstance(exc, engine.ConfigError):
        return Kind.CONFIG
    if isinstance(exc, engine.UsageError):
        return Kind.USAGE
    if isinstance(exc, engine.PcstreamError):
        return Kind.FAILURE
    return None


def describe(exc: BaseException, spelling: Callable[[str], str] | None = None) -> tuple[str, Kind] | None:
    """(one-line message, kind) for a user error the library or the engine raised, a missing
    engine, an OS error or SIGTERM; None for anything else (a bug: let it propagate). The
    parameters a library error names are spelled as ``spelling`` says (default: by name)."""
    if isinstance(exc, Error):
        return one_line(exc.spelled(spelling or plain)), exc.kind
    kind = engine_kind(exc)
    if kind is not None:
        return one_line(str(exc)), kind
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM); nothing was written", Kind.TERMINATED
    if isinstance(exc, UnicodeEncodeError) and exc.reason == "surrogates not allowed":
        # A name from the command line that is not UTF-8 reached the engine, which takes text.
        return f"{shown(str(exc.object))}: not valid UTF-8; give names and arguments in UTF-8", Kind.USAGE
    if isinstance(exc, ImportError) and exc.name == "pcstream._engine":
        return (
            "the engine module pcstream._engine is not built; run 'make install' (or 'maturin develop')",
            Kind.FAILURE,
        )
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        what = (exc.strerror or str(exc)).lower()
        return f"{where}{what}; check the path and its permissions", Kind.INPUT
    return None
