"""Live write-lifetime hints: the pinned stream → level mapping, ``pcstream run`` (output, exit
status, threads and fork, a table that matches nothing, bad tables) and, as root with BPF,
``record --block --table``: the hints each call path's pages carry to the block layer.

The program is tests/shim/live.c: a short-lived path (64 KiB rewritten and fdatasync'ed 40 times
a round) and a long-lived one (2 MiB once a round), in two files or in two regions of one file.
Its table is learned the way a user learns it: record, map (or record --block), simulate --table.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pcstream import live
from pcstream.cli import _common
from pcstream.groundtruth import biotracer, loopdev
from pcstream.record import runner
from support import ROOT, assert_user_error, run_module

CC = shutil.which("cc") or shutil.which("gcc")
SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
F_GET_RW_HINT = 1035

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only"),
    pytest.mark.skipif(CC is None, reason="no C compiler"),
    pytest.mark.skipif(not SHIM_SO.is_file(), reason="the record shim is not built (make shim)"),
]


def pcstream(
    *args: str | os.PathLike[str], cwd: Path | None = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pcstream", *[str(a) for a in args]],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def inode_hint(path: Path) -> int:
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        return struct.unpack("<Q", fcntl.fcntl(fd, F_GET_RW_HINT, bytes(8)))[0]
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- the pinned mapping


@pytest.mark.parametrize(
    ("streams", "levels"),
    [
        (1, "S"),
        (2, "SM"),
        (3, "SML"),
        (4, "SMLE"),
        (5, "SSMLE"),
        (7, "SSMMLLE"),
        (8, "SSMMLLEE"),
        (15, "SSSSMMMMLLLLEEE"),
    ],
)
def test_streams_by_centroid_split_into_four_equal_groups(streams: int, levels: str) -> None:
    got = "".join(live.LEVELS[live.level_of_rank(r, streams)][0] for r in range(streams))
    assert got == levels


def test_source_signature_round_trip() -> None:
    src = runner.record_source(["db_bench", "--num=5"], "unwind", 16, block=True)
    assert live.source_signature(src + " | pcstream map") == {"method": "unwind", "frames": 16}
    assert live.source_signature("gen zipf") is None


def test_hint_file_layout(tmp_path: Path) -> None:
    out = tmp_path / "h.bin"
    live.write_hints({7: live.SHORT, 3: live.EXTREME}, out)
    data = out.read_bytes()
    assert data[:8] == b"PCHINTS1" and struct.unpack_from("<II", data, 8) == (2, 0)
    assert [struct.unpack_from("<QQ", data, 16 + 16 * i) for i in range(2)] == [(3, 5), (7, 2)]


def test_live_log_sums_processes_and_collects_errnos(tmp_path: Path) -> None:
    log = tmp_path / "h.bin.log"
    log.write_text("L 10 100 90 3 0 0\nR 22 11\nL 11 50 0 1 2 1\nR 22 12\nbroken\n")
    c = live.read_live_log(log)
    assert (c.processes, c.writes, c.matched, c.hints_set, c.rejected, c.program_hints) == (
        2,
        150,
        90,
        4,
        2,
        1,
    )
    assert c.errnos == [22]
    text = " ".join(live.warnings(c, "t.json"))
    assert "EINVAL" in text and "rejected" in text


# --------------------------------------------------------------------------- pcstream run


@pytest.fixture(scope="module")
def prog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live") / "live"
    src = ROOT / "tests" / "shim" / "live.c"
    subprocess.run(
        [CC, "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(out), str(src)], check=True
    )
    return out


@pytest.fixture(scope="module")
def table(prog: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The table of `live two`, learned on the ext4 model: record, map, simulate --table."""
    work = tmp_path_factory.mktemp("learn")
    r = pcstream("record", "-o", work / "f.parquet", "--", prog, "two", cwd=work)
    assert r.returncode == 0, r.stderr
    r = pcstream("map", work / "f.parquet", "-o", work / "b.parquet", "--capacity", "64MiB", cwd=work)
    assert r.returncode == 0, r.stderr
    t = work / "table.json"
    r = pcstream(
        "simulate", work / "b.parquet", "--policy", "pcstream", "--ssd", "small", "--table", t, cwd=work
    )
    assert r.returncode == 0, r.stderr
    return t


def test_simulate_table_stores_the_signature_method(table: Path) -> None:
    saved = json.loads(table.read_text())
    assert saved["signature"] == {"method": "auto", "frames": 12}


def test_table_resolves_each_path_to_its_own_level(table: Path) -> None:
    r = live.resolve(table, "small")
    assert sorted(h for h in r.hints.values() if h) == [live.SHORT, live.MEDIUM]
    assert [s["hint"] for s in r.streams] == ["SHORT", "MEDIUM"]


