"""Live write-lifetime hints (``pcstream run``, ``record --block --table``): the learned PC table
applied to an unmodified program through Linux's ``fcntl(F_SET_RW_HINT)`` (docs/LIVE.md).

The table is the JSON ``simulate --table`` writes for the pcstream policies. It is loaded as a
simulation on ``--ssd`` loads it (re-clustered at once for that SSD's stream count; the engine does
it, :func:`pcstream.api.table_streams`), and each PC's stream becomes a Linux hint level:

* the streams in use, ordered by their lifetime centroid, are split into four groups of sizes as
  equal as possible (the first groups take the extra streams) → SHORT (2), MEDIUM (3), LONG (4),
  EXTREME (5); with fewer than four streams, the shortest take the lowest levels;
* a PC with no stream (unknown, or fewer lifetimes than the policy's ``n_min``) → NOT_SET (0);
  NONE (1) is never used.

The shim (``shim/src/live.c``) loads the resolved signature → hint file (:func:`write_hints`)
named by ``PCSHIM_HINTS`` and appends its counts to ``<file>.log`` (:func:`read_live_log`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcstream import api
from pcstream.errors import InputError, Kind, engine_kind, read_input
from pcstream.record import runner

NOT_SET, NONE, SHORT, MEDIUM, LONG, EXTREME = range(6)
LEVELS = ("NOT_SET", "NONE", "SHORT", "MEDIUM", "LONG", "EXTREME")
TABLE_POLICIES = ("pcstream", "pcstream-star")
# The hints file and the live log are laid out in shim/include/pcshim.h (PCSHIM_HINTS_MAGIC,
# struct pcshim_hints_header, struct pcshim_hint, the L and R lines): the shim's side of both.
HINTS_MAGIC = b"PCHINTS1"
# The signature method a table records when it was learned on a trace of `pcstream record`.
KEY_SIGNATURE = "signature"
DEFAULT_SIGNATURE = {"method": "auto", "frames": 12}
SOURCE_PREFIXES = (runner.SOURCE_VERB_BLOCK + " ", runner.SOURCE_VERB + " ")


def level_of_rank(rank: int, streams: int) -> int:
    """The hint of the stream of lifetime rank ``rank`` (0 = shortest) among ``streams`` streams."""
    q, r = divmod(streams, 4)
    sizes = [q + 1 if g < r else q for g in range(4)]
    at = 0
    for g, size in enumerate(sizes):
        at += size
        if rank < at:
            return SHORT + g
    raise ValueError(f"rank {rank} out of {streams} streams")


# The parameters of a simulation that learns a table, named in the advice of load_table's errors.
LEARN = ("policy", "table")


def load_table(path: str | Path) -> dict[str, Any]:
    """The table JSON at ``path``; an InputError naming the file when it is missing or not a PC
    table of the pcstream policies (its advice names the parameters ``policy`` and ``table`` of a
    simulation)."""
    p = Path(path)
    if not os.path.lexists(p):
        raise InputError(
            p,
            f"{p}: no such table; learn one with 'pcstream simulate TRACE {{policy}} pcstream {{table}} {p}'",
            params=LEARN,
        )
    text = read_input(str(p), "PC table", api.input_limit("pc_table"))
    try:
        table = json.loads(text)
    except RecursionError:
        # Python's parser stops at its recursion limit; the engine's (simulate --table) refuses
        # such a file as not a table, with status 3 too.
        raise InputError(
            p,
            f"{p}: not a PC table (invalid JSON: nested too deeply); learn it again "
            "with 'simulate {table}'",
            params=LEARN,
        ) from None
    except ValueError as exc:
        raise InputError(
            p,
            f"{p}: not a PC table (invalid JSON: {exc}); learn it again with 'simulate {{table}}'",
            params=LEARN,
        ) from None
    if not isinstance(table, dict) or not isinstance(table.get("pcs"), list) or "policy" not in table:
        raise InputError(
            p,
            f"{p}: not a PC table of 'simulate {{table}}' (no policy and pcs); learn it again",
            params=LEARN,
        )
    if table["policy"] not in TABLE_POLICIES:
        raise InputError(p, f"{p}: a table of policy {table['policy']!r}; live hints need pcstream's")
    return table


def signature_of(table: Mapping[str, Any]) -> dict[str, Any] | None:
    """The signature method the table was learned with: {"method", "frames"}, or None."""
    sig = table.get(KEY_SIGNATURE)
    if isinstance(sig, dict) and isinstance(sig.get("method"), str) and isinstance(sig.get("frames"), int):
        return {"method": sig["method"], "frames": sig["frames"]}
    return None


def source_signature(source: str) -> dict[str, Any] | None:
    """The signature method in a trace's ``pcstream.source`` written by ``pcstream record`` (its
    first stage: ``pcstream record [--block] --method M --frames N -- CMD``), or None."""
    first = source.split(" | ")[0]
    for prefix in SOURCE_PREFIXES:
        if first.startswith(prefix):
            words = first[len(prefix) :].split()
            if len(words) >= 4 and words[0] == "--method" and words[2] == "--frames" and words[3].isdigit():
                return {"method": words[1], "frames": int(words[3])}
    return None


def stamp_signature(table_path: str | Path, trace: str | Path) -> dict[str, Any] | None:
    """After ``simulate --table``: store in the table the signature method of the trace's PCs (from
    its source, when ``pcstream record`` made it). Returns it, or None (the table is unchanged)."""
    from pcstream import tracemeta

    sig = source_signature(tracemeta.get(tracemeta.footer(trace), tracemeta.KEY_SOURCE) or "")
    if sig is None:
        return None
    p = Path(table_path)
    table = json.loads(p.read_text())
    table[KEY_SIGNATURE] = sig
    tmp = p.with_name(f"{p.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(table, separators=(",", ":")))
    tmp.replace(p)
    return sig


@dataclass
class Resolved:
    """A table resolved for one SSD: each PC's hint, and how the streams map to levels."""

    hints: dict[int, int]  # every PC of the table → its level (NOT_SET: no stream)
    signature: dict[str, Any]
    signature_stored: bool
    streams: list[dict[str, Any]] = field(default_factory=list)
    pcs: int = 0

    def summary(self) -> dict[str, Any]:
        counts = {LEVELS[h]: 0 for h in (NOT_SET, SHORT, MEDIUM, LONG, EXTREME)}
        for h in self.hints.values():
            counts[LEVELS[h]] += 1
        return {
            "pcs": self.pcs,
            "hinted_pcs": sum(1 for h in self.hints.values() if h != NOT_SET),
            "pcs_by_hint": counts,
            "streams": self.streams,
            "signature": self.signature,
        }


