"""docs/RESULTS.md from a suite comparison: per discard mode, the seeds' claims beside ours, why a
claim does not hold where it does not (from the runs' own per-stream figures), and WAF and IOPS
of every workload × policy normalised to baseline.

Run: ``python -m pcstream.report.suite_results RESULTS.jsonl [--traces DIR] [--ssd NAME] -o docs/RESULTS.md``
(``make results`` runs the comparison first). ``RESULTS.jsonl`` is what
``pcstream compare --results DIR`` writes. The persistent PC-table claim is measured here: on
each GC-bound workload with a table learned on a second recording (``DIR/tables``, see
:mod:`pcstream.workloads.tables`), ``pcstream`` with an empty table against ``pcstream`` starting
from that table; and the GCC traces (not GC-bound) simulated twice with ``--table``, the second run
starting from the table the first one saved.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcstream import api, tracemeta
from pcstream.options import SimOptions
from pcstream.report.answer import GC_BOUND
from pcstream.report.data import discard_mode
from pcstream.report.gap import TIE, Gap, learned_waf
from pcstream.workloads import tables

ROCKS = ("rocksdb",)
# The GCC traces the persistent-table claim is measured on.
GCC = ("gcc",)
# Below this baseline WAF, GC copies so little that no placement can matter much.
LITTLE_GC = 1.05
# The prefill of traces without their own aged state (as compare's default).
PREFILL = 0.9

# by[mode][workload][policy] = the run's result object.
Runs = dict[str, dict[str, dict[str, dict[str, Any]]]]


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise SystemExit(
                f"{path}:{n}: not JSON ({e.msg}); give the results.jsonl of 'compare --results'"
            ) from None
    return rows


def workload(trace: str) -> str:
    """The workload's name: the file name without ``.parquet`` and the discard-mode suffix."""
    name = Path(trace).name.removesuffix(".parquet")
    return name.removesuffix(f".{discard_mode(trace)}")


def group(rows: list[dict[str, Any]]) -> Runs:
    by: Runs = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if "error" not in r:
            by[discard_mode(r["trace"])][workload(r["trace"])][r["policy"]] = r
    return by


def mode_order(by: Runs) -> list[str]:
    """Modes, the one where GC matters most (highest median baseline WAF) first."""

    def busy(mode: str) -> tuple[float, str]:
        base = [w["baseline"]["waf"] for w in by[mode].values() if "baseline" in w]
        return (-(statistics.median(base) if base else 1.0), mode)

    return sorted(by, key=busy)


def table(runs: dict[str, dict[str, dict[str, Any]]]) -> str:
    policies = sorted({p for w in runs.values() for p in w}, key=lambda p: (p != "baseline", p))
    lines = [
        "| workload | " + " | ".join(f"`{p}`" for p in policies) + " |",
        "|---|" + "---:|" * len(policies),
    ]
    for w in sorted(runs):
        base = runs[w].get("baseline")
        cells = []
        for p in policies:
            r = runs[w].get(p)
            if r is None:
                cells.append("—")
                continue
            waf = r["waf"]
            norm = f" ({waf / base['waf']:.2f})" if base else ""
            iops = r.get("iops")
            inorm = f", IOPS ×{iops / base['iops']:.2f}" if base and iops and base.get("iops") else ""
            cells.append(f"{waf:.3f}{norm}{inorm}")
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ the claims


@dataclass(frozen=True)
class Claim:
    what: str
    seeds: str
    # Per workload's runs: (ours, theirs) of the figure compared, or None where not measured.
    pair: Callable[[dict[str, dict[str, Any]]], tuple[float, float] | None]
    # Which workloads the claim is about (default: all).
    only: tuple[str, ...] = ()
    # Higher is better (IOPS) instead of lower (WAF).
    higher: bool = False


def _waf(ours: str, theirs: str) -> Callable[[dict[str, dict[str, Any]]], tuple[float, float] | None]:
    def pair(r: dict[str, dict[str, Any]]) -> tuple[float, float] | None:
        return (r[ours]["waf"], r[theirs]["waf"]) if ours in r and theirs in r else None

    return pair


