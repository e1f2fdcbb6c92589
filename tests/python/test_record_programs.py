"""pcstream record on real programs: every byte a program writes through libc reaches the trace.

Coreutils and most of Debian are built with _FORTIFY_SOURCE and use _unlocked stdio and putc-style
macros that fill a stream's buffer with no call the shim sees; glibc then writes the buffer with
internal calls. The shim accounts per stream (and its safety net per file description), so for
each file these programs write once, sequentially, the recorded bytes (the sum of `len` of the
file's write rows) equal its final size exactly; for a file rewritten in place every byte range
the program wrote is covered. Each test skips, with the reason, when its program is missing
(nothing is installed here; the CI installs gawk, the rest is Debian's base)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from test_record import CC, Recorded, progs, record  # noqa: F401  (progs: the compiled tests/shim programs)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
]

RECOVERED, INLINE = 1 << 7, 1 << 8


def run(tmp: Path, script: str, shell: str = "sh") -> Recorded:
    r = record(tmp, [shell, "-c", script])
    assert r.status == 0, r.stderr
    assert "lost" not in r.stderr, r.stderr
    return r


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")


def by_file(r: Recorded) -> dict[str, dict[str, Any]]:
    """name -> recorded bytes, recovered bytes, bytes entered by macros, rows, (offset, len) list."""
    out: dict[str, dict[str, Any]] = {}
    for x in r.rows:
        if x["op"] != "write" or not x["path"]:
            continue
        f = out.setdefault(r.name(x), {"bytes": 0, "recovered": 0, "inline": 0, "rows": 0, "ranges": []})
        f["bytes"] += x["len"]
        f["rows"] += 1
        f["ranges"].append((x["offset"], x["len"]))
        if x["flags"] & RECOVERED:
            f["recovered"] += x["len"]
        if x["flags"] & INLINE:
            f["inline"] += x["len"]
    return out


def assert_exact(r: Recorded, tmp: Path, *names: str) -> dict[str, dict[str, Any]]:
    """Each file, written once sequentially: recorded bytes == final size, at the offsets they
    occupy (the ranges tile the file), nothing recovered (the direct paths saw every byte)."""
    files = by_file(r)
    for name in names:
        size = (tmp / name).stat().st_size
        assert size > 0, name
        f = files.get(name)
        assert f is not None, f"{name}: no write recorded ({r.stderr})"
        assert f["bytes"] == size, (name, f["bytes"], size)
        covered = bytearray(size)
        for off, n in f["ranges"]:
            covered[off : off + n] = b"\1" * n
        assert all(covered), f"{name}: recorded ranges leave holes"
        assert f["recovered"] == 0, (name, f["recovered"])
    return files


@pytest.fixture
def numbers(tmp_path: Path) -> Path:
    """100 000 numbers in a scrambled order (an input for sort, head, awk)."""
    path = tmp_path / "in.txt"
    path.write_text("".join(f"{(i * 7919) % 100_003}\n" for i in range(100_000)))
    return path


def test_seq(tmp_path: Path) -> None:
    # seq writes with fwrite_unlocked/fputs_unlocked; before the stdio accounting 0 % reached the trace
    need("seq")
    r = run(tmp_path, "seq 1 200000 > a.txt; seq -w 1 3 999 > b.txt")
    assert_exact(r, tmp_path, "a.txt", "b.txt")


def test_sort_and_head(tmp_path: Path, numbers: Path) -> None:
    need("sort", "head")
    r = run(tmp_path, "sort -n in.txt > sorted.txt; head -n 5000 in.txt > head.txt; sort -o out.txt in.txt")
    assert_exact(r, tmp_path, "sorted.txt", "head.txt", "out.txt")


@pytest.mark.parametrize("awk", ["mawk", "gawk"])
def test_awk(tmp_path: Path, numbers: Path, awk: str) -> None:
    need(awk)
    prog = '{ printf "%d:%s\\n", NR, $1 > "own.txt"; print $1 * 2 }'
    r = run(tmp_path, f"{awk} '{prog}' in.txt > doubled.txt")
    assert_exact(r, tmp_path, "own.txt", "doubled.txt")


def test_tar_and_cp(tmp_path: Path) -> None:
    need("tar", "cp")
    src = tmp_path / "src"
    src.mkdir()
    for i in range(20):
        (src / f"f{i}.txt").write_text(f"file {i}\n" * (50 * i + 1))
    r = run(tmp_path, "tar cf arch.tar src && cp arch.tar copy.tar && tar czf arch.tgz src")
    assert_exact(r, tmp_path, "arch.tar", "copy.tar", "arch.tgz")


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_shell_builtins(tmp_path: Path, shell: str) -> None:
    """echo and printf builtins redirected to files, in loops, with >> appends (bash's own stdio
    stream on a redirected fd 1; dash writes with write())."""
    need(shell)
    script = (
        "echo hello world > once.txt; "
        "i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo line $i >> echo.txt; "
        "printf '%05d %s\\n' $i x >> printf.txt; done; "
        "for w in a b c; do printf '%s-' $w; done > loop.txt"
    )
    r = run(tmp_path, script, shell)
    assert_exact(r, tmp_path, "once.txt", "echo.txt", "printf.txt", "loop.txt")


def test_python_print(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "with open('py.txt', 'w') as f:\n"
        "    for i in range(5000):\n"
        "        print(i, 'x' * (i % 90), file=f)\n"
        "with open('bin.dat', 'wb', buffering=0) as g:\n"
        "    for i in range(100):\n"
        "        g.write(bytes(range(256)) * 3)\n"
    )
    r = record(tmp_path, [sys.executable, "-c", script])
    assert r.status == 0 and "lost" not in r.stderr, r.stderr
    assert_exact(r, tmp_path, "py.txt", "bin.dat")


def test_fortified_stdio_program(progs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """tests/shim/stdioacct.c built with -O2 -D_FORTIFY_SOURCE=2: putc_unlocked and
    putchar_unlocked macros (bytes with no call: flagged inline), __printf_chk, __fprintf_chk,
    error() and perror() to a redirected stderr, wide output, dprintf, fdopen."""
    exe = progs["stdioacct"]
    r = run(tmp_path, f"{exe} out > out.txt 2> err.txt")
    files = assert_exact(r, tmp_path, "out.txt", "err.txt")
    assert files["out.txt"]["inline"] >= 20000, "the macros' bytes are accounted at the next flush point"
    assert "error message 7" in (tmp_path / "err.txt").read_text()
    r = record(tmp_path, [str(exe), "files"])
    assert r.status == 0 and "lost" not in r.stderr, r.stderr
    files = assert_exact(r, tmp_path, "put.txt", "wide.txt", "dp.txt", "fdo.txt")
    assert files["put.txt"]["inline"] >= 99000
    assert (tmp_path / "wide.txt").read_bytes().startswith("héllo wörld\n".encode())


def test_messages_of_calls_that_end_the_process(progs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """assert's message (written by libc, then abort), argp's help and error (tar: libc writes
    them, then exits inside libc) and getopt's complaint (seq): measured by the file position, the
    "after" taken on the exit path when the call does not return."""
    r = record(tmp_path, ["sh", "-c", f"{progs['stdioacct']} assert > out.txt 2> err.txt"])
    assert "lost" not in r.stderr and "aborted (SIGABRT)" in r.stderr
    assert "more arguments" in (tmp_path / "err.txt").read_text()
    assert_exact(r, tmp_path, "out.txt", "err.txt")
    if shutil.which("tar"):
        r = run(tmp_path, "tar --help > help.txt; tar --bogus 2> bogus.txt; true")
        assert_exact(r, tmp_path, "help.txt", "bogus.txt")
    if shutil.which("seq"):  # getopt's complaint, then coreutils' own line
        r = run(tmp_path, "seq --bogus 2> opt.txt; true")
        assert_exact(r, tmp_path, "opt.txt")


def test_rewritten_in_place(progs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """over.txt: 10 000 bytes, fseek back and 50 rewritten, fseek to the end and 10 more, rewind
    and 5 rewritten, then through "r+" 300 at 5000: every range the program wrote is covered,
    each byte it wrote recorded once."""
    r = record(tmp_path, [str(progs["stdioacct"]), "files"])
    assert r.status == 0, r.stderr
    f = by_file(r)["over.txt"]
    size = (tmp_path / "over.txt").stat().st_size
    assert size == 10010
    wrote = [(0, 10000), (100, 50), (10000, 10), (0, 5), (5000, 300)]
    covered = bytearray(size)
    for off, n in f["ranges"]:
        covered[off : off + n] = b"\1" * n
    for off, n in wrote:
        assert all(covered[off : off + n]), (off, n)
    assert f["bytes"] == sum(n for _, n in wrote) and f["recovered"] == 0


def test_a_threaded_program_that_reopens_its_streams_finishes_with_its_output(
    progs: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """tests/shim/freopen.c: stderr reopened and written from a new thread; stdout, stderr and a
    file stream reopened while two threads write to them; stderr closed and written from another
    thread. The shim holds a stream's lock to count its bytes exactly; released after freopen
    (and after fclose of a standard stream), or the program hangs. What the two threads write
    while their streams are reopened is glibc's race (lines are lost without the shim too), so
    only the writers that run alone are checked line by line."""
    r = record(tmp_path, [str(progs["freopen"])])
    assert r.status == 0, r.stderr
    assert r.stdout.endswith("freopen ok\n"), r.stdout[-200:]
    first = (tmp_path / "err.txt").read_text().splitlines()
    assert first[:201] == ["main after freopen", *(f"a err {i}" for i in range(200))]
    for name, kind in (("err2.txt", "err"), ("out.txt", "out"), ("file1.txt", "file")):
        lines = (tmp_path / name).read_text().splitlines()
        assert [x for x in lines if x.startswith("d ")] == [f"d {kind} {i}" for i in range(200)], name
    written = {r.name(row) for row in r.rows if row["op"] == "write" and row["len"] > 0}
    assert {"err.txt", "err2.txt", "out.txt", "file0.txt", "file1.txt"} <= written
