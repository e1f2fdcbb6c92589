"""compare --report: the page, its figures and tables, the data behind them; the page opens in a
real browser (headless Chromium) without broken images or console messages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.report import data, figures
from support import SSD, WRITES, invoke

POLICIES = ("baseline", "hotcold", "pcstream", "pcstream-star")
PNG = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """The links, image sources and visible text of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        for key in ("src", "href"):
            if values.get(key):
                self.refs.append(str(values[key]))
        if tag == "img":
            self.images.append(str(values.get("src")))

    def handle_data(self, text: str) -> None:
        self.text.append(text)

    def plain(self) -> str:
        return " ".join(" ".join(self.text).split())


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def mix_trace(tmp_path_factory: pytest.TempPathFactory, small: dict[str, Any]) -> Path:
    """A rocksdb-like mix: four writer PCs named in the trace's pcstream.pcs footer."""
    path = tmp_path_factory.mktemp("mix") / "mix.parquet"
    params = {"capacity_pages": str(small["logical_pages"]), "writes": str(WRITES), "seed": "1"}
    api.gen("mix", str(path), {**params, "mix": "rocksdb-like"})
    return path


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, traces: dict[str, Path], mix_trace: Path
) -> tuple[Path, list[dict[str, Any]], str]:
    """One sweep (2 traces × 5 policies, one of them unknown) with --report: (dir, JSON lines, stderr)."""
    out = tmp_path_factory.mktemp("report") / "report"
    run = invoke(
        "compare",
        traces["zipf"],
        mix_trace,
        "--policies",
        ",".join((*POLICIES, "nosuchpolicy")),
        "--ssd",
        SSD,
        "--jobs",
        "2",
        "--report",
        out,
        "--json",
    )
    assert run.status == 1, run.stderr
    return out, run.json_lines(), run.stderr


def test_report_files_exist_and_the_page_references_only_them(report: tuple[Path, list, str]) -> None:
    out, _lines, stderr = report
    index = out / "index.html"
    assert f"report: {index}" in stderr
    expected = (
        {f"{kind}-small.png" for kind in ("waf", "iops", "stream0")}
        | {f"{kind}-{trace}-small.png" for kind in ("lifetimes", "latency") for trace in ("zipf", "mix")}
        | {"answer-small-discard.png"}
    )
    drawn = {path.name for path in (out / "figures").iterdir()}
    assert drawn == expected
    for name in drawn:
        content = (out / "figures" / name).read_bytes()
        assert content.startswith(PNG) and len(content) > 5_000, name

    page = parse(index)
    assert sorted(page.images) == sorted(f"figures/{name}" for name in expected)
    for ref in page.refs:
        if ref.startswith("#"):
            assert ref[1:] in page.ids, ref
        elif not ref.startswith("data:"):
            assert "://" not in ref and not ref.startswith("/"), f"not a relative path: {ref}"
            assert (out / ref).is_file(), f"the page references a missing file: {ref}"
    assert {"results.jsonl", "results.parquet"} <= set(page.refs)


def test_report_states_parameters_versions_and_failures(report: tuple[Path, list, str]) -> None:
    out, _lines, _stderr = report
    text = parse(out / "index.html").plain()
    import matplotlib

    for needle in (
        "prefill 0.9 of the logical pages, written once before the trace: every trace",
        f"matplotlib {matplotlib.__version__}",
        f"engine {api.version()}",
        "small: 2 ch × 2 ways",
        "local, 2 worker process(es)",
        "2 workload(s) × 1 SSD config(s) × 5 policies: 8 of 10 runs succeeded",
        "Failures (2)",
        "unknown policy 'nosuchpolicy'",
    ):
        assert needle in text, needle
    assert re.search(r"command pcstream compare \S*zipf\.parquet \S*mix\.parquet --policies", text)


