"""O_DIRECT from the program to the block trace: the shim marks each write made through an
O_DIRECT file description (from open, or set by fcntl F_SETFL) with flag VIA_DIRECT, and the
file-system model writes those pages at the call instead of through its page cache
(docs/FSMODEL.md, "O_DIRECT")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from test_record import CC, VIA_BOTH, progs, record  # noqa: F401  (progs: the compiled tests/shim programs)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
]

DIRECT = 1 << 9
PAGE = 4096
S = 1_000_000_000


@pytest.mark.parametrize("via", VIA_BOTH)
def test_direct_writes_are_marked_and_mapped_at_the_call(
    progs: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    via: str,
) -> None:
    # The BPF capture reads O_DIRECT from the file description at each call, as the shim tracks it.
    r = record(tmp_path, [str(progs["direct"])], "--via", via)
    assert r.status == 0, r.stderr
    if r.stdout == "direct unsupported\n":
        pytest.skip("the file system under the test's directory refuses O_DIRECT")
    assert r.stdout == "direct ok\n"
    writes = [(x["offset"], x["len"], bool(x["flags"] & DIRECT)) for x in r.rows if x["op"] == "write"]
    assert writes == [
        (0, 2 * PAGE, False),
        (PAGE, 2 * PAGE, True),  # the O_DIRECT descriptor
        (3 * PAGE, PAGE, False),
        (4 * PAGE, PAGE, True),  # after F_SETFL O_DIRECT on the buffered one
        (5 * PAGE, PAGE, False),  # and after F_SETFL back
    ]
    block = tmp_path / "block.parquet"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pcstream",
            "map",
            str(r.trace),
            "-o",
            str(block),
            "--capacity",
            "1GiB",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.splitlines()[-1])
    assert summary["direct_pages"] == 3
    assert summary["dirtied_pages"] == 4  # pages 0 and 1 (A), 3 (C), 5 (E)
    # Block rows of d.dat's data: op 0 = write, meta 0 = data (docs/FORMATS.md).
    table = pq.read_table(block)
    files = json.loads(table.schema.metadata[b"pcstream.files"])
    (dat,) = [int(k) for k, v in files.items() if Path(v).name == "d.dat"]
    rows = [x for x in table.to_pylist() if x["op"] == 0 and x["meta"] == 0 and x["file"] == dat]
    a, b, c, d, e = (x["pc"] for x in r.rows if x["op"] == "write")
    # At the calls (the program ran in far less than a second): page 1's cached version (A)
    # written back first, then the direct pages 1-2 (B) over it, then the direct page 4 (D).
    early = [(x["pages"], x["pc"], x["lpn"]) for x in rows if x["ts_ns"] < S]
    assert early[0][2] == early[1][2], "the direct write lands on the page written back"
    # The buffered pages 0 (A), 3 (C) and 5 (E) wait for the flusher's 30 s expiry.
    late = [(x["pc"], x["pages"]) for x in rows if x["ts_ns"] >= 30 * S]
    # Each call its own PC (the BPF capture unwinds this program, built without frame pointers,
    # from the copied stack as the shim does in the process).
    assert len({a, b, c, d, e}) == 5, (a, b, c, d, e)
    assert [pc for _, pc, _ in early] == [a, b, d], rows
    assert sorted(late) == sorted([(a, 1), (c, 1), (e, 1)]), rows
    assert len(rows) == 6