def test_run_sets_each_files_hint_and_keeps_output_and_status(
    prog: Path, table: Path, tmp_path: Path
) -> None:
    r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", prog, "two", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [line.split()[0] for line in r.stdout.splitlines()] == ["short", "long"]
    summary = json.loads(r.stderr.splitlines()[-1])
    assert summary["live"]["writes"] == 288 and summary["live"]["match_rate"] == 1.0
    # Nothing to warn about, but a checkout other users cannot reach (then the shim says so).
    assert summary["warnings"] == [w for w in [runner.private_shim_warning(runner.shim_path())] if w]
    assert inode_hint(tmp_path / "short.dat") == live.SHORT
    assert inode_hint(tmp_path / "long.dat") == live.MEDIUM
    assert not list(tmp_path.glob("*.bin")), "run records nothing"


def test_run_program_hint_wins(prog: Path, table: Path, tmp_path: Path) -> None:
    r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", prog, "hinted", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["live"]["program_hint_inodes"] == 1
    assert inode_hint(tmp_path / "short.dat") == live.LONG  # the program's own, not SHORT
    assert inode_hint(tmp_path / "long.dat") == live.MEDIUM


def test_run_sets_the_hint_again_on_a_reused_inode_number(prog: Path, table: Path, tmp_path: Path) -> None:
    """long.dat deleted and created again each round: where the file system gives the new file the
    old inode number, the cached hint must not stop the new inode (NOT_SET) from getting its own."""
    r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", prog, "reuse", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    inos = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("round")]
    assert len(inos) == 4
    assert inode_hint(tmp_path / "long.dat") == live.MEDIUM
    assert inode_hint(tmp_path / "short.dat") == live.SHORT
    if len(set(inos)) == 4:
        pytest.skip(f"the file system of {tmp_path} did not reuse the inode number (the hint was set anyway)")


DUP_OVER_C = r"""
#include <fcntl.h>
#include <unistd.h>
int main(void) {
    int fd = open("d.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int t = 900; t < 910; t++) dup2(fd, t); /* over the shim's own fds */
    for (int i = 0; i < 8; i++) if (write(903, "abcd", 4) != 4) return 3;
    return 0;
}
"""


def test_run_program_taking_the_shims_fd_numbers(table: Path, tmp_path: Path) -> None:
    """dup2 over the fd numbers the shim keeps its live log at: the log moves out of the way; the
    program's file gets only the program's bytes and the counts still arrive."""
    src, exe = tmp_path / "dup.c", tmp_path / "dup"
    src.write_text(DUP_OVER_C)
    subprocess.run([CC, "-O1", "-o", str(exe), str(src)], check=True)
    r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", exe, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d.dat").read_bytes() == b"abcd" * 8
    assert json.loads(r.stderr.splitlines()[-1])["live"]["writes"] == 8


def test_run_threads_and_fork_keep_status_and_warn_when_nothing_matches(
    prog: Path, table: Path, tmp_path: Path
) -> None:
    # the threads' and the child's call paths are not in the table (learned on `live two`)
    r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", prog, "threads", cwd=tmp_path)
    assert r.returncode == 7, r.stderr
    assert r.stdout == "done\n"
    lines = r.stderr.splitlines()
    assert lines[0].startswith("pcstream run: warning: ") and "match rate 0.0 % of 32 writes" in lines[0]
    counts = json.loads(lines[-1])["live"]
    assert counts["processes"] == 2 and counts["writes"] == 32 and counts["matched_writes"] == 0
    assert inode_hint(tmp_path / "child.dat") == live.NOT_SET


def test_run_signal_status(table: Path, tmp_path: Path) -> None:
    r = pcstream("run", "--table", table, "--", "sh", "-c", "kill -TERM $$", cwd=tmp_path)
    assert r.returncode == 128 + 15


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_run_rejected_hint_one_warning_and_the_program_goes_on(prog: Path, table: Path) -> None:
    """F_SET_RW_HINT on a file the process does not own is refused (EPERM): the program, started
    by setpriv as nobody, writes root's files; one warning, its output and status unchanged."""
    import tempfile

    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # The dropped user loads the shim from the checkout: a checkout in a private directory
    # (mode 700) hides it, and ld.so would then skip the preload without the test knowing why.
    if subprocess.run([*drop, "test", "-r", str(SHIM_SO)], check=False).returncode != 0:
        pytest.skip(f"user nobody cannot read {SHIM_SO} (the checkout is in a private directory)")
    shared = Path(tempfile.mkdtemp(prefix="pcstream-live-"))
    try:
        shared.chmod(0o777)
        exe = shared / "live"
        shutil.copy(prog, exe)
        for name in ("short.dat", "long.dat"):
            (shared / name).touch()
            (shared / name).chmod(0o666)
        r = pcstream("run", "--table", table, "--ssd", "small", "--json", "--", *drop, exe, "two", cwd=shared)
        assert r.returncode == 0, r.stderr
        assert [line.split()[0] for line in r.stdout.splitlines()] == ["short", "long"]
        lines = r.stderr.splitlines()
        assert len(lines) == 2 and "rejected the write-lifetime hint (EPERM)" in lines[0], r.stderr
        counts = json.loads(lines[1])["live"]
        assert counts["hints_rejected"] == 2 and counts["hints_set"] == 0 and counts["matched_writes"] == 288
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (None, "no such table"),
        ("{not json", "invalid JSON"),
        ('{"format": 1}', "no policy and pcs"),
        ('{"format": 1, "policy": "oracle", "pcs": []}', "live hints need pcstream's"),
        ('{"format": 2, "policy": "pcstream", "centroids": [], "pcs": []}', "not a loadable PC table"),
        ('{"format": 1, "policy": "pcstream", "centroids": [], "pcs": [{"sig": "x"}]}', "not a loadable"),
    ],
)
def test_run_bad_table_exit_3(tmp_path: Path, content: str | None, what: str) -> None:
    t = tmp_path / "t.json"
    if content is not None:
        t.write_text(content)
    line = assert_user_error(run_module("run", "--table", t, "--", "true"), 3, str(t))
    assert what in line


