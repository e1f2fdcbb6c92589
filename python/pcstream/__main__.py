"""``python -m pcstream`` and the ``pcstream`` command: the command line.

Importing the command line (click, every verb, the engine's helpers) takes a moment, before the
CLI's own handling of Ctrl-C is in place; a Ctrl-C then ends pcstream as one later does: one line
and the status of SIGINT (130), never a traceback. So this module imports nothing of ours at load.
"""

import signal
import sys


def main() -> None:
    """Console-script entry point (``pcstream``)."""
    # A Ctrl-C that lands in a callback Python runs during the import (a module lock's weakref
    # callback) would only be printed as "Exception ignored" and the import would go on: it is
    # kept and acted on once the import is done.
    ignored: list[BaseException] = []
    default_hook = sys.unraisablehook

    def keep_interrupt(arg: "sys.UnraisableHookArgs") -> None:
        if arg.exc_type is not None and issubclass(arg.exc_type, KeyboardInterrupt):
            ignored.append(KeyboardInterrupt())
        else:
            default_hook(arg)

    try:
        sys.unraisablehook = keep_interrupt
        try:
            from pcstream.cli import main as cli_main
        finally:
            sys.unraisablehook = default_hook
        if ignored:
            raise ignored[0]
        cli_main()
    except KeyboardInterrupt:
        # Only a Ctrl-C before the CLI's handler (or after it let go) arrives here.
        sys.stderr.write("pcstream: error: interrupted\n")
        sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":
    main()
