"""``pcstream bench``: engine throughput and memory on a synthetic workload."""

from __future__ import annotations

import click

from pcstream import api
from pcstream.cli._common import (
    epilog,
    flatten,
    fmt,
    fmt_bytes,
    json_option,
    key_value_table,
    print_json,
    resolve_ssd,
    ssd_option,
    stdout,
)
from pcstream.options import SimOptions

EXTRA = """\b
Figures: page_ops_per_s = simulated page operations (host writes, GC
copies, reads) per wall-clock second; host_pages_per_s = host pages
(4 KiB) simulated per second; peak_rss_bytes = peak resident memory;
bytes_per_page = peak memory per physical page of the SSD."""


@click.command("bench", short_help="engine speed (page ops/s) and memory", epilog=epilog(EXTRA))
@ssd_option
@click.option(
    "--policy", default="baseline", show_default=True, metavar="NAME", help="Placement policy to run."
)
@click.option(
    "--pages",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Host pages (4 KiB) to write; 0 = the engine's default for the SSD.",
)
# A benchmark's own defaults: no timing model (the engine's raw speed), workload seed 1.
@click.option(
    "--timing/--no-timing",
    default=False,
    show_default=True,
    help="Include the die-timing model in the measured loop.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=1, show_default=True, metavar="N", help="Workload seed."
)
@json_option
def command(ssd: str, policy: str, pages: int, timing: bool, seed: int, as_json: bool) -> None:
    """Measure how fast the engine simulates (page ops/s) and how much memory it needs."""
    ssd = resolve_ssd(ssd)
    result = api.bench(SimOptions(ssd=ssd, timing=timing, seed=seed), policy=policy, pages=pages)
    if as_json:
        print_json(result)
        return
    rows = []
    for key, value in flatten(result):
        rows.append((key, fmt_bytes(value) if key.endswith("bytes") and "per" not in key else fmt(value)))
    stdout().print(
        key_value_table(f"bench · ssd {ssd} · policy {policy} · timing {'on' if timing else 'off'}", rows)
    )
