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

Two reports run as scripts: :mod:`.suite_results` writes docs/RESULTS.md from a suite comparison
(``make results``), :mod:`.purity` measures how well PC signatures predict what a write is
(RocksDB ground truth; ``make purity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from pcstream.compare.outcome import Outcome
from pcstream.errors import UsageError
from pcstream.report.data import RunInfo, sweep

__all__ = ["RunInfo", "require", "write_report", "write_results"]

# Third-party packages the report draws or writes with; the rest of pcstream runs without them.
NEEDS = ("matplotlib", "pyarrow")


def _missing(missing: str, param: str) -> UsageError:
    return UsageError(
        f"{{{param}}} needs the Python package {missing}, which is not installed; "
        f"run 'pip install {' '.join(NEEDS)}' (the versions pinned in requirements.lock)",
        params=(param,),
    )


def require(param: str, packages: Sequence[str] = NEEDS) -> None:
    """Fail before a long sweep, not after it, when a package the output asked for by ``param``
    (``report``, ``results``) needs is missing."""
    import importlib.util

    for package in packages:
        if importlib.util.find_spec(package) is None:
            raise _missing(package, param)


def _load(module: str, param: str) -> ModuleType:
    """Import ``module``; a missing third-party package becomes a one-line error saying what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in NEEDS:
            raise
        raise _missing(missing, param) from None


def write_report(outcomes: Sequence[Outcome], out_dir: str, info: RunInfo, jobs: int | None = None) -> str:
    """Write the report (page, figures, data files) into ``out_dir``; returns the page's path.
    Its per-trace figures are drawn on up to ``jobs`` processes (None: one per core).

    matplotlib and pyarrow are imported here, on first use, so that importing the package (as
    ``compare`` does for every run) stays cheap.
    """
    build = _load("pcstream.report.build", "report")
    return str(build.write_report(outcomes, out_dir, info, jobs))


def write_results(outcomes: Sequence[Outcome], out_dir: str) -> tuple[str, str]:
    """Write ``results.jsonl`` and ``results.parquet`` into ``out_dir``; returns their paths."""
    results = _load("pcstream.report.results", "results")
    jsonl, parquet = results.write_results(sweep(outcomes), outcomes, out_dir)
    return str(jsonl), str(parquet)
