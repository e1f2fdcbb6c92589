"""The report page: ``index.html`` from the sweep, the figure files and the run's parameters.

The page is static: no script, no network; figures are PNG files next to it (``figures/``),
referenced by relative paths, so the directory can be copied or served as it is.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from pcstream.report.data import BASELINE, PcEntry, PcTable, Row, Sweep, short_path, trace_labels
from pcstream.report.gap import LEARNER, Gap


@dataclass
class Figure:
    """A drawn figure: its path relative to the page and a caption."""

    src: str
    caption: str


@dataclass
class Section:
    """A titled part of the page; ``anchor`` is its id for the navigation line."""

    anchor: str
    title: str
    body: list[str] = field(default_factory=list)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def share(value: float | None) -> str:
    return "—" if value is None else f"{100.0 * value:.1f} %"


def key_values(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table; values are HTML already (escape them before)."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def figure(fig: Figure) -> str:
    return (
        f'<figure><img src="{esc(fig.src)}" alt="{esc(fig.caption)}">'
        f"<figcaption>{esc(fig.caption)}</figcaption></figure>"
    )


def results_table(sweep: Sweep) -> str:
    """Every job: WAF (and / baseline), IOPS (and / baseline), p99 latency, stream-0 share, GC work."""
    labels = trace_labels(sweep.traces)
    several_ssds = len(sweep.ssds) > 1
    norm = sweep.has_baseline
    timing = sweep.timing
    head = ["trace", *(["ssd"] if several_ssds else []), "policy", "WAF"]
    head += ["WAF / base"] if norm else []
    if timing:
        head += ["IOPS", *(["IOPS / base"] if norm else []), "p99 (us)"]
    notes = bool(sweep.failures())
    head += ["stream 0", "GC pages", "erases", "policy state", *(["note"] if notes else [])]
    # The best (lowest) normalised WAF of each (trace, ssd), other than the baseline's own 1.0.
    best: dict[tuple[str, str], float] = {}
    for row in sweep.rows:
        if row.waf_norm is not None and row.policy != BASELINE:
            key = (row.trace, row.ssd)
            best[key] = min(best.get(key, row.waf_norm), row.waf_norm)
    lines = ["<table>", "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    previous: tuple[str, str] | None = None
    for row in sweep.rows:
        group = (row.trace, row.ssd)
        first = group != previous
        previous = group
        cells = [esc(labels[row.trace]) if first else "", *([esc(row.ssd)] if several_ssds else [])]
        cells.append(esc(row.policy))
        cells_html = [f"<td>{c}</td>" for c in cells]
        if row.ok:
            cells_html.append(f'<td class="num">{num(row.number("waf"))}</td>')
            if norm:
                is_best = row.waf_norm is not None and best.get(group) == row.waf_norm
                cls = "num best" if is_best else "num"
                cells_html.append(f'<td class="{cls}">{num(row.waf_norm)}</td>')
            if timing:
                cells_html.append(f'<td class="num">{num(row.number("iops"), 0)}</td>')
                if norm:
                    cells_html.append(f'<td class="num">{num(row.iops_norm)}</td>')
                cells_html.append(f'<td class="num">{num(row.number("lat_p99_us"), 1)}</td>')
            cells_html += [
                f'<td class="num">{share(row.number("stream0_share"))}</td>',
                f'<td class="num">{num(_int(row.get("gc_pages")))}</td>',
                f'<td class="num">{num(_int(row.get("erases")))}</td>',
                f'<td class="num">{num(_int(row.get("policy_state_bytes")))} B</td>',
                *(["<td></td>"] if notes else []),
            ]
        else:
            blanks = len(head) - len(cells) - 1
            cells_html += ['<td class="num">—</td>'] * blanks
            cells_html.append(
                f'<td class="fail" title="{esc(row.error)}">failed (exit {row.status}), '
                '<a href="#failures">see Failures</a></td>'
            )
        cls = ' class="first"' if first and row is not sweep.rows[0] else ""
        lines.append(f"<tr{cls}>" + "".join(cells_html) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pc_table(table: PcTable, labels: dict[str, str]) -> str:
    """Which PCs ended in which stream, with their call paths (outermost frame first)."""
    title = f"{table.policy} · {labels.get(table.trace, table.trace)} · ssd {table.ssd}"
    parts = [f"<h3>{esc(title)}</h3>"]
    if table.note:
        parts.append(f'<p class="note">{esc(table.note)}</p>')
    groups = table.streams()
    if not groups:
        parts.append('<p class="note">The policy ended with an empty PC table.</p>')
        return "\n".join(parts)
    summary = []
    for stream, entries in groups:
        top = entries[0]
        if top.label is not None:
            path = top.label.text
        else:
            path = short_path(top.path) if top.path else f"PC {top.sig} (no frames in the trace)"
        more = f" (+{len(entries) - 1} more PCs)" if len(entries) > 1 else ""
        summary.append(f"<li>stream {stream} = <span class='path'>{esc(path)}</span>{esc(more)}</li>")
    parts.append("<ul>" + "".join(summary) + "</ul>")
    rows = [
        "<table>",
        "<tr><th>stream</th><th>PC signature</th><th>lifetime samples</th>"
        "<th>mean lifetime (host pages)</th><th>what tells it apart</th><th>writes</th>"
        "<th>call path (outermost first)</th></tr>",
    ]
    for stream, entries in groups:
        for k, entry in enumerate(entries):
            stream_cell = f'<td rowspan="{len(entries)}">{stream}</td>' if k == 0 else ""
            tr = '<tr class="first">' if k == 0 else "<tr>"
            rows.append(
                f"{tr}{stream_cell}"
                f"<td><code>{esc(entry.sig)}</code></td>"
                f'<td class="num">{num(entry.samples)}</td>'
                f'<td class="num">{num(entry.mean_lifetime, 0)}</td>'
                f"<td>{label_cell(entry)}</td>"
                f"<td>{esc(entry.label.files) if entry.label and entry.label.files else '—'}</td>"
                f"<td>{call_path_cell(entry.path)}</td></tr>"
            )
    rows.append("</table>")
    parts.append("\n".join(rows))
    return "\n".join(parts)


def label_cell(entry: PcEntry) -> str:
    if entry.label is None:
        return '<span class="note">—</span>'
    return f'<span class="path">{esc(entry.label.frames)}</span>'


def call_path_cell(path: Sequence[str]) -> str:
    if not path:
        return '<span class="note">—</span>'
    short = short_path(path)
    full = " → ".join(path)
    if short == full:
        return f'<span class="path">{esc(full)}</span>'
    frames = "".join(f"<li>{esc(name)}</li>" for name in path)
    return f'<details><summary class="path">{esc(short)}</summary><ol class="path">{frames}</ol></details>'


def page(title: str, lead: str, sections: Sequence[Section]) -> str:
    template = Template(resources.files("pcstream.report").joinpath("template.html").read_text("utf-8"))
    nav = " ".join(f'<a href="#{esc(s.anchor)}">{esc(s.title)}</a>' for s in sections)
    body = "\n".join(
        f'<section id="{esc(s.anchor)}">\n<h2>{esc(s.title)}</h2>\n' + "\n".join(s.body) + "\n</section>"
        for s in sections
    )
    return template.substitute(title=esc(title), lead=esc(lead), nav=nav, body=body)


def failures_list(rows: Sequence[Row], labels: dict[str, str]) -> str:
    items = "".join(
        f"<li>{esc(labels.get(r.trace, r.trace))} · {esc(r.ssd)} · {esc(r.policy)}: "
        f"exit {r.status}, {esc(r.error)}</li>"
        for r in rows
    )
    return f'<ul class="failures">{items}</ul>'


def gap_table(rows: Sequence[tuple[str, str, Gap]], labels: dict[str, str]) -> str:
    """Per GC-bound trace and SSD: the WAFs, the share of the gap to the oracle ``pcstream``
    closes, and what a learned table recovers of the rest (``report.gap``)."""
    head = ["trace", "ssd", "baseline", "pcstream", "oracle", "gap closed by pcstream"]
    head += [f"{LEARNER} from a learned table", "recovers", "left to GC copies and what PCs do not tell"]
    lines = ["<table>", "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for trace, ssd, g in rows:
        cells = [esc(labels.get(trace, trace)), esc(ssd), num(g.base), num(g.ours), num(g.oracle)]
        cells += [share(g.closed), num(g.learned), share(g.recovered), share(g.left)]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)
