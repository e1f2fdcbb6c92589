"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no display, no pyplot).

Each function draws one PNG file, ``name`` in ``out_dir``, and returns the name, or None when the
sweep has no data for it (e.g. IOPS without timing). A policy keeps one colour in every figure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from pcstream.report.data import BASELINE, Box, Row, Sweep, lifetime_boxes, trace_labels

DPI = 100
# The future-knowledge bound: shown, never framed as the winner.
ORACLE = "oracle"
# PNG metadata: leave out the software version so equal sweeps give byte-identical figures.
PNG_METADATA = {"Software": None}


def slug(*parts: str) -> str:
    """A file-name-safe name from labels (``zipf-0.99``, ``small``, ``ssd/x.toml`` → ``ssd-x-toml``)."""
    text = "-".join(parts)
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "figure"


# tab20 holds ten hues, each dark then light: take the dark ones first so that neighbouring bars
# differ in hue; grey (indices 14, 15) is kept for the baseline.
_ORDER = [i for i in range(0, 20, 2) if i != 14] + [i for i in range(1, 20, 2) if i != 15]


def policy_colours(policies: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    cmap = colormaps["tab20"]
    colours = {BASELINE: cmap(14)}
    others = [policy for policy in policies if policy != BASELINE]
    colours.update({policy: cmap(_ORDER[i % len(_ORDER)]) for i, policy in enumerate(others)})
    return colours


def _save(fig: Figure, out_dir: str, name: str) -> str:
    fig.savefig(os.path.join(out_dir, name), dpi=DPI, metadata=PNG_METADATA)
    return name


def grouped_bars(
    sweep: Sweep,
    ssd: str,
    value: Callable[[Row], float | None],
    *,
    out_dir: str,
    name: str,
    title: str,
    ylabel: str,
    reference: float | None = None,
    percent: bool = False,
) -> str | None:
    """Bars per workload (x) and policy (one colour each); None when no row has a value."""
    labels = trace_labels(sweep.traces)
    policies = sweep.policies
    values = {
        (trace, policy): value(row)
        for trace in sweep.traces
        for policy in policies
        if (row := sweep.row(trace, ssd, policy)) is not None and row.ok
    }
    if not any(v is not None for v in values.values()):
        return None
    colours = policy_colours(policies)
    n_traces, n_policies = len(sweep.traces), len(policies)
    width = 0.8 / n_policies
    fig = Figure(figsize=(max(6.0, 1.0 + n_traces * (0.35 + 0.16 * n_policies)), 4.2), layout="constrained")
    ax = fig.subplots()
    for j, policy in enumerate(policies):
        xs, ys = [], []
        for i, trace in enumerate(sweep.traces):
            v = values.get((trace, policy))
            if v is not None:
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(100.0 * v if percent else v)
        if not xs:  # every run of this policy failed: no bar, no legend entry
            continue
        ax.bar(xs, ys, width=width, color=colours[policy], label=policy, edgecolor="white", linewidth=0.3)
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(n_traces), [labels[t] for t in sweep.traces], rotation=20, ha="right")
    ax.set_xlim(-0.6, n_traces - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(axis="y", linewidth=0.4, alpha=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _save(fig, out_dir, name)


def waf(sweep: Sweep, ssd: str, out_dir: str, name: str) -> str | None:
    """WAF per workload and policy, divided by the baseline's (absolute WAF without a baseline run)."""
    if sweep.has_baseline:
        return grouped_bars(
            sweep,
            ssd,
            lambda row: row.waf_norm,
            out_dir=out_dir,
            name=name,
            title=f"WAF / baseline WAF · ssd {ssd} (below 1 is better)",
            ylabel="WAF normalised to baseline",
            reference=1.0,
        )
    return grouped_bars(
        sweep,
        ssd,
        lambda row: row.number("waf"),
        out_dir=out_dir,
        name=name,
        title=f"WAF · ssd {ssd} (no baseline run to normalise against)",
        ylabel="WAF",
        reference=1.0,
    )


def heatmap(sweep: Sweep, ssd: str, traces: Sequence[str], out_dir: str, name: str, title: str) -> str | None:
    """Workloads (rows) × policies (columns), each cell the policy's WAF / the baseline's WAF on
    that workload (green below 1: better), the best of each row framed; each row label carries the
    baseline WAF, and a workload whose GC copied little is marked. None without a baseline."""
    if not sweep.has_baseline or not traces:
        return None
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    from pcstream import diagnose

    labels = trace_labels(sweep.traces)
    policies = [p for p in sweep.policies if p != BASELINE]
    grid: list[list[float | None]] = []
    row_labels = []
    for trace in traces:
        base = sweep.row(trace, ssd, BASELINE)
        cells = []
        for policy in policies:
            row = sweep.row(trace, ssd, policy)
            cells.append(row.waf_norm if row is not None and row.ok else None)
        grid.append(cells)
        if base is not None and base.ok:
            quiet = " · little GC" if diagnose.little_gc(base.result or {}) else ""
            row_labels.append(f"{labels[trace]} (base {base.number('waf') or 0:.2f}){quiet}")
        else:
            row_labels.append(f"{labels[trace]} (no baseline)")
    values = [v for cells in grid for v in cells if v is not None]
    if not values:
        return None
    spread = max(0.02, max(abs(v - 1.0) for v in values))
    norm = TwoSlopeNorm(vcenter=1.0, vmin=1.0 - spread, vmax=1.0 + spread)
    cmap = colormaps["RdYlGn_r"]
    fig = Figure(figsize=(2.6 + 0.85 * len(policies), 1.0 + 0.34 * len(traces)), layout="constrained")
    ax = fig.subplots()
    masked = [[(v if v is not None else float("nan")) for v in cells] for cells in grid]
    ax.imshow(masked, cmap=cmap, norm=norm, aspect="auto")
    for i, cells in enumerate(grid):
        # The oracle is a bound, not a placement a device can run: the best real policy is framed.
        present = [v for v, p in zip(cells, policies) if v is not None and p != ORACLE]
        best = min(present) if present else None
        for j, v in enumerate(cells):
            text = "—" if v is None else f"{v:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7.5)
            if v is not None and v == best and v < 1.0 and policies[j] != ORACLE:
                ax.add_patch(
                    Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, linewidth=1.8, edgecolor="black")
                )
    ax.set_xticks(range(len(policies)), policies, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(traces)), row_labels, fontsize=8)
    ax.set_title(title, loc="left", fontsize=10)
    return _save(fig, out_dir, name)