def _iops(ours: str, theirs: str) -> Callable[[dict[str, dict[str, Any]]], tuple[float, float] | None]:
    def pair(r: dict[str, dict[str, Any]]) -> tuple[float, float] | None:
        a, b = r.get(ours, {}).get("iops"), r.get(theirs, {}).get("iops")
        return (a, b) if a and b else None

    return pair


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "PCStream vs Baseline, WAF",
        "−63 % on average (FAST'19, 90 %-full PM963)",
        _waf("pcstream", "baseline"),
    ),
    Claim(
        "PCStream vs AutoStream (SFR), WAF",
        "−49 % on average, up to −69 %",
        _waf("pcstream", "autostream-sfr"),
    ),
    Claim(
        "PCStream vs AutoStream (MQ), WAF",
        "(the seeds do not say which variant)",
        _waf("pcstream", "autostream-mq"),
    ),
    Claim(
        "PCStream vs PCStream* (internal substreams), WAF",
        "−12 % on average (RocksDB)",
        _waf("pcstream", "pcstream-star"),
        only=ROCKS,
    ),  # fmt: skip
    Claim(
        "ManualStream (the programs' own hints) vs Baseline, WAF, RocksDB",
        "−38 % (UR), equal to PCStream",
        _waf("manual", "baseline"),
        only=ROCKS,
    ),  # fmt: skip
    Claim("PCStream vs ManualStream, WAF, RocksDB", "about equal", _waf("pcstream", "manual"), only=ROCKS),
    Claim(
        "PCStream vs per-pc (one stream per PC: what PC separation alone can do), WAF",
        "— (our ablation)",
        _waf("pcstream", "per-pc"),
    ),  # fmt: skip
    Claim("PCStream vs Baseline, IOPS", "+45 % on average", _iops("pcstream", "baseline"), higher=True),
    Claim(
        "PCStream vs AutoStream (SFR), IOPS",
        "+28 % on average, up to +56 %",
        _iops("pcstream", "autostream-sfr"),
        higher=True,
    ),  # fmt: skip
)


def change(claim: Claim, runs: dict[str, dict[str, dict[str, Any]]], bound_only: bool) -> str:
    """The mean relative change of ``claim``'s figure over the workloads it covers (all, or only
    the GC-bound ones), with how many there are and on how many ours is better."""
    ratios = []
    for w, r in sorted(runs.items()):
        if claim.only and not any(k in w for k in claim.only):
            continue
        if bound_only and r.get("baseline", {}).get("waf", 0.0) < GC_BOUND:
            continue
        p = claim.pair(r)
        if p is not None and p[1] > 0:
            ratios.append(p[0] / p[1])
    if not ratios:
        return "—"
    mean = statistics.fmean(ratios) - 1.0
    better = sum(1 for x in ratios if (x > 1 + TIE if claim.higher else x < 1 - TIE))
    return f"{mean:+.1%} (better on {better} of {len(ratios)})"


def claims_table(by: Runs, modes: list[str], gcc: dict[str, str], learned: dict[str, str]) -> list[str]:
    head = "| claim | seeds | " + " | ".join(f"ours, {m}: all / GC-bound" for m in modes) + " |"
    lines = [head, "|---|---|" + "---|" * len(modes)]
    for c in CLAIMS:
        cells = [f"{change(c, by[m], False)} / {change(c, by[m], True)}" for m in modes]
        lines.append(f"| {c.what} | {c.seeds} | " + " | ".join(cells) + " |")
    lines.append(
        "| persistent PC-stream table: WAF with an empty table → starting from the table learned on a "
        "second recording of the same recipe, GC-bound workloads | GCC 1.96 → 1.54 | "
        + " | ".join(learned.get(m, "—") for m in modes)
        + " |"
    )
    lines.append(
        "| GCC (not GC-bound), WAF without → with the table of a first run over the same trace "
        "| 1.96 → 1.54 | " + " | ".join(gcc.get(m, "—") for m in modes) + " |"
    )
    return lines


# ------------------------------------------------------------------------------ why, from the data


def streams(r: dict[str, Any]) -> str:
    """A run's per-stream page shares and lifetime quartiles (host pages), the busiest first."""
    parts = []
    for s in sorted(r.get("per_stream") or [], key=lambda s: -s.get("pages", 0))[:5]:
        if not s.get("pages"):
            continue
        q = (s.get("lifetime_p25"), s.get("p50"), s.get("p75"))
        life = f", life {q[0]:,}–{q[1]:,}–{q[2]:,}" if None not in q else ""
        parts.append(f"s{s['stream']} {s.get('share', 0.0):.0%}{life}")
    return "; ".join(parts) or "no per-stream figures"