def test_report_results_table_normalises_to_the_baseline(report: tuple[Path, list, str]) -> None:
    out, lines, _stderr = report
    rows = pq.read_table(out / "results.parquet").to_pylist()
    written = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert written == lines
    by_key = {(Path(r["trace"]).stem, r["policy"]): r for r in rows}
    base = by_key[("mix", "baseline")]
    hot = by_key[("mix", "hotcold")]
    assert hot["waf_norm"] == pytest.approx(hot["waf"] / base["waf"])
    text = parse(out / "index.html").plain()
    assert f"{hot['waf']:.3f} {hot['waf_norm']:.3f}" in text
    # The report runs ask for the latency CDF: it is in the JSON and the Parquet table.
    assert all(len(line["latency_cdf"]) == 100 for line in lines if "waf" in line)
    assert len(base["latency_cdf"]) == 100 and base["latency_cdf"][-1]["share"] == pytest.approx(1.0)


def test_report_names_the_call_paths_of_the_pc_streams(
    report: tuple[Path, list, str], mix_trace: Path
) -> None:
    out, lines, _stderr = report
    frames, problem = data.read_pc_frames(str(mix_trace))
    assert problem is None and len(frames) == 4
    text = parse(out / "index.html").plain()
    pc_lines = [
        line
        for line in lines
        if line.get("policy") in ("pcstream", "pcstream-star") and Path(line["trace"]).stem == "mix"
    ]
    assert len(pc_lines) == 2, "both PC policies ran on the mix trace"
    for line in pc_lines:
        table = json.loads(line["saved_table"])
        assert table["pcs"], "the policy learned no PC"
        by_stream: dict[int, list[dict]] = {}
        for pc in table["pcs"]:
            assert pc["sig"] in text
            by_stream.setdefault(pc["stream"], []).append(pc)
        # Each stream is named after the PC with the most lifetime samples in it (PCs whose
        # lifetimes do not separate share a stream).
        for stream, pcs in by_stream.items():
            top = min(pcs, key=lambda pc: (-pc["n"], pc["sig"]))
            assert f"stream {stream} = {frames[top['sig']][0]['symbol']}" in text
            if len(pcs) > 1:
                assert f"(+{len(pcs) - 1} more PCs)" in text
    assert "pcstream · mix · ssd small" in text and "pcstream-star · mix · ssd small" in text


# --------------------------------------------------------------------------- the pieces


def test_frames_read_innermost_first_are_shown_outermost_first(tmp_path: Path) -> None:
    frames = [
        {
            "module": "/usr/lib/librocksdb.so.8",
            "offset": 4660,
            "symbol": "rocksdb::WritableFileWriter::Append",
        },
        {"module": "/usr/lib/librocksdb.so.8", "offset": 8000},
        {"module": "/usr/lib/librocksdb.so.8", "offset": 9000, "symbol": "rocksdb::BuildTable"},
    ]
    path = data.call_path(frames)
    assert path == ["rocksdb::BuildTable", "librocksdb.so.8+0x1f40", "rocksdb::WritableFileWriter::Append"]
    long = [f"f{i}" for i in range(8)]
    assert data.short_path(long) == "f0 → f1 → … → f6 → f7"
    assert data.short_path(path) == " → ".join(path)

    trace = tmp_path / "t.parquet"
    table = pa.table({"lpn": pa.array([0], pa.uint64())})
    pq.write_table(table.replace_schema_metadata({tracemeta.KEY_PCS: json.dumps({"7": frames})}), trace)
    assert data.read_pc_frames(str(trace)) == ({"7": frames}, None)
    pq.write_table(table.replace_schema_metadata({tracemeta.KEY_PCS: "{not json"}), trace)
    found, problem = data.read_pc_frames(str(trace))
    assert found == {} and problem is not None and "not JSON" in problem
    pq.write_table(table, trace)
    assert data.read_pc_frames(str(trace)) == ({}, None)
    assert "cannot read" in (data.read_pc_frames(str(tmp_path / "none.parquet"))[1] or "")