def resolve(path: str | Path, ssd: str = "paper", params: dict[str, str] | None = None) -> Resolved:
    """Load the table at ``path`` as pcstream does on ``ssd`` and map each PC's stream to a hint."""
    table = load_table(path)
    try:
        text = api.table_streams(json.dumps(table), ssd=ssd, policy=table["policy"], params=params)
        saved = json.loads(text)
    except Exception as exc:
        if engine_kind(exc) is not Kind.INPUT:  # only the engine's InputError: a table it cannot load
            raise
        raise InputError(path, f"{path}: not a loadable PC table ({exc}); learn it again") from None
    centroids = saved.get("centroids") or []
    used = sorted({int(e["stream"]) for e in saved["pcs"] if int(e["stream"]) > 0})
    used.sort(key=lambda s: (centroids[s - 1] if s - 1 < len(centroids) else float("inf"), s))
    level = {s: level_of_rank(rank, len(used)) for rank, s in enumerate(used)}
    # every PC of the table is known to the shim (a write's PC counts as matched); those without a
    # stream are NOT_SET, as unknown ones are
    hints = {int(e["sig"]): level.get(int(e["stream"]), NOT_SET) for e in saved["pcs"]}
    streams = [
        {
            "stream": s,
            "centroid_log2_pages": centroids[s - 1] if s - 1 < len(centroids) else None,
            "hint": LEVELS[level[s]],
            "pcs": sum(1 for e in saved["pcs"] if int(e["stream"]) == s),
        }
        for s in used
    ]
    sig = signature_of(table)
    return Resolved(hints, sig or dict(DEFAULT_SIGNATURE), sig is not None, streams, len(saved["pcs"]))


