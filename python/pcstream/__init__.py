"""pcstream: a multi-stream SSD simulator for studying data placement.

The library is the pipeline record → map → simulate → compare → report:

* :mod:`pcstream.record`: run a program under the write-capture shim into a file-level trace;
* :mod:`pcstream.mapstage`: a file-level trace through the ext4 model into a block trace;
* :mod:`pcstream.api`: the engine (Rust, ``pcstream._engine``; the only module calling it):
  simulate a block trace, and gen, info, import, map, record conversion;
* :mod:`pcstream.compare`: batches of simulations, every trace × SSD × policy;
* :mod:`pcstream.report`: the HTML report and result files of a batch.

Beside it: :mod:`pcstream.live` (a learned PC table applied to a real run as write-lifetime
hints), :mod:`pcstream.groundtruth` (the block I/O of a real ext4 for a recorded run, and the ext4
model checked against it), :mod:`pcstream.workloads` (real programs recorded into the bundled
suite), :mod:`pcstream.aging` (how a file system is aged, for the model and a real ext4),
:mod:`pcstream.units` (the page, SIZE arguments), :mod:`pcstream.tracemeta` (trace footer keys),
:mod:`pcstream.options` (the options of each verb, declared once), :mod:`pcstream.errors` (the
user errors the library raises; the CLI gives them exit statuses) and
:mod:`pcstream.report.suite_results` (docs/RESULTS.md). No module imports one of a later stage
(tests/python/test_stage_order.py).
:mod:`pcstream.cli` is the command line: one module per verb that checks its arguments, calls
the library and renders the answer; with :mod:`pcstream.compose` (``record --block`` with live
hints) it is where stages are put together. Importing this package does not load the engine.
"""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # The version is looked up when asked for, not at import: the ``pcstream`` command imports
    # this package before it can handle Ctrl-C (pcstream/__main__.py), so importing it stays
    # instant.
    if name != "__version__":
        raise AttributeError(f"module 'pcstream' has no attribute {name!r}")
    from importlib import metadata

    try:
        return metadata.version("pcstream")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__all__ = ["__version__"]