def iops(sweep: Sweep, ssd: str, out_dir: str, name: str) -> str | None:
    """IOPS per workload and policy, divided by the baseline's; None without timing."""
    if not sweep.timing:
        return None
    if sweep.has_baseline:
        return grouped_bars(
            sweep,
            ssd,
            lambda row: row.iops_norm,
            out_dir=out_dir,
            name=name,
            title=f"IOPS / baseline IOPS · ssd {ssd} (above 1 is better)",
            ylabel="IOPS normalised to baseline",
            reference=1.0,
        )
    return grouped_bars(
        sweep,
        ssd,
        lambda row: row.number("iops"),
        out_dir=out_dir,
        name=name,
        title=f"IOPS · ssd {ssd} (no baseline run to normalise against)",
        ylabel="IOPS (host requests per simulated second)",
    )


def stream0(sweep: Sweep, ssd: str, out_dir: str, name: str) -> str | None:
    """Share of host pages written to stream 0 (the default stream) per workload and policy."""
    return grouped_bars(
        sweep,
        ssd,
        lambda row: row.number("stream0_share"),
        out_dir=out_dir,
        name=name,
        title=f"Stream-0 share · ssd {ssd}",
        ylabel="host pages in stream 0 (%)",
        percent=True,
    )


def _pages(value: float, _pos: object) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:g}{unit}"
    return f"{value:g}"


