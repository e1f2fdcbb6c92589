"""Labels that tell program contexts (PCs) apart, for the report's PC streams and ``pcstream info``.

A PC's call path (``pcstream.pcs``: frames innermost first) mostly repeats what the other PCs of a
program have: the same ``main`` and event loop outside, the same write wrapper and static helpers
inside. A label keeps what differs:

* the **distinguishing frames**: the innermost frame whose (module, symbol — or offset when the
  frame has no symbol) no other PC of the trace has on its path (or at that depth); when no single
  frame does, the fewest frames that do together (innermost and named first), by offset inside
  the same function when the names alone cannot;
* the **context frame**: the outermost named frame that not every PC has on its path (``main`` and
  the event loop say nothing), else the outermost named frame;
* the **files** it writes most, as path patterns (directory and extension, ``…/db/*.sst``;
  :mod:`pcstream.pcfiles`).

Frames read outermost first, ``→`` between adjacent frames and ``→ … →`` over the ones left out; a
frame without a symbol shows as ``module+0xOFFSET`` (module file name), a C++ symbol without its
parameter list. Two PCs never get the same label: when everything above is equal (two signatures
over the same frames), the signature is appended. The engine chooses the frames
(``pcstream-trace`` ``pc_labels``): from the footer's text as it is, without a parse in Python.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcstream import api, tracemeta
from pcstream.pcfiles import files_by_pc, files_text

Frame = Mapping[str, Any]


# Cached: a trace's frames repeat the same few symbols (libc's, main's) on every PC's path.
@functools.lru_cache(maxsize=1 << 16)
def short_symbol(symbol: str) -> str:
    """A demangled C++ name without its parameter list and qualifiers:
    ``ns::f(int, std::string const&) const`` → ``ns::f``; other names unchanged (the engine's,
    which the labels use)."""
    return api.short_symbol(symbol)


def _offset(frame: Frame) -> str:
    offset = frame.get("offset")
    if isinstance(offset, int):
        return f"{offset:#x}"
    return str(offset) if offset not in (None, "") else "?"


def frame_name(frame: Frame, short: bool = True) -> str:
    """``symbol`` when known (without its parameter list when ``short``), else
    ``module+0xOFFSET`` with the module's file name."""
    symbol = frame.get("symbol")
    if isinstance(symbol, str) and symbol:
        return short_symbol(symbol) if short else symbol
    return f"{os.path.basename(str(frame.get('module') or '?'))}+{_offset(frame)}"


@dataclass(frozen=True)
class PcLabel:
    """What tells one PC apart: its distinguishing frames (outermost first) and the files it
    writes most (empty when unknown)."""

    sig: str
    frames: str
    files: str = ""

    @property
    def text(self) -> str:
        return f"{self.frames}; writes {self.files}" if self.files else self.frames


def label_pcs(
    pcs: Mapping[str, Sequence[Frame]],
    files: Mapping[str, Mapping[str, int]] | None = None,
    sigs: Iterable[str] | None = None,
) -> dict[str, PcLabel]:
    """A label for each PC of ``sigs`` (default: every PC of ``pcs``), telling it apart from every
    PC of ``pcs`` (signature → frames, innermost first; each frame ``{module, offset, symbol?}``
    as in ``pcstream.pcs``, else ValueError). ``files``: PC → path pattern → amount written
    (:func:`files_by_pc`). PCs without frames are labelled ``PC <signature>``."""
    table = json.dumps({str(sig): [dict(frame) for frame in path] for sig, path in pcs.items()})
    return _labels(table, [str(s) for s in (pcs if sigs is None else sigs)], files)


def _labels(
    table: str, sigs: Sequence[str], files: Mapping[str, Mapping[str, int]] | None
) -> dict[str, PcLabel]:
    """Labels of ``sigs`` from the ``pcstream.pcs`` text ``table``; every PC of the table is
    labelled, so a PC gets the same label whichever others are shown beside it."""
    wanted = list(dict.fromkeys(sigs))
    _, texts = api.pc_labels(table, wanted)
    return {
        sig: PcLabel(sig, text, files_text(files.get(sig, {})) if files else "")
        for sig, text in zip(wanted, texts)
    }


def read_pcs(trace: str | Path, footer: tracemeta.Footer | None = None) -> dict[str, list[dict[str, Any]]]:
    """The ``pcstream.pcs`` footer of a trace (signature → frames, innermost first); {} without it.
    ``footer``: the trace's footer when already read. Raises InputError for a missing file, one
    that is not a regular file or not readable Parquet, ValueError for malformed JSON."""
    raw = tracemeta.get(tracemeta.footer(trace) if footer is None else footer, tracemeta.KEY_PCS)
    if raw is None:
        return {}
    table = json.loads(raw)
    if not isinstance(table, dict):
        raise ValueError("pcstream.pcs is not a JSON object")
    return {
        str(sig): [f for f in value if isinstance(f, dict)]
        for sig, value in table.items()
        if isinstance(value, list)
    }


def trace_labels(
    trace: str | Path, sigs: Iterable[str] | None = None, pcs: Mapping[str, Sequence[Frame]] | None = None
) -> dict[str, PcLabel]:
    """Labels of ``sigs`` (default: every PC of the footer) in ``trace``, told apart from every
    PC of its ``pcstream.pcs`` footer (or of ``pcs`` when given), with the files each writes."""
    frames = read_pcs(trace) if pcs is None else pcs
    return label_pcs(frames, files_by_pc(trace), sigs)


def label_info(trace: str | Path, summary: dict[str, Any], frames: Mapping[str, str] | None) -> None:
    """Add ``label`` to the top PCs of an ``info`` summary (``pcs.top``) from the labels' frames
    the engine chose (:func:`pcstream.api.info_labelled`; None when the trace names no PCs) and
    the files each PC writes; PC 0 is the writes no program context was recorded for."""
    top = (summary.get("pcs") or {}).get("top")
    if not isinstance(top, list) or not top or frames is None:
        return
    files = files_by_pc(trace, None, set(frames))
    for entry in top:
        if isinstance(entry, dict):
            sig = str(entry.get("pc"))
            entry["label"] = (
                PcLabel(sig, frames[sig], files_text(files.get(sig, {}))).text
                if sig in frames
                else "no PC (file-system metadata and journal, or unknown)"
            )
