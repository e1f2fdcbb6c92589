"""The traced program keeps its descriptors: a program that closes every descriptor above 2 (as
daemons do: close_range, closefrom, a close() loop, or the raw close_range system call that no
hook sees) and then holds a thousand files open, writing to each, finds every file with its own
content, and the trace has every write. The shim's files live at high numbers, are skipped by
close_range/closefrom, and are reopened elsewhere when closed under it; libunwind's pipe too."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from test_record import CC, progs, record  # noqa: F401  (progs: the compiled tests/shim programs)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
]

FILES = 1000
PAGE = 4096


# every way of closing under the default method; the raw system call (the shim learns of it only
# when its files are gone) under each stack walk, libunwind's pipe included
@pytest.mark.parametrize(
    ("how", "method"),
    [
        ("range", "auto"),
        ("from", "auto"),
        ("loop", "auto"),
        ("raw", "auto"),
        ("raw", "unwind"),
        ("raw", "fp"),
    ],
)
def test_a_program_that_closes_every_descriptor_keeps_its_files(
    progs: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    how: str,
    method: str,
) -> None:
    r = record(tmp_path, [str(progs["closeall"]), how, str(FILES)], "--method", method)
    assert (r.status, r.stdout) == (0, "closeall ok\n"), r.stderr
    assert "lost" not in r.stderr, r.stderr
    written: dict[str, int] = {}
    for x in r.rows:
        if x["op"] == "write":
            written[r.name(x)] = written.get(r.name(x), 0) + x["len"]
    assert written == {f"f{i:04d}.dat": PAGE for i in range(FILES)}


def test_the_shims_logs_never_raise_sigxfsz_in_the_program(tmp_path: Path) -> None:
    """Under a file-size limit the shim's logs are cut short: the program runs on (no SIGXFSZ
    from a log write), and record writes the trace of what was kept, counting the loss."""
    script = "ulimit -f 16; i=0; while [ $i -lt 400 ]; do echo x > f$i; i=$((i+1)); done; echo done"
    r = record(tmp_path, ["sh", "-c", script], "--via", "shim")
    assert (r.status, r.stdout) == (0, "done\n"), r.stderr
    assert len(list(tmp_path.glob("f*"))) == 400
    assert r.trace.exists() and any(x["op"] == "write" for x in r.rows)
    assert "a file-size limit or a full disk cut its log short" in r.stderr
    # both logs stop at 8 KiB (400 paths fill the .txt too, so no end line counts the records):
    # what is counted is the torn record, 8192 - 32 - 92 * 88 = 64 bytes, and the
    # .txt's cut-short line
    lost = re.search(r"lost at least: (\d+) bytes of records and lines cut short", r.stderr)
    assert lost is not None and int(lost.group(1)) >= (8192 - 32) % 88, r.stderr
