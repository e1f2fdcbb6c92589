"""The ``pcstream`` command line: one module per verb, assembled here.

The verbs are where the pipeline's stages (record, map, simulate, compare, report) are put
together; the one library module that also composes stages is :mod:`pcstream.compose`
(``record --block`` with live hints, used by ``record`` and ``validate --run``).

:class:`PcstreamGroup` owns error handling for every verb: user errors (engine exceptions, click
usage errors, missing files, Ctrl-C) become one ``pcstream: error: ...`` line on stderr and a fixed
exit status (see :mod:`pcstream.cli._common`); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import click

from pcstream import api
from pcstream.cli._common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    UNITS,
    CliError,
    classify,
    report,
)
from pcstream.errors import Terminated, one_command

# Verb → the module of this package that defines it (its ``command``).
VERBS = {
    "gen": "gen",
    "info": "info",
    "simulate": "simulate",
    "compare": "compare",
    "demo": "demo",
    "bench": "bench",
    "presets": "presets",
    "policies": "policies",
    "record": "record",
    "run": "run",
    "map": "map",
    "import": "import_",
    "validate": "validate",
    "workload": "workload",
}


class _Verbs(Mapping[str, click.Command]):
    """The group's commands, each verb's module imported when the verb is first asked for: a verb
    starts without importing what only the others need (record's loop devices and numpy, compare's
    report), which took most of the start-up of a short verb such as ``info``. ``--help`` lists
    every verb, so it imports them all."""

    def __init__(self, modules: Mapping[str, str]) -> None:
        self._modules = dict(modules)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module = importlib.import_module(f"{__name__}.{self._modules[name]}")
            self._loaded[name] = module.command
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


class _ClosedPipe(Exception):
    """stdout was closed by its reader (``| head``)."""


def _terminate(_signum: int, _frame: Any) -> None:
    # Raised where Python next runs; the engine stops at once too (the binding's own handler,
    # in front of this one, sets its stop request), so the output in progress is abandoned and
    # its temporary file removed, as for Ctrl-C.
    raise Terminated()


def _stopped(what: str) -> str:
    """What a signal that stopped the verb left behind: ``WHAT; nothing was written``, or ``WHAT
    after OUT was complete; it is kept`` when the engine had renamed the output into place before
    the signal came (the engine checks for a signal right before the rename) and the verb has not
    removed it since (``import --split-volumes`` removes every trace it wrote)."""
    kept = [path for path in api.kept_outputs() if os.path.exists(path)]  # not removed since
    if kept:
        return f"{what} after {kept[-1]} was complete; it is kept"
    return f"{what}; nothing was written"


def _exit_now(status: int) -> None:
    """End the process at once after a signal stopped the engine: its state (the model of a large
    file system is millions of allocations) would otherwise be freed piece by piece, for a second
    or more, before the process could end. Outputs are settled by then (removed, or kept)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


class PcstreamGroup(click.Group):
    """A click group whose ``main`` maps user errors to one line and an exit status."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _terminate)
        try:
            with one_command():  # two outputs of this invocation on one file are refused
                rv = super().main(args, prog_name or "pcstream", complete_var, standalone_mode=False, **extra)
            status = rv if isinstance(rv, int) else EXIT_OK
        except (BrokenPipeError, _ClosedPipe):
            # stdout closed early (e.g. piped into head): stop quietly, with the status of a
            # process killed by SIGPIPE (128 + 13), as other Unix tools end.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            status = EXIT_BROKEN_PIPE
        except Terminated:
            status = EXIT_TERMINATED
            report(_stopped("terminated (SIGTERM)"))
        except (Exception, KeyboardInterrupt, click.Abort) as exc:
            found = classify(exc)
            if found is None:
                raise
            message, status = found
            report(message)
        if standalone_mode and api.stop_requested():
            _exit_now(status)
        if standalone_mode:
            sys.exit(status)
        return status

    def invoke(self, ctx: click.Context) -> Any:
        # Catch Ctrl-C before click turns it into Abort (which prints an extra blank line).
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise CliError(_stopped("interrupted (SIGINT)"), EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # Not an OSError any more, so click does not turn it into its own exit status 1.
            raise _ClosedPipe() from None


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    # Looked up only here: finding the installed version imports importlib.metadata (70 ms).
    from pcstream import __version__

    click.echo(f"pcstream {__version__} (engine {api.version()})")
    ctx.exit(EXIT_OK)


@click.group(
    cls=PcstreamGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=UNITS,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print the versions of pcstream and its engine, then exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """pcstream: a multi-stream SSD simulator for studying data placement.

    Make block traces (gen), inspect them (info), replay them on a simulated SSD under a placement
    policy (simulate), and compare policies (compare). 'pcstream demo' runs a small tour.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


cli.commands = _Verbs(VERBS)  # type: ignore[assignment]  # read-only: the verbs are fixed


def main() -> None:
    """Console-script entry point (``pcstream``)."""
    cli()
