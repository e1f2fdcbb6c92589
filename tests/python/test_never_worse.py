"""pcstream and pcstream-star against one stream on every bundled trace, both discard modes:
streams cost open units, so the PC policies must not lose to baseline by more than 2 %
(docs/POLICIES.md, "Streams cost space")."""

from __future__ import annotations

import pytest

from pcstream import api
from support import ROOT

TRACES = sorted((ROOT / "traces").glob("*.parquet"))
BOUND = 1.02


@pytest.mark.skipif(not TRACES, reason="no bundled traces in traces/")
@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.removesuffix(".parquet"))
def test_pc_policies_do_not_lose_to_baseline(trace) -> None:
    def waf(policy: str) -> float:
        return api.simulate(str(trace), policy, ssd="paper", timing=False)["waf"]

    base = waf("baseline")
    for policy in ("pcstream-star", "pcstream"):
        w = waf(policy)
        assert w <= BOUND * base, f"{trace.name}: {policy} {w:.3f} > {BOUND} × baseline {base:.3f}"
