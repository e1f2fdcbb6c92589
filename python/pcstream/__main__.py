"""``python -m pcstream`` and the ``pcstream`` command: the command line.

Importing the command line (click, every verb, the engine's helpers) takes a moment, before the
CLI's own handling of Ctrl-C is in place; a Ctrl-C then ends pcstream as one later does: one line
and the status of SIGINT (130), never a traceback. So this module imports nothing of ours at load.
"""

import signal
import sys


def main() -> None:
    """Console-script entry point (``pcstream``)."""
    try:
        from pcstream.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        # Only a Ctrl-C before the CLI's handler (or after it let go) arrives here.
        sys.stderr.write("pcstream: error: interrupted\n")
        sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":
    main()
