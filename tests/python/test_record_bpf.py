"""pcstream record --via bpf|auto: the BPF capture at the system-call boundary (bpf/pcsys*.c) on
real programs — a static Go program (raw system calls, no libc: the shim sees nothing), a static C
program, a dynamic C program beside the shim — and the behaviour without root or without BPF.
Each test skips with the reason when root, BPF, the built capture, go or a C compiler is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from pcstream.record import bpfrun

ROOT = Path(__file__).resolve().parents[2]
CC = shutil.which("cc") or shutil.which("gcc")
GO = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
MiB = 1 << 20
URING = 1 << 10  # the VIA_URING write flag (crates/pcstream-trace/src/filetrace/flags.rs)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="BPF is Linux-only")


def _bpf_missing() -> str | None:
    why = bpfrun.missing()
    return why[0] if why else None


needs_bpf = pytest.mark.skipif(_bpf_missing() is not None, reason=str(_bpf_missing()))

GO_SOURCE = """\
package main

import "os"

var block = make([]byte, 4096)

// Two call sites that write through the same os.(*File).Write: 1 MiB and 2 MiB to two files.

//go:noinline
func shortPath(dir string) { fill(dir+"/short.dat", 256) }

//go:noinline
func longPath(dir string) { fill(dir+"/long.dat", 512) }