def stream0(r: dict[str, Any]) -> float:
    for s in r.get("per_stream") or []:
        if s.get("stream") == 0:
            return float(s.get("share", 0.0))
    return 0.0


def why_not(w: str, r: dict[str, dict[str, Any]], ours: str, rival: str) -> str:
    """Why ``ours`` is not below ``rival`` on workload ``w``, from the runs' own figures."""
    base = r["baseline"]["waf"] if "baseline" in r else 0.0
    a, b = r[ours], r[rival]
    text = f"{w}: `{ours}` {a['waf']:.3f} vs `{rival}` {b['waf']:.3f} ({a['waf'] / b['waf'] - 1:+.1%})"
    if base and base < LITTLE_GC:
        return text + f" — GC had little to do (baseline WAF {base:.3f}): no placement can save much here"
    gc = a.get("gc_pages", 0) / max(a.get("host_pages", 1), 1)
    return (
        f"{text} — GC copied {gc:.2f} pages per host page; {open_units(a, ours)}; {open_units(b, rival)}; "
        f"`{ours}` put {stream0(a):.0%} of the pages in stream 0; its streams (share, lifetime "
        f"p25–p50–p75 in host pages): {streams(a)}; `{rival}`: {streams(b)}"
    )


@functools.cache
def unit_pages(ssd: str) -> int:
    try:
        return int(api.ssd_summary(ssd)["unit_pages"])
    except Exception:  # noqa: BLE001 - an SSD this build does not know: the figure is left out
        return 0


def open_units(r: dict[str, Any], policy: str) -> str:
    """How much of the device's free space at the start a run's open write points held: on a
    full device each open unit is space GC cannot use."""
    unit = unit_pages(str(r.get("ssd", "")))
    free = r.get("physical_pages", 0) - r.get("aged_pages", 0)
    n = r.get("open_write_points")
    if not unit or free <= 0 or n is None:
        return f"`{policy}` open write points unknown"
    return f"`{policy}` held {n} unit(s) open ({n * unit / free:.0%} of the free pages at the start)"


