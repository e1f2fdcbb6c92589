"""``pcstream info``: summarise a block trace or a file-level trace."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from pcstream import api, pclabels
from pcstream.cli._common import (
    epilog,
    flatten,
    fmt,
    fmt_bytes,
    fmt_share,
    json_option,
    key_value_table,
    print_json,
    stdout,
)
from pcstream.errors import require_file


def _value(key: str, value: Any) -> str:
    leaf = key.rsplit(".", 1)[-1]
    if leaf.endswith("bytes"):
        return fmt_bytes(value)
    if leaf.endswith("share") or key.startswith("meta_share."):
        return fmt_share(value)
    return fmt(value)


# Columns of a list of records shown in the JSON only: a PC's whole call path is too wide for a
# table; its `where` (innermost frames) and `label` columns name it there.
HIDDEN_COLUMNS = frozenset({"frames"})
# Text columns, aligned left.
TEXT_COLUMNS = frozenset({"label", "where", "path"})


def render(summary: dict[str, Any]) -> list[Table]:
    """Tables for an info summary: scalars (dotted keys), then each list of records."""
    scalars: list[tuple[str, str]] = []
    lists: list[tuple[str, list[dict[str, Any]]]] = []
    for key, value in flatten(summary):
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lists.append((key, value))
        else:
            scalars.append((key, _value(key, value)))
    tables = [key_value_table(f"trace {summary.get('path', '')}", scalars)]
    for key, records in lists:
        table = Table(title=key, title_justify="left")
        columns = [
            k for k in dict.fromkeys(k for record in records for k in record) if k not in HIDDEN_COLUMNS
        ]
        for column in columns:
            table.add_column(column, justify="left" if column in TEXT_COLUMNS else "right")
        for record in records:
            table.add_row(*(Text(_value(column, record.get(column))) for column in columns))
        tables.append(table)
    return tables


@click.command("info", short_help="summarise a block or file-level trace", epilog=epilog())
@click.argument("trace", metavar="TRACE")
@json_option
def command(trace: str, as_json: bool) -> None:
    """Summarise TRACE. A block trace (kind block): requests and pages (4 KiB) written, trimmed
    and read, footprint, capacity, program contexts (PCs), files, processes and time span. A
    file-level trace from `pcstream record` (kind file): rows per operation, writes and bytes,
    bytes recovered by the safety net and put by stdio macros, processes, threads, time span, the
    top PCs and files by bytes, the program's own write-life hints. A trace whose
    footer names its PCs (pcstream.pcs) gets a label per top PC: the frames that tell it from the
    trace's other PCs and the files it writes most (docs/REPORT.md, "PC labels")."""
    require_file(trace, "trace file")
    summary, frames = api.info_labelled(trace)
    pclabels.label_info(trace, summary, frames)
    if as_json:
        print_json(summary)
        return
    console = stdout()
    for table in render(summary):
        console.print(table)
