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
over the same frames), the signature is appended.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcstream import tracemeta
from pcstream.errors import InputError
from pcstream.pcfiles import files_by_pc, files_text

Frame = Mapping[str, Any]


# --------------------------------------------------------------------------- frames


_CLONE = re.compile(r"\s*\[clone [^\]]*\]$")
_QUALIFIER = re.compile(r"\s+(const|volatile|noexcept|&&|&)$")


# Cached: a trace's frames repeat the same few symbols (libc's, main's) on every PC's path.
@functools.lru_cache(maxsize=1 << 16)
def short_symbol(symbol: str) -> str:
    """A demangled C++ name without its parameter list and qualifiers:
    ``ns::f(int, std::string const&) const`` → ``ns::f``; other names unchanged."""
    s = symbol.strip()
    s = _CLONE.sub("", s)
    for _ in range(3):
        s = _QUALIFIER.sub("", s)
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                head = s[:i].rstrip()
                # "(anonymous namespace)" or "operator()" is part of the name, not its parameters.
                return head if head and not head.endswith("operator") else s
    return s


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


def _exact_name(frame: Frame) -> str:
    """The frame with its offset even when it has a symbol (two call sites in one function)."""
    symbol = frame.get("symbol")
    module = os.path.basename(str(frame.get("module") or "?"))
    if isinstance(symbol, str) and symbol:
        return f"{short_symbol(symbol)} ({module}+{_offset(frame)})"
    return f"{module}+{_offset(frame)}"


def _exact_key(frame: Frame) -> tuple[str, str]:
    return str(frame.get("module") or ""), _offset(frame)


# Where every process or thread starts: no context for a label.
_STARTUP_SYMBOLS = frozenset(
    "_start __libc_start_main __libc_start_main_impl __libc_start_call_main _dl_start_user "
    "start_thread clone clone3 __clone __clone3 __clone_internal".split()
)
_RUNTIME_MODULES = ("libc.so", "ld-linux", "libpthread.so")


# --------------------------------------------------------------------------- labels


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


def _choose(
    sharing: Sequence[set[str]], sig: str, left: set[str] | None, others: int, rank: Sequence[tuple[int, int]]
) -> tuple[list[int], set[str] | None]:
    """Depths of the frames of PC ``sig`` that tell it from the PCs ``left`` (None: all ``others``
    PCs but ``sig``) — ``sharing[d]``: the PCs, ``sig`` among them, that share its frame at depth
    d — greedily: each step takes the depth that leaves the fewest PCs sharing every chosen frame
    (on a tie the better ``rank``, then the innermost), until none is left or no depth helps.
    Returns (depths, PCs left; None: all). While ``left`` is all, its size comes from the sharing
    sets' sizes and it is never built: building it for every PC made labelling N PCs N² steps."""
    chosen: list[int] = []
    size = others if left is None else len(left)
    while size:
        best: tuple[int, int, int, int] | None = None
        for depth, share in enumerate(sharing):
            if depth in chosen:
                continue
            remain = len(share) - 1 if left is None else len(left & share)
            score = (remain, *rank[depth], depth)
            if remain < size and (best is None or score < best):
                best = score
        if best is None:
            break
        chosen.append(best[-1])
        left = sharing[best[-1]] - {sig} if left is None else left & sharing[best[-1]]
        size = len(left)
    return chosen, left


# A frame's name key: (module, True, symbol), or (module, False, offset) without a symbol. The
# strings as read (no "s:" + symbol made per frame): their hashes are computed once.
NameKey = tuple[str, bool, str]


def _frame_facts(frame: Frame) -> tuple[NameKey, bool, bool]:
    """A frame's (name key; whether it has a symbol; whether it is a frame of process or thread
    start-up: a start-up symbol, or an unnamed frame of libc), read once per frame."""
    module = str(frame.get("module") or "")
    symbol = frame.get("symbol")
    if isinstance(symbol, str) and symbol:
        return (module, True, symbol), True, short_symbol(symbol) in _STARTUP_SYMBOLS
    return (module, False, _offset(frame)), False, os.path.basename(module).startswith(_RUNTIME_MODULES)


def _first_unique(sizes: Sequence[int], rank: Sequence[tuple[int, int]]) -> int | None:
    """The depth :func:`_choose` takes first when a frame of the PC is its alone (``sizes[d]``:
    the PCs sharing its frame at depth d, 1 when only the PC has it): the best ranked such frame,
    then the innermost; None when there is none."""
    best: tuple[tuple[int, int], int] | None = None
    for depth, size in enumerate(sizes):
        if size == 1 and (best is None or (rank[depth], depth) < best):
            best = (rank[depth], depth)
    return None if best is None else best[1]


