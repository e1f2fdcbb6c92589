"""The HTML report of a sweep (``pcstream compare --report DIR``, ``pcstream demo``).

:func:`write_report` writes into DIR:

* ``index.html`` — the run's parameters and versions, the results table, the figures and the
  table of PC streams (which program contexts each PCStream policy put in which stream, with the
  call paths named by the trace's ``pcstream.pcs`` footer);
* ``figures/*.png`` — WAF and IOPS per workload and policy normalised to the baseline, stream-0
  share, per-stream lifetime boxes and latency CDFs (matplotlib, Agg canvas);
* ``results.jsonl`` and ``results.parquet`` — the data behind it (see :mod:`.results`).

Modules: :mod:`.data` computes, :mod:`.figures` draws, :mod:`.html` lays out, :mod:`.results`
writes the data files, :mod:`.build` puts them together.
"""

from __future__ import annotations

from collections.abc import Sequence

from pcstream.report.data import RunInfo
from pcstream.runner import Outcome

__all__ = ["RunInfo", "write_report"]


def write_report(outcomes: Sequence[Outcome], out_dir: str, info: RunInfo) -> str:
    """Write the report (page, figures, data files) into ``out_dir``; returns the page's path.

    matplotlib and pyarrow are imported here, on first use, so that importing the package (as
    ``compare`` does for every run) stays cheap.
    """
    from pcstream.report.build import write_report as build

    return build(outcomes, out_dir, info)
