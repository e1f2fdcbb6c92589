"""The figures and tables of a report, computed from the outcomes of a sweep (no drawing here).

A sweep is a list of outcomes in job order (trace, then SSD, then policy). Everything normalised
is divided by the ``baseline`` policy's figure on the same trace and SSD; without a baseline run
there is nothing to normalise against and the normalised values are None.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pcstream import pclabels
from pcstream.compare.outcome import Outcome
from pcstream.diagnose import BASELINE
from pcstream.errors import InputError


@dataclass(frozen=True)
class Row:
    """One job of the sweep with the figures derived from its result (None when it failed)."""

    trace: str
    ssd: str
    policy: str
    result: dict[str, Any] | None
    error: str | None
    status: int
    waf_norm: float | None = None
    iops_norm: float | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None

    def get(self, key: str) -> Any:
        return None if self.result is None else self.result.get(key)

    def number(self, key: str) -> float | None:
        """A numeric field as float; None when absent, null or not a number."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)


@dataclass
class Sweep:
    """The rows of a sweep and the orders (of first appearance) of its traces, SSDs and policies."""

    rows: list[Row]
    traces: list[str] = field(default_factory=list)
    ssds: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)

    @property
    def has_baseline(self) -> bool:
        return BASELINE in self.policies

    @property
    def timing(self) -> bool:
        """Whether any run modelled timing (then IOPS and latency exist)."""
        return any(row.number("iops") is not None for row in self.rows)

    def row(self, trace: str, ssd: str, policy: str) -> Row | None:
        for row in self.rows:
            if (row.trace, row.ssd, row.policy) == (trace, ssd, policy):
                return row
        return None

    def ok_rows(self, trace: str, ssd: str) -> list[Row]:
        return [row for row in self.rows if row.ok and row.trace == trace and row.ssd == ssd]

    def failures(self) -> list[Row]:
        return [row for row in self.rows if not row.ok]


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def sweep(outcomes: Sequence[Outcome]) -> Sweep:
    """Rows with WAF and IOPS normalised to the baseline of the same trace and SSD."""
    raw = [
        Row(o.job.trace, o.job.ssd, o.job.policy, o.result, o.error, o.status if not o.ok else 0)
        for o in outcomes
    ]
    base = {(row.trace, row.ssd): row for row in raw if row.ok and row.policy == BASELINE}
    rows = []
    for row in raw:
        ref = base.get((row.trace, row.ssd))
        waf_norm = iops_norm = None
        if row.ok and ref is not None:
            waf_norm = _ratio(row.number("waf"), ref.number("waf"))
            iops_norm = _ratio(row.number("iops"), ref.number("iops"))
        rows.append(
            Row(row.trace, row.ssd, row.policy, row.result, row.error, row.status, waf_norm, iops_norm)
        )
    return Sweep(
        rows,
        traces=_unique(row.trace for row in rows),
        ssds=_unique(row.ssd for row in rows),
        policies=_unique(row.policy for row in rows),
    )


def discard_mode(trace: str) -> str:
    """The discard mode a trace was mapped with, from the suite's naming (``NAME.nodiscard.parquet``
    for ``nodiscard``, ``NAME.fstrim.parquet`` for periodic trims); ``discard`` otherwise."""
    name = os.path.basename(trace)
    for mode in ("nodiscard", "fstrim"):
        if f".{mode}." in name:
            return mode
    return "discard"


def modes(traces: Sequence[str]) -> list[str]:
    """The discard modes of ``traces``, in a fixed order."""
    found = {discard_mode(t) for t in traces}
    return [m for m in ("nodiscard", "discard", "fstrim") if m in found]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def trace_labels(traces: Sequence[str]) -> dict[str, str]:
    """Short names for traces: the file name without ``.parquet``, the path where names collide."""
    stems = {trace: os.path.basename(trace).removesuffix(".parquet") for trace in traces}
    counts: dict[str, int] = {}
    for stem in stems.values():
        counts[stem] = counts.get(stem, 0) + 1
    return {trace: stem if counts[stem] == 1 else trace for trace, stem in stems.items()}


@dataclass(frozen=True)
class RunInfo:
    """What was run and how, shown at the top of the report."""

    policies: Sequence[str]
    ssds: Sequence[str]
    prefill: float
    warmup: int
    seed: int
    timing: bool
    executor: str
    command: str | None = None


# --------------------------------------------------------------------------- per-stream lifetimes


@dataclass(frozen=True)
class Box:
    """Lifetimes of the pages of one stream (logical time, in host pages): quartiles, whiskers if known."""

    stream: int
    pages: int
    share: float | None
    q1: float
    median: float
    q3: float
    low: float | None = None
    high: float | None = None


def lifetime_boxes(result: dict[str, Any]) -> list[Box]:
    """Boxes of the streams that have lifetime samples, in stream order.

    The engine reports p25/p50/p75 per stream; whiskers are drawn only when a result also carries
    p5 and p95 (``lifetime_p5``/``lifetime_p95`` or ``p5``/``p95``).
    """
    boxes = []
    for stream in result.get("per_stream") or []:
        q1, median, q3 = stream.get("lifetime_p25"), stream.get("p50"), stream.get("p75")
        samples = stream.get("lifetime_samples")
        if not all(isinstance(v, (int, float)) for v in (q1, median, q3)) or samples == 0:
            continue
        low = stream.get("lifetime_p5", stream.get("p5"))
        high = stream.get("lifetime_p95", stream.get("p95"))
        whiskers = isinstance(low, (int, float)) and isinstance(high, (int, float))
        boxes.append(
            Box(
                stream=int(stream.get("stream", len(boxes))),
                pages=int(stream.get("pages") or 0),
                share=stream.get("share"),
                q1=float(q1),
                median=float(median),
                q3=float(q3),
                low=float(low) if whiskers else None,
                high=float(high) if whiskers else None,
            )
        )
    return boxes


