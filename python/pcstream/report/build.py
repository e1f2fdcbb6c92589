"""Assembles the report: computes the sweep, draws the figures, writes the page and the data."""

from __future__ import annotations

import glob
import os
import platform
from collections.abc import Sequence
from typing import Any

from pcstream import diagnose
from pcstream.compare.jobs import default_jobs
from pcstream.compare.outcome import Outcome
from pcstream.report import drawing, figures, gap, html
from pcstream.report.answer import GC_BOUND
from pcstream.report.data import RunInfo, Sweep, discard_mode, modes, pc_tables, sweep, trace_labels
from pcstream.report.results import JSONL, PARQUET, write_results

INDEX = "index.html"
FIGURES = "figures"


def versions(executor: str) -> list[tuple[str, str]]:
    """Versions of everything that shaped the numbers and the figures."""
    import matplotlib
    import pyarrow

    from pcstream import __version__, api

    rows = [
        ("pcstream", __version__),
        ("engine", _engine_version(api)),
        ("Python", platform.python_version()),
        ("matplotlib", matplotlib.__version__),
        ("pyarrow", pyarrow.__version__),
    ]
    if executor.startswith("ray"):
        try:
            import ray

            rows.append(("ray", ray.__version__))
        except ImportError:
            pass
    return rows


def _engine_version(api: Any) -> str:
    try:
        return str(api.version())
    except ImportError:
        return "not built"


def ssd_line(ssd: str) -> str:
    """One line describing an SSD preset or config file, or why it cannot be described."""
    from pcstream import api
    from pcstream.errors import describe

    try:
        s = api.ssd_summary(ssd)
    except Exception as exc:  # a bad config is one of the sweep's failures; show it, do not stop
        found = describe(exc)
        if found is None:
            raise
        return f"{ssd}: {found[0]}"
    return (
        f"{ssd}: {s['channels']} ch × {s['ways']} ways, {s['blocks_per_die']} blocks/die × "
        f"{s['pages_per_block']} pages, {s['logical_pages']:,} logical pages, OP {s['op']:g}, "
        f"{s['host_streams']} host streams, GC {s['gc_victim']} per {s['gc_unit']}"
    )


