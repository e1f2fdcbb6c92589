"""Notes that change how a result should be read.

- GC had little to do: when GC copies few pages, every placement policy gives about the same WAF,
  and a table of near-equal WAFs says nothing about the policies: the run did not exercise them.
- A policy that ran as the baseline (every page in stream 0: for ``manual``, the trace holds no
  write-lifetime hint) or lost to it badly (more write points open than the device has host
  streams, each holding a partly written block out of the free space GC works with): the note
  says why, from the run's own figures.
"""

from __future__ import annotations

from typing import Any

# Below this many GC-copied pages per host page, GC had little to do.
LITTLE_GC_SHARE = 0.02

LITTLE_GC_WHY = (
    "placement can only change WAF when GC copies pages; this usually means the device was not aged "
    "(use an aged trace from 'pcstream map --age' or --prefill), the run was too short to fill it "
    "again, or the program's files die whole and are trimmed before GC reaches them"
)


def gc_share(result: dict[str, Any]) -> float | None:
    """GC-copied pages per host page of a simulate result (None without host pages)."""
    host = result.get("host_pages") or 0
    return None if host <= 0 else float(result.get("gc_pages") or 0) / host


def little_gc(result: dict[str, Any]) -> bool:
    """Whether GC copied fewer than :data:`LITTLE_GC_SHARE` of the host pages."""
    share = gc_share(result)
    return share is not None and share < LITTLE_GC_SHARE


def little_gc_note(results: list[dict[str, Any]]) -> str | None:
    """One line for the traces whose baseline run (or, without one, every run) had little GC;
    None when GC mattered everywhere."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_trace.setdefault(str(r.get("trace")), []).append(r)
    quiet = []
    for trace, runs in by_trace.items():
        base = [r for r in runs if r.get("policy") == "baseline"] or runs
        if all(little_gc(r) for r in base):
            quiet.append(trace.rsplit("/", 1)[-1])
    if not quiet:
        return None
    shown = ", ".join(quiet[:6]) + (f" and {len(quiet) - 6} more" if len(quiet) > 6 else "")
    return (
        f"GC copied fewer than {LITTLE_GC_SHARE:.0%} of the host pages on {shown}: "
        f"the policies cannot differ there; {LITTLE_GC_WHY}"
    )


# The policy every other is measured against.
BASELINE = "baseline"
# A policy within this relative WAF of the baseline's equals it; beyond LOSS_RATIO it lost badly.
SAME_AS_BASELINE = 0.005
LOSS_RATIO = 1.10


def _why_loss(r: dict[str, Any]) -> str:
    """What the run's figures say about a policy that lost to the baseline."""
    open_points, streams = r.get("open_write_points") or 0, r.get("write_points") or 0
    logical, physical = r.get("logical_pages") or 0, r.get("physical_pages") or 0
    spare = physical - logical
    if open_points > 1 and streams:
        over = f", more than the device's {streams} host streams," if open_points > streams else ""
        free = f" out of {spare:,} spare pages ({spare / physical:.1%} of the device)" if physical > 0 else ""
        return (
            f"it kept {open_points} write points open{over} each holding a partly written block{free}, "
            "so GC runs with less free space and copies more"
        )
    return f"its placement mixed lifetimes more than the baseline's ({open_points} write point(s) open)"


def policy_notes(results: list[dict[str, Any]]) -> list[str]:
    """One line per run that equals its trace's baseline because every page went to stream 0, or
    loses to it by more than :data:`LOSS_RATIO`, saying why from the run's figures."""
    base = {(r.get("trace"), r.get("ssd")): r for r in results if r.get("policy") == BASELINE}
    notes = []
    for r in results:
        b = base.get((r.get("trace"), r.get("ssd")))
        if b is None or r is b or not b.get("waf") or r.get("waf") is None:
            continue
        ratio = float(r["waf"]) / float(b["waf"])
        name = f"{r.get('policy')} on {str(r.get('trace')).rsplit('/', 1)[-1]}"
        if abs(ratio - 1.0) <= SAME_AS_BASELINE and (r.get("stream0_share") or 0.0) >= 0.999:
            why = (
                "the trace holds no write-lifetime hint, so every page stayed in stream 0"
                if r.get("policy") == "manual"
                else "it put every page in stream 0"
            )
            notes.append(f"{name} equals baseline: {why}")
        elif ratio > LOSS_RATIO:
            notes.append(f"{name} is {ratio:.2f}x baseline's WAF: {_why_loss(r)}")
    return notes