//go:noinline
func fill(path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	for i := 0; i < n; i++ {
		if _, err := f.Write(block); err != nil {
			panic(err)
		}
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}

func main() {
	shortPath(os.Args[1])
	longPath(os.Args[1])
}
"""

C_SOURCE = """\
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* 100 writes of 4 KiB to out.dat through libc's write */
int main(void)
{
    char b[4096];
    memset(b, 'c', sizeof b);
    int fd = open("out.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++)
        if (write(fd, b, sizeof b) != sizeof b)
            return 1;
    return close(fd);
}
"""


@pytest.fixture(scope="module")
def gowrite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go program, built static (CGO_ENABLED=0) from the standard library only."""
    if GO is None:
        pytest.skip("go is not installed")
    src = tmp_path_factory.mktemp("gowrite")
    (src / "main.go").write_text(GO_SOURCE)
    (src / "go.mod").write_text("module gowrite\n\ngo 1.21\n")
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    exe = src / "gowrite"
    subprocess.run([GO, "build", "-o", str(exe), "."], cwd=src, env=env, check=True, timeout=300)
    return exe


def _cc(tmp: Path, name: str, source: str, *flags: str) -> Path:
    if CC is None:
        pytest.skip("no C compiler")
    src = tmp / f"{name}.c"
    src.write_text(source)
    exe = tmp / name
    subprocess.run([CC, "-O2", *flags, "-o", str(exe), str(src)], check=True)
    return exe


class Run:
    """One `pcstream record` and its trace."""

    def __init__(self, cwd: Path, cmd: list[str], *opts: str, env: dict[str, str] | None = None) -> None:
        self.trace = cwd / "trace.parquet"
        self.trace.unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pcstream", "record", "-o", str(self.trace), *opts, "--", *cmd],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        self.status, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.rows: list[dict[str, Any]] = pq.read_table(self.trace).to_pylist() if self.trace.exists() else []
        meta = tracemeta.footer(self.trace) if self.trace.exists() else {}
        self.meta = meta
        self.paths = tracemeta.paths(meta) if meta else {}
        self.pcs = json.loads(meta[tracemeta.KEY_PCS]) if meta else {}

    def writes(self, name: str) -> list[dict[str, Any]]:
        return [
            r
            for r in self.rows
            if r["op"] == "write" and r["path"] and Path(self.paths[r["path"]]).name == name
        ]

    def bytes(self, name: str) -> int:
        return sum(r["len"] for r in self.writes(name))

    def sigs(self, name: str) -> set[int]:
        return {r["pc"] for r in self.writes(name)}

    def symbols(self, pc: int) -> list[str]:
        return [f.get("symbol", "") for f in self.pcs[str(pc)]]

    def warnings(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if "warning:" in line]


def _go_run(tmp: Path, gowrite: Path, *opts: str) -> Run:
    data = tmp / "d"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir()
    r = Run(tmp, [str(gowrite), str(data)], *opts)
    assert r.status == 0, r.stderr
    assert (data / "short.dat").stat().st_size == MiB and (data / "long.dat").stat().st_size == 2 * MiB
    return r


@needs_bpf
def test_static_go_program_every_byte_each_path_its_signature(gowrite: Path, tmp_path: Path) -> None:
    runs = [_go_run(tmp_path, gowrite, "--via", "bpf") for _ in range(2)]
    for r in runs:
        assert r.meta[tracemeta.KEY_CAPTURE] == "bpf"
        assert abs(r.bytes("short.dat") - MiB) <= MiB // 100, r.stderr
        assert abs(r.bytes("long.dat") - 2 * MiB) <= 2 * MiB // 100, r.stderr
        short, long = r.sigs("short.dat"), r.sigs("long.dat")
        assert len(short) == 1 and len(long) == 1 and short != long, (short, long)
        assert "main.shortPath" in r.symbols(next(iter(short))), r.symbols(next(iter(short)))
        assert "main.longPath" in r.symbols(next(iter(long))), r.symbols(next(iter(long)))
    assert runs[0].sigs("short.dat") == runs[1].sigs("short.dat")
    assert runs[0].sigs("long.dat") == runs[1].sigs("long.dat")
    info = subprocess.run(
        [sys.executable, "-m", "pcstream", "info", "--json", str(runs[1].trace)],
        capture_output=True,
        text=True,
    )
    assert json.loads(info.stdout)["capture"] == "bpf", info.stderr


@needs_bpf
def test_auto_records_a_static_go_program_with_bpf(gowrite: Path, tmp_path: Path) -> None:
    r = _go_run(tmp_path, gowrite)  # --via auto is the default
    assert r.meta[tracemeta.KEY_CAPTURE] == "shim+bpf"
    assert (r.bytes("short.dat"), r.bytes("long.dat")) == (MiB, 2 * MiB)
    assert "statically linked" not in r.stderr, r.stderr


@needs_bpf
def test_auto_records_a_dynamic_c_program_once(tmp_path: Path) -> None:
    exe = _cc(tmp_path, "cwrite", C_SOURCE)
    r = Run(tmp_path, [str(exe)], "--no-coalesce")
    assert r.status == 0, r.stderr
    assert r.meta[tracemeta.KEY_CAPTURE] == "shim+bpf"
    assert r.bytes("out.dat") == 100 * 4096 and len(r.writes("out.dat")) == 100, r.stderr
    assert not list(tmp_path.glob("*.bpf.bin"))


@needs_bpf
def test_auto_records_a_static_c_program_with_bpf(tmp_path: Path) -> None:
    if not Path("/usr/lib/x86_64-linux-gnu/libc.a").exists():
        pytest.skip("no static libc (libc6-dev) to link a static program")
    exe = _cc(tmp_path, "cstatic", C_SOURCE, "-static")
    r = Run(tmp_path, [str(exe)], "--no-coalesce")
    assert r.status == 0, r.stderr
    assert r.meta[tracemeta.KEY_CAPTURE] == "shim+bpf"
    assert r.bytes("out.dat") == 100 * 4096, r.stderr
    assert len(r.sigs("out.dat")) == 1
    assert "statically linked" not in r.stderr, r.stderr


@needs_bpf
def test_auto_without_bpf_is_the_shim_alone_with_one_warning(gowrite: Path, tmp_path: Path) -> None:
    env = dict(os.environ, **{bpfrun.CAPTURE_ENV: str(tmp_path / "no-such-capture")})
    data = tmp_path / "d"
    data.mkdir()
    r = Run(tmp_path, [str(gowrite), str(data)], env=env)
    assert r.status == 0, r.stderr
    assert r.meta[tracemeta.KEY_CAPTURE] == "shim"
    assert r.bytes("short.dat") == 0  # the shim cannot enter a static program
    bpf_warnings = [w for w in r.warnings() if "BPF capture" in w]
    assert len(bpf_warnings) == 1 and "recorded with the shim alone" in bpf_warnings[0], r.stderr
    assert "no-such-capture" in bpf_warnings[0]


@pytest.mark.parametrize("via", [["--via", "bpf"], ["--pid", str(os.getpid())]])
def test_bpf_options_without_the_built_capture_are_one_usage_line(tmp_path: Path, via: list[str]) -> None:
    env = dict(os.environ, **{bpfrun.CAPTURE_ENV: str(tmp_path / "no-such-capture")})
    out = tmp_path / "t.parquet"
    cmd = ["--", "true"] if via[0] == "--via" else []
    r = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", *via, "-o", str(out), *cmd],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = r.stderr.strip().splitlines()
    if os.geteuid() == 0:
        assert "no-such-capture" in r.stderr and "not built" in r.stderr
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("pcstream: error:"), r.stderr
    assert not out.exists()


def test_via_bpf_without_root_is_one_line(tmp_path: Path) -> None:
    args = [
        sys.executable,
        "-m",
        "pcstream",
        "record",
        "--via",
        "bpf",
        "-o",
        str(tmp_path / "t.parquet"),
        "--",
        "true",
    ]
    if os.geteuid() != 0:
        r = subprocess.run(args, capture_output=True, text=True)
    else:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is not installed (to run as nobody)")
        tmp_path.chmod(0o777)
        r = subprocess.run(
            [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ, HOME=str(tmp_path)),
        )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs root" in lines[0] and "--via shim" in lines[0], r.stderr
    assert not (tmp_path / "t.parquet").exists()


@needs_bpf
def test_capture_runs_the_program_as_without_it(tmp_path: Path) -> None:
    """Output, exit status and files are the program's own, under every capture."""
    script = textwrap.dedent(
        """\
        import sys
        open("x.dat", "w").write("x" * 5000)
        print("out"); print("err", file=sys.stderr)
        sys.exit(7)
        """
    )
    for via in ("bpf", "auto", "shim"):
        r = Run(tmp_path, [sys.executable, "-c", script], "--via", via)
        assert r.status == 7, (via, r.stderr)
        assert r.stdout == "out\n" and r.stderr.startswith("err\n"), (via, r.stdout, r.stderr)
        assert (tmp_path / "x.dat").read_text() == "x" * 5000
        assert r.bytes("x.dat") == 5000, (via, r.stderr)


GO_LOOP_SOURCE = """\
package main

import (
	"os"
	"time"
)

// Writes 4 KiB blocks to one file, one every millisecond, until killed.

//go:noinline
func loopWriter(path string) {
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	b := make([]byte, 4096)
	for {
		if _, err := f.Write(b); err != nil {
			panic(err)
		}
		time.Sleep(time.Millisecond)
	}
}

func main() { loopWriter(os.Args[1]) }
"""


@needs_bpf
def test_attach_records_the_writes_made_while_attached(tmp_path: Path) -> None:
    if GO is None:
        pytest.skip("go is not installed")
    (tmp_path / "main.go").write_text(GO_LOOP_SOURCE)
    (tmp_path / "go.mod").write_text("module goloop\n\ngo 1.21\n")
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    exe = tmp_path / "goloop"
    subprocess.run([GO, "build", "-o", str(exe), "."], cwd=tmp_path, env=env, check=True, timeout=300)
    data = tmp_path / "loop.dat"
    writer = subprocess.Popen([str(exe), str(data)])
    try:
        while not data.exists() or data.stat().st_size == 0:  # the file is open before we attach
            assert writer.poll() is None
            time.sleep(0.01)
        trace = tmp_path / "t.parquet"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pcstream",
                "record",
                "--pid",
                str(writer.pid),
                "--duration",
                "2",
                "--no-coalesce",
                "-o",
                str(trace),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert writer.poll() is None, "the writer runs on after the capture"
    finally:
        writer.kill()
        writer.wait()
    assert r.returncode == 0, r.stderr
    meta = tracemeta.footer(trace)
    assert meta[tracemeta.KEY_CAPTURE] == "bpf"
    paths = tracemeta.paths(meta)
    writes = [x for x in pq.read_table(trace).to_pylist() if x["op"] == "write"]
    assert writes and all(paths[x["path"]] == str(data) for x in writes), "named from /proc/PID/fd"
    # every write made while attached: the recorded ranges tile [first offset, last end)
    first, last = writes[0]["offset"], writes[-1]["offset"] + writes[-1]["len"]
    recorded = sum(x["len"] for x in writes)
    assert abs(recorded - (last - first)) <= (last - first) // 100, (recorded, first, last)
    assert recorded >= 100 * 4096, "2 s of a write per millisecond"
    assert len({x["pc"] for x in writes}) == 1
    frames = json.loads(meta[tracemeta.KEY_PCS])[str(writes[0]["pc"])]
    assert "main.loopWriter" in [f.get("symbol") for f in frames], frames


def test_unknown_option_before_the_command_is_a_usage_error(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pcstream",
            "record",
            "--bogus",
            "-o",
            str(tmp_path / "t.parquet"),
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "--bogus" in r.stderr, r.stderr
    assert not (tmp_path / "t.parquet").exists()


@needs_bpf
def test_io_uring_writes_of_a_shim_process_are_recorded(tmp_path: Path) -> None:
    """tests/shim/uringwrite.c (dynamic: the shim records its opens, BPF its ring I/O): every byte,
    flagged VIA_URING, one signature per submitting path (a registered file's too), the same in two
    runs."""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "uringwrite"
    src = ROOT / "tests" / "shim" / "uringwrite.c"
    subprocess.run([CC, "-O2", "-fno-inline", "-o", str(exe), str(src)], check=True)
    sigs = []
    for _ in range(2):
        r = Run(tmp_path, [str(exe)], "--no-coalesce")
        if r.status == 1:
            pytest.skip("io_uring is not available (io_uring_setup failed)")
        assert r.status == 0 and r.stdout == "uringwrite ok\n", r.stderr
        assert r.meta[tracemeta.KEY_CAPTURE] == "shim+bpf"
        for name, size in (("a.dat", 64 * 4096), ("b.dat", 128 * 4096), ("c.dat", 32 * 4096)):
            assert (tmp_path / name).stat().st_size == size
            assert r.bytes(name) == size, (name, r.stderr)
            assert all(x["flags"] & URING for x in r.writes(name))
        assert "used io_uring" not in r.stderr, "no warning of lost ring I/O: BPF recorded it"
        assert len(r.sigs("a.dat")) == 1 and len(r.sigs("b.dat")) == 1 and r.sigs("a.dat") != r.sigs("b.dat")
        assert "uring_short" in r.symbols(next(iter(r.sigs("a.dat"))))
        assert "uring_long" in r.symbols(next(iter(r.sigs("b.dat"))))
        assert len(r.sigs("c.dat")) == 1 and "uring_fixed" in r.symbols(next(iter(r.sigs("c.dat"))))
        assert [x["op"] for x in r.rows].count("fsync") == 1
        sigs.append((r.sigs("a.dat"), r.sigs("b.dat")))
        info = subprocess.run(
            [sys.executable, "-m", "pcstream", "info", "--json", str(r.trace)], capture_output=True, text=True
        )
        assert json.loads(info.stdout)["io_uring"] == {"writes": 224, "bytes": 224 * 4096}
    assert sigs[0] == sigs[1]


@needs_bpf
def test_file_calls_are_the_shims_under_bpf(tmp_path: Path) -> None:
    """The calls of one file, recorded by BPF alone, as the shim records them: ops, offsets,
    lengths and paths (a relative path through a directory descriptor, a rename's new path)."""
    script = textwrap.dedent(
        """\
        import os
        d = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
        fd = os.open("a.dat", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644, dir_fd=d)
        os.write(fd, b"x" * 100)
        os.pwrite(fd, b"y" * 50, 1000)
        os.writev(fd, [b"z" * 10, b"w" * 20])
        os.fsync(fd)
        os.ftruncate(fd, 500)
        os.close(fd)
        os.rename("sub/a.dat", "sub/b.dat")
        os.unlink("sub/b.dat")
        """
    )
    (tmp_path / "sub").mkdir()
    sub = str((tmp_path / "sub").resolve())

    def calls(via: str) -> list[tuple[Any, ...]]:
        r = Run(tmp_path, [sys.executable, "-c", script], "--via", via, "--no-coalesce")
        assert r.status == 0, r.stderr
        mine = [x for x in r.rows if x["path"] and r.paths[x["path"]].startswith(sub + "/")]
        return [
            (x["op"], x["offset"], x["len"], r.paths[x["path"]], r.paths.get(x["path2"], "")) for x in mine
        ]

    shim, bpf = calls("shim"), calls("bpf")
    a, b = f"{sub}/a.dat", f"{sub}/b.dat"
    assert [c for c in bpf if c[0] == "write"] == [
        ("write", 0, 100, a, ""),
        ("write", 1000, 50, a, ""),
        ("write", 100, 30, a, ""),
    ], bpf
    assert [c[0] for c in bpf] == [
        "open",
        "write",
        "write",
        "write",
        "fsync",
        "truncate",
        "close",
        "rename",
        "unlink",
    ]
    assert (
        ("truncate", 500, 0, a, "") in bpf
        and ("rename", 0, 0, a, b) in bpf
        and ("unlink", 0, 0, b, "") in bpf
    )
    assert [c for c in shim if c[0] == "write"] == [c for c in bpf if c[0] == "write"]


@needs_bpf
def test_auto_falls_back_to_the_shim_when_the_capture_cannot_attach(tmp_path: Path) -> None:
    """A loader that fails to attach (exit 3, before running the command, as pcsys-capture does)
    leaves auto to the shim alone, with one warning; --via bpf then fails with one line."""
    fake = tmp_path / "fake-capture"
    fake.write_text("#!/bin/sh\necho 'pcsys-capture: cannot attach: simulated' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = dict(os.environ, **{bpfrun.CAPTURE_ENV: str(fake)})
    script = "open('f.dat', 'w').write('abc')"
    r = Run(tmp_path, [sys.executable, "-c", script], env=env)
    assert r.status == 0, r.stderr
    assert r.meta[tracemeta.KEY_CAPTURE] == "shim" and r.bytes("f.dat") == 3
    assert len([w for w in r.warnings() if "could not attach" in w]) == 1, r.stderr
    b = Run(tmp_path, [sys.executable, "-c", script], "--via", "bpf", env=env)
    assert b.status == 1 and "could not attach" in b.stderr.splitlines()[-1], b.stderr


NOFP_SOURCE = """\
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
static char buf[4096];
__attribute__((noinline)) void log_append(int fd) {
    for (int i = 0; i < 200; i++) if (write(fd, buf, sizeof buf) != sizeof buf) _exit(1);
}
__attribute__((noinline)) void page_update(int fd) {
    for (int i = 0; i < 300; i++)
        if (pwrite(fd, buf, sizeof buf, (off_t)(i % 50) * 4096) != sizeof buf) _exit(1);
}
int main(void) {
    memset(buf, 'x', sizeof buf);
    int a = open("log.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open("pages.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    log_append(a);
    page_update(b);
    return close(a) || close(b);
}
"""


@needs_bpf
@pytest.mark.parametrize("cflags", [["-O2"], ["-O2", "-static"]])
def test_code_without_frame_pointers_gets_its_call_paths_under_bpf(tmp_path: Path, cflags: list[str]) -> None:
    """A C program built as distributions build them (-O2: rbp is an ordinary register, so the
    kernel's frame-pointer walk ends in the C library): the capture unwinds the copied stack with
    the modules' call-frame information, so each write path has its own signature, named, the same
    in two runs even though the process has ended before most of its events are read."""
    if CC is None:
        pytest.skip("no C compiler")
    if "-static" in cflags and not Path("/usr/lib/x86_64-linux-gnu/libc.a").exists():
        pytest.skip("no static C library (libc6-dev's libc.a)")
    src = tmp_path / "nofp.c"
    src.write_text(NOFP_SOURCE)
    exe = tmp_path / "nofp"
    subprocess.run([CC, *cflags, "-o", str(exe), str(src)], check=True)
    sigs = []
    for _ in range(2):
        r = Run(tmp_path, [str(exe)], "--via", "bpf", "--no-coalesce")
        assert r.status == 0, r.stderr
        assert r.bytes("log.dat") == 200 * 4096 and r.bytes("pages.dat") == 300 * 4096
        (log,), (pages,) = r.sigs("log.dat"), r.sigs("pages.dat")
        assert log != pages and 0 not in (log, pages)
        # the C library's wrappers are skipped as a module; in a static program they are the
        # program's own code and stay as its innermost frames
        assert "log_append" in r.symbols(log)[:2] and "page_update" in r.symbols(pages)[:2], r.pcs
        sigs.append((log, pages))
    assert sigs[0] == sigs[1]
