"""pcstream: a multi-stream SSD simulator for studying data placement.

The engine is Rust (``pcstream._engine``); :mod:`pcstream.api` is its typed Python view and
:mod:`pcstream.cli` the command line. Importing this package does not load the engine.
"""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("pcstream")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
