"""compare --report's "gap to the oracle" section: the share of the gap pcstream closes on a
GC-bound trace and what a table learned on a first run over the same trace recovers."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pcstream import api
from pcstream.options import SimOptions
from support import SSD, invoke
from test_report import parse


def learned(trace: Path) -> float:
    """pcstream-star from the table its first run saved, computed here on its own."""
    with tempfile.TemporaryDirectory() as d:
        sim = SimOptions(ssd=SSD, prefill=0.9, timing=False, table=os.path.join(d, "t.json"))
        api.simulate(str(trace), "pcstream-star", sim)
        assert os.path.exists(sim.table or ""), "the first run saves its table"
        return float(api.simulate(str(trace), "pcstream-star", sim)["waf"])


def gc_bound_mix(tmp_path: Path, small: dict[str, Any]) -> Path:
    """The hotcold-files mix writing the small device's logical space four times over."""
    path = tmp_path / "mix.parquet"
    pages = small["logical_pages"]
    api.gen(
        "mix",
        str(path),
        {"capacity_pages": str(pages), "writes": str(4 * pages), "seed": "1", "mix": "hotcold-files"},
    )
    return path


def test_the_gap_section_splits_the_gap_of_a_gc_bound_trace(small: dict[str, Any], tmp_path: Path) -> None:
    trace = gc_bound_mix(tmp_path, small)
    out = tmp_path / "report"
    run = invoke(
        "compare", trace, "--policies", "baseline,pcstream,oracle", "--ssd", SSD,
        "--no-timing", "--report", out, "--json",
    )  # fmt: skip
    assert run.status == 0, run.stderr
    waf = {r["policy"]: r["waf"] for r in run.json_lines()}
    assert waf["baseline"] >= 1.3, waf  # GC-bound, or the section has nothing to show
    page = parse(out / "index.html")
    assert "gap" in page.ids
    text = page.plain()
    b, p, o = waf["baseline"], waf["pcstream"], waf["oracle"]
    star = learned(trace)
    row = f"{b:.3f} {p:.3f} {o:.3f} {100 * (b - p) / (b - o):.1f} % {star:.3f} "
    row += f"{100 * (p - star) / (b - o):.1f} % {100 * (min(p, star) - o) / (b - o):.1f} %"
    assert row in text, text[text.index("The gap to the oracle") :][:1500]


def test_no_gap_section_without_the_oracle(traces: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    run = invoke(
        "compare", traces["hotcold"], "--policies", "baseline,pcstream", "--ssd", SSD, "--no-timing",
        "--report", out,
    )  # fmt: skip
    assert run.status == 0, run.stderr
    assert "gap" not in parse(out / "index.html").ids