def _counts(paths: Iterable[Sequence[Any]]) -> tuple[dict[Any, int], list[dict[Any, int]]]:
    """(frame key → how many PCs have that frame anywhere on their path, per depth: frame key →
    how many have it at that depth); ``paths``: each PC's frames' keys. Counts, not the sets of
    :func:`_index`: making a set per distinct frame took most of the labelling's time."""
    on_path: dict[Any, int] = {}
    at_depth: list[dict[Any, int]] = []
    for path in paths:
        at_depth.extend({} for _ in range(len(path) - len(at_depth)))
        for key, level in zip(path, at_depth):
            level[key] = level.get(key, 0) + 1
        for key in set(path):  # a frame twice on one path (recursion) counts once
            on_path[key] = on_path.get(key, 0) + 1
    return on_path, at_depth


def _index(keys: Mapping[str, Sequence[Any]]) -> tuple[dict[Any, set[str]], list[dict[Any, set[str]]]]:
    """(frame key → the PCs with that frame anywhere on their path, per depth: frame key → the PCs
    with that frame at that depth); ``keys``: PC → its frames' keys."""
    # defaultdict: a set made only for a new key (setdefault would make one per call).
    on_path: defaultdict[Any, set[str]] = defaultdict(set)
    at_depth = [defaultdict(set) for _ in range(max(map(len, keys.values()), default=0))]
    for sig, path in keys.items():
        for key, level in zip(path, at_depth):
            on_path[key].add(sig)
            level[key].add(sig)
    return on_path, at_depth


def _render(path: Sequence[Frame], depths: Iterable[int], exact: Iterable[int]) -> str:
    ordered = sorted(set(depths), reverse=True)  # outermost first
    parts: list[str] = []
    for k, depth in enumerate(ordered):
        if k:
            parts.append(" → " if ordered[k - 1] == depth + 1 else " → … → ")
        parts.append(_exact_name(path[depth]) if depth in exact else frame_name(path[depth]))
    return "".join(parts)


# A way to label a PC: its cost (PCs left sharing every chosen frame, frames, start-up frames,
# unnamed frames: lower is better), and the depths shown with those shown by their call site.
Option = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class _Labeller:
    """The indices over every PC's frames a label is chosen from (built once: linear in the frames)."""

    def __init__(self, framed: Mapping[str, list[Frame]]) -> None:
        self.framed = framed
        self.facts = {sig: [_frame_facts(f) for f in path] for sig, path in framed.items()}
        self.keys = {sig: [fact[0] for fact in facts] for sig, facts in self.facts.items()}
        # How many PCs share each frame: enough for a PC with a frame of its own (most PCs); the
        # sets of the PCs sharing each frame are built only for a PC without one.
        self.count_on_path, self.count_at_depth = _counts(self.keys.values())
        self._named: tuple[dict[Any, set[str]], list[dict[Any, set[str]]]] | None = None
        self._exact: tuple[dict[Any, set[str]], list[dict[Any, set[str]]]] | None = None
        # Named frames on every PC's path (main, the event loop) give no context.
        self.everywhere = {k for k, n in self.count_on_path.items() if n == len(framed)}
        self.others = len(framed) - 1  # the PCs each framed PC is told apart from

    def options(self, sig: str) -> list[Option]:
        """A label by frames absent from the others' paths and one by frames at depths where the
        others have other frames (often shorter, but only the first shows what the others lack)."""
        facts = self.facts[sig]
        rank = [(1 if startup else 0, 0 if named else 1) for _, named, startup in facts]
        useful = [d for d, f in enumerate(facts) if not f[2]]
        named = [d for d in useful if facts[d][1]]
        context = [d for d in named if facts[d][0] not in self.everywhere]
        outer = max(context or named or useful or [len(facts) - 1])
        found: list[Option] = []
        keys = self.keys[sig]
        for on_path in (True, False):
            if on_path:
                sizes = [self.count_on_path[k] for k in keys]
            else:
                sizes = [level[k] for level, k in zip(self.count_at_depth, keys)]
            unique = _first_unique(sizes, rank) if self.others else None
            if unique is not None:  # what _choose finds in one step: a frame no other PC has there
                found.append(((0, 1, *rank[unique]), (unique, outer), ()))
                continue
            depths, left = _choose(self.sharing(sig, on_path, False), sig, None, self.others, rank)
            exact: list[int] = []
            if left is None or left:  # the same names: a chosen frame's call site may be what differs
                exact, left = _choose(self.sharing(sig, on_path, True), sig, left, self.others, rank)
            chosen = list(dict.fromkeys(depths + exact)) or [0]
            unresolved = self.others if left is None else len(left)
            cost = (unresolved, len(chosen), sum(rank[d][0] for d in chosen), sum(rank[d][1] for d in chosen))
            found.append((cost, (*chosen, outer), tuple(exact)))
        return found

    def sharing(self, sig: str, on_path: bool, exact: bool) -> list[set[str]]:
        """Per frame of ``sig``: the PCs with that frame (``exact``: at that call site) on their
        path (``on_path``) or at that depth. The indices of these sets are built when first
        needed: a frame of its own (the counts) tells most PCs apart, names alone most others."""
        if exact and self._exact is None:
            self._exact = _index({s: [_exact_key(f) for f in path] for s, path in self.framed.items()})
        if not exact and self._named is None:
            self._named = _index(self.keys)
        if exact:
            assert self._exact is not None
            on, at = self._exact
            keys = [_exact_key(f) for f in self.framed[sig]]
        else:
            assert self._named is not None
            on, at = self._named
            keys = self.keys[sig]
        if on_path:
            return [on[k] for k in keys]
        return [at[d][k] for d, k in enumerate(keys)]

    def text(self, sig: str, option: Option) -> str:
        return _render(self.framed[sig], option[1], option[2])

    def best(self, sig: str, options: list[Option]) -> str:
        """The text of the cheapest option (on equal costs, the first text in order), rendering
        only the options it needs."""
        low = min(option[0] for option in options)
        tied = [option for option in options if option[0] == low]
        if len({option[1:] for option in tied}) == 1:
            return self.text(sig, tied[0])
        return min(self.text(sig, option) for option in tied)


