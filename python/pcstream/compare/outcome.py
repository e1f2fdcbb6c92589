"""One simulation of a comparison and what became of it: :class:`Job` and :class:`Outcome`.

Plain data, importing nothing of the pipeline, so that the report and the command line can read
outcomes without loading the executors of :mod:`.jobs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcstream.options import SimOptions


@dataclass(frozen=True)
class Job:
    """One simulation: every argument of :func:`pcstream.api.simulate` except progress."""

    trace: str
    policy: str
    options: SimOptions = SimOptions()

    @property
    def ssd(self) -> str:
        return self.options.ssd


@dataclass
class Outcome:
    """The result of a job: ``result`` on success, else ``error`` (one line) and its ``kind``
    (a :class:`pcstream.errors.Kind` value); ``status`` is the exit status the caller gives that
    kind (the CLI: :func:`pcstream.cli._common.settle`)."""

    job: Job
    result: dict[str, Any] | None = None
    error: str | None = None
    kind: str | None = None
    status: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result is not None

    def record(self) -> dict[str, Any]:
        """The JSON object printed for this job: the engine result, or an error record."""
        if self.result is not None:
            return self.result
        return {
            "trace": self.job.trace,
            "policy": self.job.policy,
            "ssd": self.job.ssd,
            "error": self.error,
            "exit_status": self.status,
        }