def _box_label(box: Box) -> str:
    """The stream number, and under it its share of the host pages when known."""
    return str(box.stream) if box.share is None else f"{box.stream}\n{100.0 * box.share:.0f}%"


def lifetimes(sweep: Sweep, trace: str, ssd: str, out_dir: str, name: str) -> str | None:
    """Per-stream lifetime boxes (quartiles, median line), one panel per policy; None without data."""
    panels = [
        (row, boxes) for row in sweep.ok_rows(trace, ssd) if (boxes := lifetime_boxes(row.result or {}))
    ]
    if not panels:
        return None
    colours = policy_colours(sweep.policies)
    last_stream = max(box.stream for _row, boxes in panels for box in boxes)
    ncols = min(4, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    width, height = 3.2 * ncols + 0.6, 2.6 * nrows + 0.6
    fig = Figure(figsize=(width, height))
    # Fixed margins (in inches): constrained layout costs seconds on a grid of log axes.
    fig.subplots_adjust(
        left=0.75 / width,
        right=1 - 0.15 / width,
        bottom=0.55 / height,
        top=1 - 0.6 / height,
        wspace=0.08,
        hspace=0.45,
    )
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    for k, (row, boxes) in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        stats = [
            {
                "med": max(box.median, 1.0),
                "q1": max(box.q1, 1.0),
                "q3": max(box.q3, 1.0),
                "whislo": max(box.low if box.low is not None else box.q1, 1.0),
                "whishi": max(box.high if box.high is not None else box.q3, 1.0),
                "fliers": [],
                "label": _box_label(box),
            }
            for box in boxes
        ]
        drawn = ax.bxp(
            stats,
            positions=[box.stream for box in boxes],
            showfliers=False,
            patch_artist=True,
            showcaps=any(box.low is not None for box in boxes),
            widths=0.6,
        )
        for patch in drawn["boxes"]:
            patch.set_facecolor(colours[row.policy])
            patch.set_alpha(0.75)
        for median in drawn["medians"]:
            median.set_color("black")
        # Stream s sits at x = s in every panel, so the panels line up.
        ax.set_xlim(-0.6, last_stream + 0.6)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_pages))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_title(row.policy, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", linewidth=0.4, alpha=0.6)
    for k in range(len(panels), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    for r in range(nrows):
        axes[r][0].set_ylabel("lifetime (host pages)", fontsize=8)
    label = trace_labels(sweep.traces)[trace]
    fig.suptitle(
        f"Lifetime per stream (p25–p75, median) · {label} · ssd {ssd}; x: stream, share of pages",
        fontsize=10,
    )
    return _save(fig, out_dir, name)


def latency_cdf(sweep: Sweep, trace: str, ssd: str, out_dir: str, name: str) -> str | None:
    """Latency CDF per policy on one trace and SSD (log latency axis); None without CDF points."""
    curves = []
    for row in sweep.ok_rows(trace, ssd):
        points = [
            (float(p[0]), float(p[1]))
            for p in (row.get("latency_cdf") or [])
            if isinstance(p, (list, tuple)) and len(p) == 2 and p[0] and p[0] > 0
        ]
        if points:
            curves.append((row.policy, points))
    if not curves:
        return None
    colours = policy_colours(sweep.policies)
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = fig.subplots()
    for policy, points in curves:
        xs, ys = zip(*points)
        width = 2.0 if policy == BASELINE else 1.2
        ax.step(xs, ys, where="post", label=policy, color=colours[policy], linewidth=width)
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.01)
    ax.set_xlabel("request latency (us)")
    ax.set_ylabel("share of requests")
    label = trace_labels(sweep.traces)[trace]
    ax.set_title(f"Latency CDF · {label} · ssd {ssd}", loc="left", fontsize=11)
    ax.grid(linewidth=0.4, alpha=0.6)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _save(fig, out_dir, name)
