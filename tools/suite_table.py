"""The bundled suite in numbers, from traces/manifest.json (docs/WORKLOADS.md's table).

For each recipe: the bytes its programs wrote (record summary), the bytes that entered stdio
buffers through inline macros (accounted at flush), that the safety net had to recover and that
it could not place, the data pages that reached the device with and without discard
against the free space the aged file system left, the space the program held at the end, the
recording's wall time and the two traces' sizes.

Run: ``.venv/bin/python tools/suite_table.py [traces/manifest.json]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = 4096


def gib(pages: float) -> str:
    return f"{pages * PAGE / 2**30:.2f}"


def rows(manifest: dict[str, Any]) -> list[str]:
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for stem, e in manifest["traces"].items():
        by.setdefault(e["workload"], {})["nodiscard" if stem.endswith(".nodiscard") else "discard"] = e
    out = [
        "| recipe | written by the programs (GB) | stdio inline / recovered / unplaced bytes "
        "| free after aging (GiB) | data reaching the device, discard / nodiscard (× free) "
        "| held at the end (GiB) | record (s) | traces (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, modes in by.items():
        d = modes.get("discard") or next(iter(modes.values()))
        m, rec = d["map"], d["record"]
        aged = m.get("aged") or {}
        free = m["capacity_pages"] - aged.get("used_blocks", 0)
        held = m["capacity_pages"] - m["free_pages"] - aged.get("used_blocks", 0)
        data = " / ".join(
            f"{modes[k]['map']['data_pages'] / free:.1f}" if k in modes else "—"
            for k in ("discard", "nodiscard")
        )
        size = sum(e["bytes"] for e in modes.values()) / 1e6
        out.append(
            f"| `{name}` | {rec.get('write_bytes', 0) / 1e9:.2f} | "
            f"{rec.get('inline_stdio_bytes', 0):,} / {rec.get('recovered_bytes', 0):,} / "
            f"{rec.get('unplaced_bytes', 0):,} | {gib(free)} | {data} | "
            f"{gib(held)} | {d['record_wall_s']:.0f} | {size:.1f} |"
        )
    return out


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else ROOT / "traces" / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: {path}: {e}; give the suite's manifest.json", file=sys.stderr)
        return 2
    print("\n".join(rows(manifest)))
    total = manifest.get("total_bytes", 0) / 1e6
    made = manifest.get("environment", {}).get("date")
    print(f"\n{len(manifest['traces'])} traces, {total:.1f} MB; made {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