def test_lifetime_boxes_take_quartiles_and_whiskers_when_given(tmp_path: Path) -> None:
    result = {
        "per_stream": [
            {
                "stream": 0,
                "pages": 10,
                "share": 0.1,
                "lifetime_samples": 0,
                "lifetime_p25": 0,
                "p50": 0,
                "p75": 0,
            },
            {
                "stream": 1,
                "pages": 60,
                "share": 0.6,
                "lifetime_samples": 9,
                "lifetime_p25": 5,
                "p50": 9,
                "p75": 20,
            },
            {
                "stream": 2,
                "pages": 30,
                "share": 0.3,
                "lifetime_samples": 9,
                "lifetime_p25": 50,
                "p50": 90,
                "p75": 200,
                "p5": 10,
                "p95": 900,
            },
        ]
    }
    boxes = data.lifetime_boxes(result)
    assert [(b.stream, b.q1, b.median, b.q3, b.low, b.high) for b in boxes] == [
        (1, 5.0, 9.0, 20.0, None, None),
        (2, 50.0, 90.0, 200.0, 10.0, 900.0),
    ]
    sweep = data.Sweep(
        [data.Row("t.parquet", "small", "p", result, None, 0)], ["t.parquet"], ["small"], ["p"]
    )
    assert figures.lifetimes(sweep, "t.parquet", "small", str(tmp_path), "l.png") == "l.png"
    assert (tmp_path / "l.png").read_bytes().startswith(PNG)
    empty = data.Sweep([data.Row("t.parquet", "small", "p", {}, None, 0)], ["t.parquet"], ["small"], ["p"])
    assert figures.lifetimes(empty, "t.parquet", "small", str(tmp_path), "e.png") is None
    assert figures.latency_cdf(empty, "t.parquet", "small", str(tmp_path), "c.png") is None


def test_trace_labels_fall_back_to_the_path_when_names_collide() -> None:
    labels = data.trace_labels(["a/x.parquet", "b/x.parquet", "c/y.parquet"])
    assert labels == {"a/x.parquet": "a/x.parquet", "b/x.parquet": "b/x.parquet", "c/y.parquet": "y"}
    assert figures.slug("lifetimes", "a/x.parquet", "small") == "lifetimes-a-x.parquet-small"


# --------------------------------------------------------------------------- in a real browser