class _Names:
    """Unique figure file names (two labels may slug to the same text)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = figures.slug(*parts)
        name, k = f"{base}.png", 2
        while name in self.taken:
            name, k = f"{base}-{k}.png", k + 1
        self.taken.add(name)
        return name


def _figure(name: str | None, caption: str) -> list[str]:
    return [] if name is None else [html.figure(html.Figure(f"{FIGURES}/{name}", caption))]


def write_report(outcomes: Sequence[Outcome], out_dir: str, info: RunInfo, jobs: int | None = None) -> str:
    """Write the report (page, figures, data files) into ``out_dir``; returns the page's path.
    The per-trace figures are drawn on up to ``jobs`` processes (None: one per core)."""
    data: Sweep = sweep(outcomes)
    fig_dir = os.path.join(out_dir, FIGURES)
    os.makedirs(fig_dir, exist_ok=True)
    # Figures of an earlier report in the same directory would linger unreferenced.
    for stale in glob.glob(os.path.join(fig_dir, "*.png")):
        os.remove(stale)
    write_results(data, outcomes, out_dir)

    labels = trace_labels(data.traces)
    names = _Names()
    ok = sum(1 for row in data.rows if row.ok)
    prefills = {o.job.trace: o.job.options.prefill for o in outcomes}
    sections = [answer_section(data, fig_dir, names)]
    why = gap_section(outcomes, labels)
    if why is not None:
        sections.append(why)
    sections.append(parameters_section(data, info, labels, prefills))
    if data.failures():
        failed = html.Section("failures", f"Failures ({len(data.failures())})")
        failed.body.append(html.failures_list(data.failures(), labels))
        sections.append(failed)
    sections.append(results_section(data))
    # The figures are named in page order (names() makes them unique in the order it is asked).
    sections += ssd_sections(data, fig_dir, names)
    sections += trace_sections(data, labels, fig_dir, names, jobs or default_jobs())
    sections.append(pc_streams_section(data, labels))

    lead = (
        f"{len(data.traces)} workload(s) × {len(data.ssds)} SSD config(s) × {len(data.policies)} "
        f"policies: {ok} of {len(data.rows)} runs succeeded."
    )
    text = html.page("pcstream compare report", lead, sections)
    index = os.path.join(out_dir, INDEX)
    with open(index, "w", encoding="utf-8") as handle:
        handle.write(text)
    return index


def results_section(data: Sweep) -> html.Section:
    """The table of every run, with what its columns mean and links to the data files."""
    table = html.Section("results", "Results")
    if data.has_baseline:
        explained = (
            '"/ base" divides by the baseline policy on the same trace and SSD (WAF: below 1 is '
            "better; IOPS: above 1 is better). Bold: the lowest WAF / base of a workload."
        )
    else:
        explained = "No baseline run: nothing is normalised."
    table.body.append(
        f'<p class="note">WAF = (host + GC-copied pages) / host pages. {html.esc(explained)}</p>'
    )
    table.body.append(html.results_table(data))
    table.body.append(
        f'<p class="note">Data: <a href="{JSONL}">{JSONL}</a> (one JSON object per run, as '
        f'<code>compare --json</code> prints it) and <a href="{PARQUET}">{PARQUET}</a> '
        "(one row per run).</p>"
    )
    return table


def ssd_sections(data: Sweep, fig_dir: str, names: _Names) -> list[html.Section]:
    """The figures drawn per SSD: WAF, IOPS (or why there is none) and the stream-0 share."""
    waf = html.Section("waf", "WAF")
    iops = html.Section("iops", "IOPS")
    stream0 = html.Section("stream0", "Stream-0 share")
    for ssd in data.ssds:
        waf.body += _figure(
            figures.waf(data, ssd, fig_dir, names("waf", ssd)),
            f"WAF per workload and policy, ssd {ssd}"
            + (", normalised to the baseline" if data.has_baseline else ""),
        )
        iops.body += _figure(
            figures.iops(data, ssd, fig_dir, names("iops", ssd)),
            f"IOPS per workload and policy, ssd {ssd}"
            + (", normalised to the baseline" if data.has_baseline else ""),
        )
        stream0.body += _figure(
            figures.stream0(data, ssd, fig_dir, names("stream0", ssd)),
            f"Share of host pages written to stream 0 (the default stream), ssd {ssd}",
        )
    sections = [waf]
    if iops.body:
        sections.append(iops)
    elif not data.timing:
        iops.body.append('<p class="note">Run without timing (--no-timing): no IOPS.</p>')
        sections.append(iops)
    sections.append(stream0)
    return sections


def trace_sections(
    data: Sweep, labels: dict[str, str], fig_dir: str, names: _Names, jobs: int
) -> list[html.Section]:
    """The figures drawn per trace and SSD (on up to ``jobs`` processes): per-stream lifetimes
    and latency CDFs."""
    life = html.Section("lifetimes", "Lifetimes per stream")
    life.body.append(
        '<p class="note">Lifetime of a page = host pages written between its write and its '
        "invalidation (overwrite or trim). Boxes span p25–p75 with the median line; under each "
        "box: the stream and its share of the host pages. Log scale.</p>"
    )
    cdf = html.Section("latency", "Latency CDFs")
    tasks, captions = [], []
    for trace in data.traces:
        for ssd in data.ssds:
            label = labels[trace]
            tasks.append(drawing.Task("lifetimes", trace, ssd, names("lifetimes", label, ssd)))
            captions.append(f"Per-stream lifetimes on {label}, ssd {ssd}")
            tasks.append(drawing.Task("latency", trace, ssd, names("latency", label, ssd)))
            captions.append(f"Request latency CDF on {label}, ssd {ssd}")
    for task, drawn, caption in zip(tasks, drawing.draw(data, tasks, fig_dir, jobs), captions):
        (life if task.kind == "lifetimes" else cdf).body += _figure(drawn, caption)
    if not cdf.body:
        cdf.body.append('<p class="note">No latency CDFs: the runs modelled no timing.</p>')
    return [life, cdf]


def pc_streams_section(data: Sweep, labels: dict[str, str]) -> html.Section:
    """The PC table of each PCStream run: which program contexts ended in which stream."""
    pcs = html.Section("pc-streams", "PC streams")
    tables = pc_tables(data)
    if tables:
        pcs.body.append(
            '<p class="note">For each PCStream run: the PCs (program-context signatures) of its '
            "learned table and the stream each ended in, with the call path from the trace's "
            "<code>pcstream.pcs</code> footer (outermost frame first; a frame without a symbol is "
            "shown as module+offset). A stream is named by its PC with the most samples: the frames "
            "that tell that PC from the trace's other PCs (with the outermost named frame that not "
            "every PC has, for context) and the files it writes most (directory and extension, "
            "with shares of its pages). Mean lifetime = mean of the PC's lifetime samples.</p>"
        )
        pcs.body += [html.pc_table(t, labels) for t in tables]
    else:
        pcs.body.append('<p class="note">No run of pcstream or pcstream-star succeeded: no PC table.</p>')
    return pcs


def answer_section(data: Sweep, fig_dir: str, names: _Names) -> html.Section:
    """The answer first: per SSD and discard mode, which policy gives the lowest WAF on each
    workload, relative to the baseline; and a warning where GC had little to do."""
    answer = html.Section("answer", "Which placement wins")
    answer.body.append(
        "<p class=\"note\">Each cell: the policy's WAF divided by the baseline's on that workload "
        "(below 1 is better; green saves writes, red costs them); the best policy of each workload is "
        "framed (the oracle, which knows the future, is the bound they are measured against). Row "
        "labels give the baseline's own WAF: near 1 means GC had little to do there, and no placement "
        "can save much.</p>"
    )
    for ssd in data.ssds:
        for mode in modes(data.traces):
            traces = [t for t in data.traces if discard_mode(t) == mode]
            answer.body += _figure(
                figures.heatmap(
                    data,
                    ssd,
                    traces,
                    fig_dir,
                    names("answer", ssd, mode),
                    f"WAF / baseline · ssd {ssd} · {mode}",
                ),
                f"WAF relative to the baseline, workloads mapped with {mode}, ssd {ssd}",
            )
    note = diagnose.little_gc_note([row.result for row in data.rows if row.result is not None])
    if note:
        answer.body.append(f'<p class="warning">Warning: {html.esc(note)}.</p>')
    why = diagnose.policy_notes([row.result for row in data.rows if row.result is not None])
    if why:
        items = "".join(f"<li>{html.esc(line)}.</li>" for line in why)
        answer.body.append(
            f'<p class="note">Why some policies ran as the baseline or lost to it:</p><ul>{items}</ul>'
        )
    if len(answer.body) == 1:
        answer.body.append('<p class="note">No baseline run: nothing to compare against.</p>')
    return answer


def gap_section(outcomes: Sequence[Outcome], labels: dict[str, str]) -> html.Section | None:
    """Why pcstream stands where it does on the GC-bound workloads (``report.gap``); None when no
    trace has the baseline, pcstream and the oracle with GC busy and a gap between them. Runs
    ``pcstream-star`` twice more per such trace (the learned table)."""
    rows = gap.gaps(outcomes)
    if not rows:
        return None
    section = html.Section("gap", "The gap to the oracle")
    section.body.append(
        '<p class="note">On each workload where GC is busy (baseline WAF ≥ '
        f"{GC_BOUND:g}): the share of the gap between the baseline and the oracle that "
        f"<code>pcstream</code> closes, (baseline − pcstream) / (baseline − oracle); "
        f"<code>{gap.LEARNER}</code> started from the PC→stream table its own first run over the "
        "same trace saved (a table learned in advance, not a bound) and the share of the gap it "
        "recovers, (pcstream − learned) / gap; and what is left after the better of the two, "
        "which neither knowing the PCs' lifetimes in advance nor the host streams give: the "
        "placement of GC copies and the lifetimes a PC does not tell.</p>"
    )
    section.body.append(html.gap_table(rows, labels))
    return section


def prefill_text(prefills: dict[str, float], labels: dict[str, str]) -> str:
    """What the SSD held before each trace: the prefill the jobs really ran with, per group of
    traces (a trace mapped with an aged file system starts from that state instead, prefill 0)."""
    groups: dict[float, list[str]] = {}
    for trace, prefill in prefills.items():
        groups.setdefault(prefill, []).append(labels.get(trace, trace))
    parts = []
    for prefill, names in sorted(groups.items(), reverse=True):
        which = "every trace" if len(groups) == 1 else ", ".join(names)
        if prefill > 0:
            parts.append(f"{prefill:g} of the logical pages, written once before the trace: {which}")
        else:
            parts.append(f"none (the trace starts from its own aged state, or from an empty SSD): {which}")
    return "; ".join(parts)


def parameters_section(
    data: Sweep, info: RunInfo, labels: dict[str, str], prefills: dict[str, float] | None = None
) -> html.Section:
    section = html.Section("parameters", "Parameters")
    traces = "<br>".join(f"{html.esc(labels[t])}: <code>{html.esc(t)}</code>" for t in data.traces)
    rows = [
        *([("command", f"<code>{html.esc(info.command)}</code>")] if info.command else []),
        ("workloads", traces),
        ("policies", html.esc(", ".join(info.policies))),
        ("SSD configs", "<br>".join(html.esc(ssd_line(ssd)) for ssd in info.ssds)),
        (
            "prefill",
            html.esc(
                prefill_text(prefills, labels)
                if prefills
                else f"{info.prefill:g} of the logical pages, written once before each trace"
            ),
        ),
        ("warmup", html.esc(f"{info.warmup:,} host pages excluded from every figure")),
        ("seed", html.esc(info.seed)),
        ("timing", "yes (IOPS, latency)" if info.timing else "no (--no-timing)"),
        ("executor", html.esc(info.executor)),
    ]
    section.body.append(html.key_values(rows))
    section.body.append("<h3>Versions</h3>")
    section.body.append(html.key_values([(k, html.esc(v)) for k, v in versions(info.executor)]))
    return section