def misses(by: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Where pcstream is not below baseline, AutoStream (SFR) or pcstream-star on a workload where
    GC matters, why from the data."""
    out = []
    for w in sorted(by):
        r = by[w]
        if "pcstream" not in r or r.get("baseline", {}).get("waf", 0.0) < LITTLE_GC:
            continue
        for rival in ("baseline", "autostream-sfr", "pcstream-star"):
            if rival in r and r["pcstream"]["waf"] >= r[rival]["waf"] * (1 - TIE):
                out.append("* " + why_not(w, r, "pcstream", rival))
    return out


def gc_bound(by: dict[str, dict[str, dict[str, Any]]], learned: dict[str, float] | None = None) -> list[str]:
    """For each workload where GC matters (baseline WAF ≥ LITTLE_GC): the best policies by WAF;
    where ``learned`` has its ``pcstream-star`` WAF from a table learned on the same trace, how
    the gap left splits (:func:`gap_left`)."""
    learned = learned or {}
    out = []
    for w in sorted(by):
        r = by[w]
        if "baseline" not in r or r["baseline"]["waf"] < LITTLE_GC:
            continue
        base = r["baseline"]["waf"]
        ranked = sorted((v["waf"], p) for p, v in r.items() if p != "oracle")
        rank = next((i for i, (_, p) in enumerate(ranked, 1) if p == "pcstream"), None)
        best = ", ".join(f"`{p}` {waf:.3f}" for waf, p in ranked[:3])
        oracle = f"; `oracle` {r['oracle']['waf']:.3f}" if "oracle" in r else ""
        pc = f"; `pcstream` ranks {rank} of {len(ranked)}" if rank else ""
        gaps = gap_closed(r) + gap_left(r, learned.get(w))
        out.append(f"* {w} (baseline WAF {base:.3f}): best {best}{oracle}{pc}{gaps}")
    return out


def gap_left(r: dict[str, dict[str, Any]], learned: float | None) -> str:
    """For the gap pcstream leaves to the oracle (shares of the whole gap, ``report.gap``): what
    ``pcstream-star`` recovers starting from the PC table of a first run over the same trace (a
    learned table, not a bound), and what is left after the better of the two (GC copies'
    placement and what PCs do not tell)."""
    gap = _gap(r, learned)
    if gap is None or learned is None:
        return ""
    return (
        f"; from a table learned on a first run over the same trace, `pcstream-star` {learned:.3f} "
        f"(recovers {gap.recovered:.0%} of the gap); left to the placement of GC copies and "
        f"to what PCs do not tell: {gap.left:.0%}"
    )


def same_trace_tables(by: Runs, traces_dir: Path, ssd: str) -> dict[str, dict[str, float]]:
    """Per discard mode and GC-bound workload (baseline WAF ≥ GC_BOUND): the WAF of
    ``pcstream-star`` starting from the PC table its own first run over the same trace saved."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for m, runs in by.items():
        for w, r in sorted(runs.items()):
            if r.get("baseline", {}).get("waf", 0.0) < GC_BOUND:
                continue
            trace = traces_dir / (w + ("" if m == "discard" else f".{m}") + ".parquet")
            if not trace.is_file():
                continue
            out[m][w] = learned_waf(str(trace), tables.sim_options(trace, ssd, None))
    return out


def gap_closed(r: dict[str, dict[str, Any]]) -> str:
    """The share of the gap between baseline and the oracle that pcstream closes,
    (baseline − pcstream) / (baseline − oracle), as a clause ("" without the three runs or a gap)."""
    gap = _gap(r, None)
    if gap is None:
        return ""
    return f"; `pcstream` closes {gap.closed:.0%} of the gap to `oracle`"


def _gap(r: dict[str, dict[str, Any]], learned: float | None) -> Gap | None:
    """The gap of one workload's runs (None without the three runs or a gap to split)."""
    if not all(p in r for p in ("baseline", "pcstream", "oracle")):
        return None
    gap = Gap(*(r[p]["waf"] for p in ("baseline", "pcstream", "oracle")), learned=learned)
    return gap if gap.splits else None


def persistent_table(traces: list[Path], ssd: str) -> dict[str, str]:
    """Per discard mode: pcstream on its GCC traces, cold and then with the PC table of a first run."""
    out: dict[str, list[str]] = defaultdict(list)
    for t in traces:
        prefill = 0.0 if tracemeta.aged_pages(str(t)) > 0 else PREFILL
        with tempfile.TemporaryDirectory() as d:
            saved = os.path.join(d, "pcs.json")
            sim = SimOptions(ssd=ssd, prefill=prefill, table=saved, timing=False)
            cold = api.simulate(str(t), "pcstream", sim)
            warm = api.simulate(str(t), "pcstream", sim)
        s0 = f"stream 0 {stream0(cold):.0%} → {stream0(warm):.0%}"
        out[discard_mode(str(t))].append(f"{workload(str(t))} {cold['waf']:.3f} → {warm['waf']:.3f} ({s0})")
    return {m: "; ".join(v) for m, v in out.items()}


def learned_tables(by: Runs, traces_dir: Path, ssd: str) -> tuple[dict[str, str], list[str]]:
    """Per discard mode, on each GC-bound workload whose table was learned on a second recording
    (``traces_dir/tables``): ``pcstream`` with an empty table against ``pcstream`` starting from
    that table. The claims table's cell per mode (mean change), and a line per workload."""
    cells: dict[str, str] = {}
    lines: list[str] = []
    for m, runs in by.items():
        changes, parts = [], []
        for w, r in sorted(runs.items()):
            if r.get("baseline", {}).get("waf", 0.0) < GC_BOUND:
                continue
            trace = traces_dir / (w + ("" if m == "discard" else f".{m}") + ".parquet")
            table = tables.table_for(trace, traces_dir / tables.TABLES_DIR)
            if not (trace.is_file() and table.is_file()):
                parts.append(f"{w} no table learned")
                continue
            cold = api.simulate(str(trace), tables.POLICY, tables.sim_options(trace, ssd, None))
            warm = tables.with_table(trace, table, ssd)
            changes.append(warm["waf"] / cold["waf"] - 1)
            parts.append(
                f"{w} {cold['waf']:.3f} → {warm['waf']:.3f} ({changes[-1]:+.1%}; stream 0 "
                f"{stream0(cold):.0%} → {stream0(warm):.0%})"
            )
        if changes:
            better = sum(1 for c in changes if c < -TIE)
            cells[m] = f"{statistics.mean(changes):+.1%} (better on {better} of {len(changes)})"
        if parts:
            lines.append(f"{m}: " + "; ".join(parts) + ".")
    return cells, lines


def learned_paragraph(traces_dir: Path | None, lines: list[str]) -> list[str]:
    """The persistent-table lines of :func:`learned_tables` under their heading (none: nothing)."""
    if not lines:
        return []
    return [
        "The persistent table, per GC-bound workload: `pcstream` WAF with an empty table → "
        "starting from the table `pcstream` saved on a second recording of the recipe "
        f"(`{traces_dir}/{tables.TABLES_DIR}`, `make tables`), and the share of pages in "
        "stream 0 (those written before their PC's lifetimes were known) —",
        "",
        *lines,
        "",
    ]


# The block trace's op code of a write (crates/pcstream-core/src/request.rs).
OP_WRITE = 0


def hinted_share(trace: Path) -> float:
    """The share of a block trace's written pages (after its aged state) that carry a write-lifetime
    hint the program set itself: what ManualStream can place."""
    import pyarrow.compute as pc  # noqa: PLC0415 - only the traces' check needs pyarrow
    import pyarrow.parquet as pq  # noqa: PLC0415

    skip = int(tracemeta.get(tracemeta.footer(trace), tracemeta.KEY_AGED_ROWS) or 0)
    t = pq.read_table(trace, columns=["op", "pages", "hint"]).slice(skip)
    writes = t.filter(pc.equal(t["op"], OP_WRITE))
    total = pc.sum(writes["pages"]).as_py() or 0
    hinted = pc.sum(writes.filter(pc.not_equal(writes["hint"], 0))["pages"]).as_py() or 0
    return hinted / total if total else 0.0


def hints_line(traces_dir: Path, by: Runs | None = None, modes: list[str] | None = None) -> str:
    """Which bundled traces carry the programs' own hints (ManualStream's input), from the data;
    with the runs, PCStream against ManualStream on those traces in each mode."""
    shares = {
        p.name.removesuffix(".parquet"): hinted_share(p)
        for p in sorted(traces_dir.glob("*.parquet"))
        if discard_mode(str(p)) == "discard"
    }
    if not shares:
        return ""
    some = [f"{w} {s:.0%}" for w, s in shares.items() if s > 0]
    line = (
        "The programs' own write-lifetime hints (ManualStream's input), share of each trace's written "
        "pages: "
        + (", ".join(some) if some else "none on any trace")
        + f" ({len(shares) - len(some)} of {len(shares)} set no hint; a page without one goes to stream 0, "
        "so ManualStream is Baseline there)."
    )
    hinted = [w for w, s in shares.items() if s > 0]
    if by is None or not hinted:
        return line
    return line + " " + manual_vs_pcstream(by, modes or mode_order(by), hinted)


def manual_vs_pcstream(by: Runs, modes: list[str], hinted: list[str]) -> str:
    """PCStream against ManualStream on the workloads whose programs set hints, per mode, beside
    the seeds' claim that they are about equal: both WAFs, baseline's, and PCStream's change."""
    out = []
    for m in modes:
        cells = []
        for w in hinted:
            r = by[m].get(w, {})
            if not all(p in r for p in ("pcstream", "manual", "baseline")):
                continue
            ours, manual, base = (r[p]["waf"] for p in ("pcstream", "manual", "baseline"))
            cells.append(
                f"{w} `pcstream` {ours:.3f} vs `manual` {manual:.3f} ({ours / manual - 1:+.1%}; "
                f"`baseline` {base:.3f})"
            )
        if cells:
            out.append(f"{m}: " + "; ".join(cells))
    if not out:
        return ""
    return (
        "On those traces, PCStream against ManualStream on the programs' real hints (the seeds: about "
        "equal), per discard mode — " + ". ".join(out) + "."
    )


def short(by: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """For each workload below GC_BOUND: how much its baseline run wrote against the space free on
    the device at the start, and how much GC copied (why GC had little to do, from the run)."""
    out = []
    for w in sorted(by):
        b = by[w].get("baseline")
        if b is None or b["waf"] >= GC_BOUND:
            continue
        host = int(b.get("host_pages", 0))
        free = int(b.get("physical_pages", 0)) - int(b.get("aged_pages", 0))
        gc = b.get("gc_pages", 0) / max(host, 1)
        if not host or free <= 0:
            out.append(f"* {w} (baseline WAF {b['waf']:.3f}): the run's page counts are not in the results")
            continue
        why = (
            "its writes did not exceed the free space, so GC had little to reclaim"
            if host <= free
            else "the pages GC found in its victims were mostly dead already"
        )
        out.append(
            f"* {w} (baseline WAF {b['waf']:.3f}): {host:,} host pages, {host / free:.2f}× the {free:,} "
            f"pages free on the device at the start; GC copied {gc:.2f} pages per host page: {why}"
        )
    return out


def render(rows: list[dict[str, Any]], traces_dir: Path | None, ssd: str, source: str) -> str:
    by = group(rows)
    modes = mode_order(by)
    ssds = sorted({r.get("ssd", "?") for r in rows if "error" not in r})
    failed = [r for r in rows if "error" in r]
    gcc: dict[str, str] = {}
    learned: dict[str, str] = {}
    learned_lines: list[str] = []
    if traces_dir is not None:
        found = sorted(p for p in traces_dir.glob("*.parquet") if any(p.name.startswith(k) for k in GCC))
        gcc = persistent_table(found, ssd)
        learned, learned_lines = learned_tables(by, traces_dir, ssd)
        same = same_trace_tables(by, traces_dir, ssd)
    else:
        same = {}
    parts = [
        "# Results on the workload suite",
        "",
        f"Produced by `{source}`; do not edit by hand (`make results` regenerates it).",
        "",
        f"SSD: {', '.join(ssds)}. Each trace starts from the aged file system it was mapped on "
        "(traces/manifest.json: `age`, `mount_opts`); traces without an aged state start from a "
        f"device prefilled to {PREFILL:.0%}. Discard modes: "
        + ", ".join(f"{m} ({len(by[m])} workloads)" for m in modes)
        + "; the mode where GC matters most comes first.",
        "",
        "## The answer",
        "",
    ]
    for m in modes:
        bound = sum(1 for r in by[m].values() if r.get("baseline", {}).get("waf", 0.0) >= GC_BOUND)
        parts += [f"**{m}**: baseline WAF ≥ {GC_BOUND} on {bound} of {len(by[m])} workloads.", ""]
        parts += gc_bound(by[m], same.get(m)) or ["* GC had little to do on every workload"]
        below = short(by[m])
        if below:
            parts += [
                "",
                f"Below {GC_BOUND}, from the baseline runs (docs/WORKLOADS.md says what bounds each recipe):",
                "",
            ]
            parts += below
        parts.append("")
    parts += [
        "## The seeds' claims beside ours",
        "",
        "Mean relative change of the figure (ours against the rival named second) over every "
        f"workload of the mode, and over its GC-bound ones (baseline WAF ≥ {GC_BOUND}); negative "
        "WAF and positive IOPS changes are gains.",
        "",
        *claims_table(by, modes, gcc, learned),
        "",
        hints_line(traces_dir, by, modes) if traces_dir is not None else "",
        "",
        *learned_paragraph(traces_dir, learned_lines),
        "## Where pcstream does not win, and why",
        "",
        "On each workload where GC matters, every rival pcstream does not beat, with the runs' own "
        "figures: the GC copies per host page, pcstream's stream-0 share (pages it could not "
        "place), and the busiest streams' page shares and lifetime quartiles (the seeds' per-stream "
        "boxes) next to the rival's.",
        "",
    ]
    for m in modes:
        busy = any(r.get("baseline", {}).get("waf", 0.0) >= LITTLE_GC for r in by[m].values())
        none = (
            "* pcstream beats every rival here"
            if busy
            else f"* GC had little to do (baseline WAF < {LITTLE_GC})"
        )
        parts += [f"### {m}", "", *(misses(by[m]) or [none]), ""]
    for m in modes:
        parts += [f"## Every run, {m}", "", table(by[m])]
    if failed:
        parts += ["## Runs that failed", ""]
        parts += [f"* {r['trace']} / {r['policy']}: {r['error']}" for r in failed]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="results.jsonl of 'pcstream compare --results DIR'")
    ap.add_argument("--traces", type=Path, help="trace directory (for the persistent-table runs)")
    ap.add_argument("--ssd", default="paper")
    ap.add_argument("-o", "--output", type=Path, default=Path("docs/RESULTS.md"))
    a = ap.parse_args(argv)
    if not a.results.is_file():
        print(
            f"error: {a.results}: no such file; run 'pcstream compare --results DIR' first", file=sys.stderr
        )
        return 2
    source = "python -m pcstream.report.suite_results " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(load(a.results), a.traces, a.ssd, source)
    a.output.write_text(text)
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