# Copied into a second page beside index.html: every image that fails to load, and every load
# error, becomes a console message and an attribute of <body> that --dump-dom shows.
CHECK_SCRIPT = """<script>
window.addEventListener("error", (e) => {
  const what = (e.target && e.target.src) || String(e.message);
  console.error("load error: " + what);
}, true);
window.addEventListener("load", () => {
  const broken = Array.from(document.images)
    .filter((img) => !img.complete || img.naturalWidth === 0)
    .map((img) => img.getAttribute("src"));
  for (const src of broken) console.error("broken image: " + src);
  document.body.setAttribute("data-images", String(document.images.length));
  document.body.setAttribute("data-broken", JSON.stringify(broken));
});
</script>
</body>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "no Chromium binary (chromium, chromium-browser or google-chrome); 'make browser' installs it"
    )


def headless(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # --no-sandbox: Chromium refuses to run as root with its sandbox (CI machines run as root).
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_report_opens_in_headless_chromium(report: tuple[Path, list, str], tmp_path: Path) -> None:
    browser = chromium()
    out = report[0]
    index = out / "index.html"

    shot = tmp_path / "page.png"
    run = headless(
        browser, tmp_path / "profile", "--window-size=1280,2400", f"--screenshot={shot}", index.as_uri()
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_lines(run.stderr) == []
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1280, 2400)
        # Not a blank page: the table and figures put many distinct colours on it.
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50

    check = out / "check.html"
    check.write_text(index.read_text(encoding="utf-8").replace("</body>", CHECK_SCRIPT))
    try:
        run = headless(browser, tmp_path / "profile", "--dump-dom", check.as_uri())
    finally:
        check.unlink()
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_lines(run.stderr) == []
    body = re.search(r"<body([^>]*)>", run.stdout)
    assert body is not None, run.stdout[:500]
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', body.group(1)))
    assert attrs.get("broken") == "[]", attrs
    assert int(attrs["images"]) == len(list((out / "figures").iterdir())) == 8


def test_the_browser_check_catches_a_missing_image(report: tuple[Path, list, str], tmp_path: Path) -> None:
    """The check above can fail: a page with a missing figure yields a console error."""
    browser = chromium()
    out = report[0]
    page = out / "broken.html"
    page.write_text('<html><body><img src="figures/none.png"></body></html>'.replace("</body>", CHECK_SCRIPT))
    try:
        run = headless(browser, tmp_path / "profile", "--dump-dom", page.as_uri())
    finally:
        page.unlink()
    assert any("figures/none.png" in line for line in console_lines(run.stderr)), run.stderr[-2000:]


def test_the_page_opens_with_the_answer(report: tuple[Path, list, str]) -> None:
    """The first section is the workload × policy heatmap of WAF / baseline per discard mode."""
    out, _lines, _stderr = report
    text = (out / "index.html").read_text()
    first = text.index('<section id="answer">')
    assert first < text.index('<section id="parameters">') < text.index('<section id="results">')
    assert "figures/answer-small-discard.png" in text[first : text.index("</section>", first)]


def test_discard_modes_come_from_the_suites_names() -> None:
    from pcstream.report.data import discard_mode, modes

    assert discard_mode("traces/rocksdb-ur.parquet") == "discard"
    assert discard_mode("traces/rocksdb-ur.nodiscard.parquet") == "nodiscard"
    assert modes(["a.parquet", "b.nodiscard.parquet"]) == ["nodiscard", "discard"]


def test_the_prefill_shown_is_the_one_each_trace_ran_with() -> None:
    """Aged traces run with prefill 0 (their own aged state) beside others prefilled: the page
    says which is which, not one prefill for all."""
    from pcstream.report.build import prefill_text

    labels = {"t/a.parquet": "a", "t/b.parquet": "b", "t/c.parquet": "c"}
    text = prefill_text({"t/a.parquet": 0.0, "t/b.parquet": 0.9, "t/c.parquet": 0.0}, labels)
    assert text == (
        "0.9 of the logical pages, written once before the trace: b; "
        "none (the trace starts from its own aged state, or from an empty SSD): a, c"
    )
    assert prefill_text({"t/a.parquet": 0.0}, labels).endswith("empty SSD): every trace")


def test_policies_that_ran_as_baseline_or_lost_say_why() -> None:
    from pcstream import diagnose

    def run(policy: str, waf: float, stream0: float = 1.0, open_points: int = 1) -> dict:
        return {
            "trace": "t/x.parquet",
            "ssd": "paper",
            "policy": policy,
            "waf": waf,
            "stream0_share": stream0,
            "open_write_points": open_points,
            "write_points": 8,
            "logical_pages": 900,
            "physical_pages": 1000,
        }

    notes = diagnose.policy_notes(
        [
            run("baseline", 2.0),
            run("manual", 2.0),  # no hints: all in stream 0
            run("autostream", 2.001, stream0=0.4, open_points=4),  # equal by chance: no note
            run("per-pc", 4.2, stream0=0.1, open_points=23),
            run("pcstream", 1.5, stream0=0.2, open_points=6),
        ]
    )
    assert notes == [
        "manual on x.parquet equals baseline: the trace holds no write-lifetime hint, so every page "
        "stayed in stream 0",
        "per-pc on x.parquet is 2.10x baseline's WAF: it kept 23 write points open, more than the "
        "device's 8 host streams, each holding a partly written block out of 100 spare pages (10.0% "
        "of the device), so GC runs with less free space and copies more",
    ]
    assert diagnose.policy_notes([run("manual", 2.0)]) == [], "no baseline: nothing to compare with"
