"""Notes that change how a result should be read. Today one: GC had little to do.

When GC copies few pages, every placement policy gives about the same WAF, and a table of
near-equal WAFs says nothing about the policies: the run did not exercise them. The note says so,
and what usually causes it.
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