def label_pcs(
    pcs: Mapping[str, Sequence[Frame]],
    files: Mapping[str, Mapping[str, int]] | None = None,
    sigs: Iterable[str] | None = None,
) -> dict[str, PcLabel]:
    """A label for each PC of ``sigs`` (default: every PC of ``pcs``), telling it apart from every
    PC of ``pcs`` (signature → frames, innermost first). ``files``: PC → path pattern → amount
    written (:func:`files_by_pc`). PCs without frames are labelled ``PC <signature>``."""
    with _no_collection():
        return _label_pcs(pcs, files, sigs)


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: labelling makes a few containers per frame, none in a
    cycle, and the collector's passes over them took a quarter of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _label_pcs(
    pcs: Mapping[str, Sequence[Frame]],
    files: Mapping[str, Mapping[str, int]] | None,
    sigs: Iterable[str] | None,
) -> dict[str, PcLabel]:
    framed = {str(s): list(f) for s, f in pcs.items() if f}
    wanted = list(dict.fromkeys(str(s) for s in (pcs if sigs is None else sigs)))
    labeller = _Labeller(framed)
    options: dict[str, list[Option]] = {}
    texts: dict[str, str] = {}
    # Every PC is labelled (not only the ones asked for), so a PC gets the same label whichever
    # others are shown beside it.
    for sig in dict.fromkeys([*framed, *wanted]):
        if sig in framed:
            options[sig] = labeller.options(sig)
            texts[sig] = labeller.best(sig, options[sig])
        else:
            texts[sig] = f"PC {sig}"
    # Equal texts: the first option (what the others lack), then the signature appended (twins over
    # the same frames, or modules with the same file name).
    for fallback in (
        lambda sig, text: labeller.text(sig, options[sig][0]) if sig in options else text,
        lambda sig, text: f"{text} (PC {sig})",
    ):
        seen = Counter(texts.values())
        texts = {sig: fallback(sig, text) if seen[text] > 1 else text for sig, text in texts.items()}
    return {sig: PcLabel(sig, texts[sig], files_text(files.get(sig, {})) if files else "") for sig in wanted}


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


def label_info(trace: str | Path, summary: dict[str, Any]) -> None:
    """Add ``label`` to the top PCs of an ``info`` summary (``pcs.top``) when the trace names its
    PCs (``pcstream.pcs``); PC 0 is the writes no program context was recorded for."""
    top = (summary.get("pcs") or {}).get("top")
    if not isinstance(top, list) or not top:
        return
    try:
        footer = tracemeta.footer(trace)  # read once for the PCs and the file names
        frames = read_pcs(trace, footer)
    except (OSError, ValueError, InputError):
        return
    if not frames:
        return
    sigs = [str(entry.get("pc")) for entry in top if isinstance(entry, dict)]
    wanted = [s for s in sigs if s != "0"]
    labels = label_pcs(frames, files_by_pc(trace, footer, set(wanted)), wanted)
    for entry in top:
        if isinstance(entry, dict):
            sig = str(entry.get("pc"))
            entry["label"] = (
                labels[sig].text if sig in labels else "no PC (file-system metadata and journal, or unknown)"
            )