# --------------------------------------------------------------------------- PC streams


def read_pc_frames(trace: str) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
    """The trace's ``pcstream.pcs`` footer: signature (decimal string) → frames, innermost first.

    Returns (frames, problem): a trace without the key gives ({}, None); an unreadable file or
    malformed JSON gives ({}, one line saying why), so the report still shows the signatures.
    """
    try:
        return pclabels.read_pcs(trace), None
    except (OSError, InputError) as exc:
        return {}, f"{trace}: cannot read the Parquet footer ({exc})"
    except ValueError as exc:
        what = str(exc) if "JSON object" in str(exc) else f"pcstream.pcs is not JSON ({exc})"
        return {}, f"{trace}: {what}"


def frame_name(frame: dict[str, Any]) -> str:
    """``symbol`` when known, else ``module+0xOFFSET`` (module as its file name)."""
    return pclabels.frame_name(frame, short=False)


def call_path(frames: Sequence[dict[str, Any]]) -> list[str]:
    """Frame names outermost first (the footer lists them innermost first), as a call path reads."""
    return [frame_name(frame) for frame in reversed(frames)]


def short_path(path: Sequence[str], keep: int = 2) -> str:
    """``outer → … → inner``: the first and last ``keep`` frames of a long path."""
    if len(path) <= 2 * keep + 1:
        return " → ".join(path)
    return " → ".join([*path[:keep], "…", *path[-keep:]])


@dataclass(frozen=True)
class PcEntry:
    """One PC of a learned table: its stream, lifetime samples, symbolized call path and the
    label that tells it from the trace's other PCs (:mod:`pcstream.pclabels`; None without frames)."""

    stream: int
    sig: str
    samples: int
    mean_lifetime: float | None
    path: list[str]
    label: pclabels.PcLabel | None = None


@dataclass(frozen=True)
class PcTable:
    """The PC → stream table a policy ended with on one trace and SSD."""

    trace: str
    ssd: str
    policy: str
    entries: list[PcEntry]
    note: str | None = None

    def streams(self) -> list[tuple[int, list[PcEntry]]]:
        """Entries grouped by stream (ascending), each group by samples (descending)."""
        groups: dict[int, list[PcEntry]] = {}
        for entry in self.entries:
            groups.setdefault(entry.stream, []).append(entry)
        return [
            (stream, sorted(groups[stream], key=lambda e: (-e.samples, e.sig))) for stream in sorted(groups)
        ]


def saved_table(result: dict[str, Any]) -> dict[str, Any] | None:
    """The policy's persistent table from a result (the engine gives it as JSON text), or None."""
    value = result.get("saved_table")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _trace_labels(
    trace: str, frames: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, pclabels.PcLabel], str | None]:
    """Labels of every PC of the trace's footer, with the files each writes when the rows can be
    read (else without files, and a note)."""
    if not frames:
        return {}, None
    try:
        files = pclabels.files_by_pc(trace)
        note = None
    except (OSError, ValueError, KeyError, InputError) as exc:
        files, note = {}, f"{trace}: files written per PC unavailable ({exc})"
    try:
        return pclabels.label_pcs(frames, files), note
    except ValueError as exc:  # frames of another shape than pcstream.pcs gives them
        return {}, f"{trace}: {exc}"


def pc_tables(sweep: Sweep) -> list[PcTable]:
    """A PcTable for every successful run whose policy saved a table of PCs with streams."""
    footers: dict[str, tuple[dict[str, list[dict[str, Any]]], str | None]] = {}
    labels: dict[str, tuple[dict[str, pclabels.PcLabel], str | None]] = {}
    tables = []
    for row in sweep.rows:
        if row.result is None:
            continue
        table = saved_table(row.result)
        pcs = table.get("pcs") if table else None
        if not isinstance(pcs, list):
            continue
        if row.trace not in footers:
            footers[row.trace] = read_pc_frames(row.trace)
            labels[row.trace] = _trace_labels(row.trace, footers[row.trace][0])
        frames, problem = footers[row.trace]
        named, note = labels[row.trace]
        entries = []
        for pc in pcs:
            if not isinstance(pc, dict) or not isinstance(pc.get("stream"), int):
                continue
            sig = str(pc.get("sig", ""))
            samples = pc.get("n")
            samples = samples if isinstance(samples, int) else 0
            total = pc.get("sum_l")
            mean = float(total) / samples if samples and isinstance(total, (int, float)) else None
            path = call_path(frames.get(sig, []))
            entries.append(PcEntry(pc["stream"], sig, samples, mean, path, named.get(sig)))
        why = f"Call paths unavailable: {problem}" if problem else note
        tables.append(PcTable(row.trace, row.ssd, row.policy, entries, why))
    return tables