def test_run_without_command_is_usage_error(tmp_path: Path, table: Path) -> None:
    assert run_module("run", "--table", table).status == 2


# ---------------------------------------------------------------- record --block --table (root, BPF)


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (loop device, BPF)"
    if not Path("/dev/loop-control").exists() or any(shutil.which(t) is None for t in loopdev.TOOLS):
        return "no loop devices or e2fsprogs"
    return biotracer.unavailable()


SKIP = _skip_reason()
needs_bpf = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


def block_run(prog: Path, work: Path, mode: str, *extra: str | os.PathLike[str]) -> dict[str, Any]:
    out = work / f"{mode}{len(extra)}"
    r = pcstream(
        "record", "--block", "--capacity", "64MiB", "--json", "-o", out, *extra, "--", prog, mode, cwd=work
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.splitlines()[-1])
    summary["out"] = out
    return summary


@pytest.fixture(scope="module")
def block_table(prog: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The table of `live two` learned on its real block trace (record --block, simulate --table)."""
    work = tmp_path_factory.mktemp("blocklearn")
    learned = block_run(prog, work, "two")
    t = work / "table.json"
    r = pcstream("simulate", learned["out"] / "block.parquet", "--policy", "pcstream", "--ssd", "small",
                 "--table", t)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return t, work


@needs_bpf
def test_record_block_table_each_path_reaches_the_block_layer_with_its_hint(
    prog: Path, block_table: tuple[Path, Path]
) -> None:
    t, work = block_table
    s = block_run(prog, work, "two", "--table", t, "--ssd", "small")
    assert s["live"]["match_rate"] == 1.0
    fid = s["fidelity"]
    per = fid["pcs"]
    assert len(per) == 2, per
    hints = sorted(v["hint"] for v in per.values())
    assert hints == ["MEDIUM", "SHORT"]
    for sig, v in per.items():
        assert v["pages"] >= 100, (sig, v)
        assert v["rate"] >= 0.95, (sig, v)
    # the block trace's hint column holds them
    import pyarrow.parquet as pq

    rows = pq.read_table(s["out"] / "block.parquet", columns=["op", "pc", "hint", "meta"]).to_pylist()
    seen = {(r["pc"], r["hint"]) for r in rows if r["op"] == 0 and r["meta"] == 0 and r["pc"]}
    assert {h for _, h in seen} >= {live.SHORT, live.MEDIUM}


@needs_bpf
@pytest.mark.parametrize("mode", ["one", "onelazy"])
def test_record_block_table_one_file_two_paths_is_measured(
    prog: Path, block_table: tuple[Path, Path], mode: str
) -> None:
    """The hard case: two paths, two regions of one file, each syncing its writes (one) or one
    fsync a round (onelazy). No threshold: docs/LIVE.md reports the figures."""
    t, work = block_table
    s = block_run(prog, work, mode, "--table", t, "--ssd", "small")
    assert s["live"]["match_rate"] == 1.0
    fid = s["fidelity"]
    assert fid["data_pages"] > 0 and len(fid["pcs"]) == 2
    assert fid["same_hint_pages"] == sum(v["same_hint_pages"] for v in fid["pcs"].values())
    print(f"{mode}:", json.dumps(fid))


def test_record_block_table_without_bpf_says_so(
    monkeypatch: pytest.MonkeyPatch, table: Path, tmp_path: Path
) -> None:
    """The live hints are read from the bios: no BPF is an error naming why (no tracefs fallback);
    without root, the root error comes first."""
    from support import invoke

    monkeypatch.setattr(biotracer, "unavailable", lambda: "the BPF capture is not built (test)")
    r = invoke("record", "--block", "--table", table, "--ssd", "small", "-o", tmp_path / "o", "--", "true")
    if os.geteuid() != 0:
        assert r.status == _common.EXIT_NOT_ROOT and "needs root" in r.stderr
    else:
        assert_user_error(r, 1, "the BPF capture is not built (test)")
    assert not (tmp_path / "o" / "block.parquet").exists()


def test_record_table_needs_block(tmp_path: Path, table: Path) -> None:
    assert run_module("record", "--table", table, "--", "true", cwd=tmp_path).status == 2
