"""How to age the file system before a trace. The model's aging (``map --age``) and its replay
on a real ext4 (``record --block --age``, ``validate --run --age``) take the same three numbers,
so both stages read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Aging:
    """How to age the file system before the trace: fill it with seeded cold files to ``share``
    of its blocks (None: a fresh file system), after ``churn`` create/delete rounds."""

    share: float | None
    seed: int = 0
    churn: int = 0
