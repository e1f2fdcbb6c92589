"""``pcstream policies``: the placement policies the engine knows."""

from __future__ import annotations

import click
from rich.table import Table

from pcstream import api
from pcstream.cli._common import epilog, json_option, print_json, stdout


@click.command("policies", short_help="list the placement policies", epilog=epilog())
@json_option
def command(as_json: bool) -> None:
    """List the placement policies: name (for --policy), the request columns it sees, what it does."""
    entries = api.policies()
    if as_json:
        for entry in entries:
            print_json(entry)
        return
    table = Table(title="placement policies", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("sees")
    table.add_column("summary")
    for entry in entries:
        sees = entry.get("sees") or []
        table.add_row(str(entry.get("name")), ", ".join(map(str, sees)), str(entry.get("summary", "")))
    stdout().print(table)
