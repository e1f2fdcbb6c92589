"""``pcstream presets``: the built-in SSD configurations."""

from __future__ import annotations

import click
from rich.table import Table

from pcstream import api
from pcstream.cli._common import epilog, fmt, json_option, print_json, stdout
from pcstream.units import PAGE_BYTES


def _gib(pages: object, page_bytes: object) -> str:
    if isinstance(pages, int) and isinstance(page_bytes, int):
        return f"{pages * page_bytes / 2**30:.2f}"
    return "—"


@click.command("presets", short_help="list the SSD presets or print one as TOML", epilog=epilog())
@click.option(
    "--show", metavar="NAME", help="Print the TOML of preset NAME (a starting point for --ssd FILE)."
)
@json_option
def command(show: str | None, as_json: bool) -> None:
    """List the SSD presets (geometry, capacity, over-provisioning, streams), or print one as TOML."""
    if show is not None:
        click.echo(api.preset_toml(show).rstrip("\n"))
        return
    summaries = [api.ssd_summary(name) for name in api.presets()]
    if as_json:
        for summary in summaries:
            print_json(summary)
        return
    title = "SSD presets (pages of 4 KiB; OP = (physical - logical) / logical)"
    table = Table(title=title, title_justify="left", min_width=len(title))
    for column in (
        "name",
        "channels×ways",
        "blocks/die",
        "pages/block",
        "physical GiB",
        "logical pages",
        "OP",
        "host streams",
        "GC unit",
        "GC victim",
    ):
        table.add_column(column, justify="left" if column == "name" else "right")
    for s in summaries:
        table.add_row(
            str(s.get("name")),
            f"{s.get('channels')}×{s.get('ways')}",
            fmt(s.get("blocks_per_die")),
            fmt(s.get("pages_per_block")),
            _gib(s.get("physical_pages"), s.get("page_bytes", PAGE_BYTES)),
            fmt(s.get("logical_pages")),
            fmt(s.get("op")),
            fmt(s.get("host_streams")),
            str(s.get("gc_unit")),
            str(s.get("gc_victim")),
        )
    stdout().print(table)
