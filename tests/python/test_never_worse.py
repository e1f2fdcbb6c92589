"""pcstream and pcstream-star against one stream on every bundled trace, both discard modes:
streams cost open units, so the PC policies must not lose to baseline by more than 2 %
(docs/POLICIES.md, "Streams cost space"). The one documented miss, fileserver without discard
(3.1 %: its metadata do live longer than its data, and the split does not pay), is held to
its measured figure so that it cannot grow unnoticed."""

from __future__ import annotations

import pytest

from pcstream import api
from support import ROOT

TRACES = sorted((ROOT / "traces").glob("*.parquet"))
# Documented in docs/POLICIES.md; every other trace is held to 2 %.
KNOWN = {"fileserver.nodiscard": 1.035}


@pytest.mark.skipif(not TRACES, reason="no bundled traces in traces/")
@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.removesuffix(".parquet"))
def test_pc_policies_do_not_lose_to_baseline(trace) -> None:
    def waf(policy: str) -> float:
        return api.simulate(str(trace), policy, ssd="paper", timing=False)["waf"]

    base = waf("baseline")
    bound = KNOWN.get(trace.name.removesuffix(".parquet"), 1.02)
    for policy in ("pcstream-star", "pcstream"):
        w = waf(policy)
        assert w <= bound * base, f"{trace.name}: {policy} {w:.3f} > {bound} × baseline {base:.3f}"