def write_hints(hints: Mapping[int, int], out: Path) -> None:
    """The shim's hint file: magic, count, then (signature, hint) pairs, little-endian u64."""
    # "<II": pcshim_hints_header's count and reserved; "<QQ": one pcshim_hint (shim/include/pcshim.h).
    body = b"".join(struct.pack("<QQ", sig, h) for sig, h in sorted(hints.items()) if sig)
    out.write_bytes(HINTS_MAGIC + struct.pack("<II", len(body) // 16, 0) + body)


@dataclass
class LiveCounts:
    """What the shim's processes counted (their L lines) and the errors the kernel gave (R lines)."""

    processes: int = 0
    writes: int = 0
    matched: int = 0
    hints_set: int = 0
    rejected: int = 0
    program_hints: int = 0
    errnos: list[int] = field(default_factory=list)

    @property
    def match_rate(self) -> float:
        return self.matched / self.writes if self.writes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "writes": self.writes,
            "matched_writes": self.matched,
            "match_rate": self.match_rate,
            "hints_set": self.hints_set,
            "hints_rejected": self.rejected,
            "program_hint_inodes": self.program_hints,
            "rejected_errnos": [errno.errorcode.get(e, str(e)) for e in self.errnos],
        }


def read_live_log(path: Path) -> LiveCounts:
    """Sum the L lines of the live log and collect its R lines (missing file: nothing counted)."""
    # "L <pid> <writes> <matched> <set> <rejected> <inodes>", "R <errno> <pid>": shim/include/pcshim.h.
    c = LiveCounts()
    pids = set()
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return c
    for line in lines:
        f = line.split()
        if f[:1] == ["L"] and len(f) == 7 and all(x.isdigit() for x in f[1:]):
            pids.add(f[1])
            c.writes += int(f[2])
            c.matched += int(f[3])
            c.hints_set += int(f[4])
            c.rejected += int(f[5])
            c.program_hints += int(f[6])
        elif f[:1] == ["R"] and len(f) == 3 and f[1].isdigit() and int(f[1]) not in c.errnos:
            c.errnos.append(int(f[1]))
    c.processes = len(pids)
    return c


def warnings(counts: LiveCounts, table: str | Path) -> list[str]:
    """The warnings of a live run: hints the kernel rejected, a table that matched no write."""
    out = []
    if counts.errnos:
        names = ", ".join(errno.errorcode.get(e, str(e)) for e in counts.errnos)
        out.append(
            f"the kernel or file system rejected the write-lifetime hint ({names}) on "
            f"{counts.rejected} attempt(s); those files were written without hints"
        )
    if counts.writes and counts.matched == 0:
        out.append(
            f"{table}: no write matched a PC of the table (match rate 0.0 % of {counts.writes} writes); "
            "learn the table on a recorded run of this program (record, map, simulate --table)"
        )
    elif counts.writes and counts.match_rate < 0.5:
        out.append(
            f"{table}: only {100 * counts.match_rate:.1f} % of {counts.writes} writes matched a PC of the "
            "table; the others were written with no hint (NOT_SET)"
        )
    return out


def fidelity(block_trace: str | Path, hints: Mapping[int, int]) -> dict[str, Any]:
    """Hint fidelity of a real block trace: the share of data pages attributed to a PC whose bio
    carried the hint of that PC (NOT_SET for a PC without one), in total and per PC."""
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(block_trace, columns=["op", "pc", "pages", "meta", "hint"])
    op, pc = t["op"].to_numpy(), t["pc"].to_numpy().astype(np.uint64)
    pages, meta, hint = t["pages"].to_numpy(), t["meta"].to_numpy(), t["hint"].to_numpy()
    sel = (op == 0) & (meta == 0) & (pc != 0)
    pc, pages, hint = pc[sel], pages[sel].astype(np.int64), hint[sel].astype(np.int64)
    per: dict[int, list[int]] = {}
    for sig in np.unique(pc):
        m = pc == sig
        want = hints.get(int(sig), NOT_SET)
        per[int(sig)] = [int(pages[m].sum()), int(pages[m & (hint == want)].sum()), want]
    total = sum(v[0] for v in per.values())
    same = sum(v[1] for v in per.values())
    return {
        "data_pages": total,
        "same_hint_pages": same,
        "rate": same / total if total else 0.0,
        "pcs": {
            str(sig): {"pages": n, "same_hint_pages": k, "rate": k / n if n else 0.0, "hint": LEVELS[want]}
            for sig, (n, k, want) in sorted(per.items(), key=lambda kv: -kv[1][0])
        },
    }


def live_env(env: dict[str, str], hints_file: Path, signature: Mapping[str, Any]) -> dict[str, str]:
    """``env`` with the live hints set for the shim (``PCSHIM_HINTS``) and the table's signature
    method; the caller adds the shim to LD_PRELOAD (and PCSHIM_DIR to record too)."""
    env = dict(env)
    env["PCSHIM_HINTS"] = str(hints_file.resolve())
    env["PCSHIM_METHOD"] = str(signature["method"])
    env["PCSHIM_FRAMES"] = str(signature["frames"])
    return env


def run(cmd: list[str], table: str | Path, ssd: str = "paper") -> tuple[int, dict[str, Any]]:
    """``pcstream run``: ``cmd`` under the shim with live hints from ``table`` (resolved for
    ``ssd``), nothing recorded. Returns the command's exit status (128+N for signal N) and a
    summary: the table's resolution, the shim's counts, warnings."""
    resolved = resolve(table, ssd)
    shim = runner.shim_path()
    early = runner.early_warnings(cmd, shim)
    if not resolved.signature_stored:
        early.append(
            f"{table}: the table does not say which signature method learned it; using "
            f"{resolved.signature['method']} with {resolved.signature['frames']} frames"
        )
    work = Path(tempfile.mkdtemp(prefix="pcstream-run-"))
    try:
        # readable (the table) and appendable (the log) by descendants that drop privileges
        work.chmod(0o755)
        hints_file = work / "hints.bin"
        write_hints(resolved.hints, hints_file)
        hints_file.chmod(0o644)
        log = Path(str(hints_file) + ".log")
        log.touch()
        log.chmod(0o666)
        env = {k: v for k, v in os.environ.items() if k != "PCSHIM_DIR"}
        env = live_env(env, hints_file, resolved.signature)
        env["LD_PRELOAD"] = str(shim) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        status = runner.run(cmd, env)
        counts = read_live_log(log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "status": status,
        "table": resolved.summary(),
        "live": counts.as_dict(),
        "warnings": early + warnings(counts, table),
    }
    return status, summary
