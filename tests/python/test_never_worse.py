"""pcstream and pcstream-star against one stream on every bundled trace, both discard modes:
streams cost open units, so the PC policies must not lose to baseline by more than 2 %
(docs/POLICIES.md, "Streams cost space"), and pcstream's substreams must not cost more than
0.5 % over pcstream-star (a slot only for streams GC copies enough out of; "Which streams get a
substream")."""

from __future__ import annotations

import pytest

from pcstream import api
from pcstream.options import SimOptions
from support import ROOT

BOUND = 1.02
SUBSTREAM_BOUND = 1.005
# Known to break the bound: on Cassandra without discard the PC policies place the load phase's
# long-lived pages with the updates' shorter-lived ones and lose to one stream (1.450 against
# baseline 1.416, +2.4 %; docs/RESULTS.md). Strict: the mark fails once they no longer lose.
LOSES = {"cassandra.nodiscard": "pcstream 1.450 > 1.02 × baseline 1.416 (docs/RESULTS.md)"}
TRACES = [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=LOSES[t.stem])) if t.stem in LOSES else t
    for t in sorted((ROOT / "traces").glob("*.parquet"))
]


@pytest.mark.skipif(not TRACES, reason="no bundled traces in traces/")
@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.removesuffix(".parquet"))
def test_pc_policies_do_not_lose_to_baseline(trace) -> None:
    def waf(policy: str) -> float:
        return api.simulate(str(trace), policy, SimOptions(ssd="paper", timing=False))["waf"]

    base = waf("baseline")
    wafs = {policy: waf(policy) for policy in ("pcstream-star", "pcstream")}
    for policy, w in wafs.items():
        assert w <= BOUND * base, f"{trace.name}: {policy} {w:.3f} > {BOUND} × baseline {base:.3f}"
    star, full = wafs["pcstream-star"], wafs["pcstream"]
    assert full <= SUBSTREAM_BOUND * star, (
        f"{trace.name}: pcstream {full:.3f} > {SUBSTREAM_BOUND} × pcstream-star {star:.3f}"
    )
