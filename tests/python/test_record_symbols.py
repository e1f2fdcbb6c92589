"""Names for stripped programs: separate debug files found by build-id (DIR/.build-id/xx/yyyy.debug)
and by path (DIR/usr/...), given with ``pcstream record --symbols DIR`` or in /usr/lib/debug; a
debug file of another build, or a module replaced since the run, names nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from pcstream.record import elf, symbols
from support import ROOT, invoke

CC = shutil.which("cc") or shutil.which("gcc")
TOOLS = all(shutil.which(t) for t in ("objcopy", "strip", "nm", "addr2line"))
SHIM_SO = ROOT / "python" / "pcstream" / "_shim" / "pcshim.so"
pytestmark = pytest.mark.skipif(CC is None or not TOOLS, reason="needs cc and binutils (objcopy, strip, nm)")

SOURCE = """#include <fcntl.h>
#include <unistd.h>
static __attribute__((noinline)) int deep_helper(int fd) { return write(fd, "data", 4) == 4 ? 0 : 1; }
static __attribute__((noinline)) int middle_helper(int fd) { int r = deep_helper(fd); return r + VARIANT; }
int main(void)
{
    int fd = open("d.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int r = middle_helper(fd);
    close(fd);
    return r;
}
"""
FUNCTIONS = ("deep_helper", "middle_helper", "main")


def build(out: Path, name: str, variant: int) -> dict[str, Path]:
    """A program built with -g, its debug file (objcopy --only-keep-debug) and a stripped copy."""
    src = out / f"{name}.c"
    src.write_text(SOURCE.replace("VARIANT", str(variant)))
    full = out / f"{name}.full"
    flags = ["-O0", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id"]
    subprocess.run([str(CC), *flags, "-o", str(full), str(src)], check=True)
    debug = out / f"{name}.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    stripped = out / name
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), str(full)], check=True)
    return {"full": full, "debug": debug, "stripped": stripped}


@pytest.fixture(scope="module")
def progs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    out = tmp_path_factory.mktemp("stripped")
    return {"a": build(out, "prog", 0), "other": build(out, "other", 1)}


def offsets(full: Path) -> dict[str, int]:
    """A return address inside each function (its start + 8), as the shim records offsets."""
    table = subprocess.run(["nm", str(full)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in table.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in FUNCTIONS:
            found[parts[2]] = int(parts[0], 16) + 8
    assert set(found) == set(FUNCTIONS)
    return found


def trace_with_frames(path: Path, module: Path, module_id: str, at: dict[str, int]) -> Path:
    frames = [{"module": str(module), "module_id": module_id, "offset": at[f]} for f in FUNCTIONS]
    table = pa.table({"pc": pa.array([1], pa.uint64())})
    meta = {tracemeta.KEY_FORMAT: "1", tracemeta.KEY_PCS: json.dumps({"1": frames})}
    pq.write_table(table.replace_schema_metadata(meta), path)
    return path


def names(trace: Path) -> list[Any]:
    return [f.get("symbol") for f in json.loads(tracemeta.footer(trace)[tracemeta.KEY_PCS])["1"]]


def by_build_id(top: Path, module: Path, debug: Path) -> Path:
    build = elf.build_id(module)
    assert build, "the program has a build-id"
    where = top / ".build-id" / build[:1].hex() / f"{build[1:].hex()}.debug"
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(debug, where)
    return where


def by_path(top: Path, module: Path, debug: Path) -> Path:
    where = top / f"{str(module.resolve()).lstrip('/')}.debug"
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(debug, where)
    return where


def test_the_shims_module_id_is_the_hash_of_the_build_id(progs: dict[str, dict[str, Path]]) -> None:
    a = progs["a"]
    build = elf.build_id(a["stripped"])
    assert build and build == elf.build_id(a["full"]) == elf.build_id(a["debug"])
    assert elf.build_id(progs["other"]["stripped"]) != build
    assert elf.module_id(str(a["stripped"]), build) == f"{elf.shim_hash(build):016x}"
    assert elf.shim_hash(b"") == elf._mix64(0xCBF29CE484222325)  # FNV-1a offset basis, then mixed
    assert elf.build_id(ROOT / "README.md") is None and elf.debuglink(ROOT / "README.md") is None


@pytest.mark.parametrize("layout", ["build-id", "path"])
def test_a_stripped_module_is_named_from_its_debug_file(
    progs: dict[str, dict[str, Path]], tmp_path: Path, layout: str
) -> None:
    a = progs["a"]
    at = offsets(a["full"])
    module_id = elf.module_id(str(a["stripped"]), elf.build_id(a["stripped"]))
    trace = trace_with_frames(tmp_path / "t.parquet", a["stripped"], module_id, at)
    alone = symbols.symbolize(trace)
    assert alone.named == 0 and names(trace) == [None, None, None], "stripped: no names"
    top = tmp_path / "dbg"
    placed = (by_build_id if layout == "build-id" else by_path)(top, a["stripped"], a["debug"])
    naming = symbols.symbolize(trace, [top])
    assert names(trace) == list(FUNCTIONS)
    assert naming.named == 3 and naming.debug_files == {str(a["stripped"]): str(placed)}


def test_a_debug_file_of_another_build_or_a_changed_module_names_nothing(
    progs: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    a, other = progs["a"], progs["other"]
    at = offsets(a["full"])
    module_id = elf.module_id(str(a["stripped"]), elf.build_id(a["stripped"]))
    top = tmp_path / "dbg"
    by_path(top, a["stripped"], other["debug"])  # the right place, the wrong build
    assert symbols.find_debug_file(str(a["stripped"]), elf.build_id(a["stripped"]), [top]) is None
    trace = trace_with_frames(tmp_path / "t.parquet", a["stripped"], module_id, at)
    assert symbols.symbolize(trace, [top]).named == 0
    # the module on disk is not the one recorded (its id differs): not named, and said
    by_build_id(top, a["stripped"], a["debug"])
    changed = trace_with_frames(tmp_path / "c.parquet", a["stripped"], "0123456789abcdef", at)
    summary: dict[str, Any] = {}
    symbols.symbolize_or_warn(changed, summary, [top])
    assert summary["symbolized"] == 0 and names(changed) == [None, None, None]
    assert any("changed on disk since the run" in w for w in summary["warnings"])
    # frames without a module_id (older traces) are named as before
    legacy = trace_with_frames(tmp_path / "l.parquet", a["full"], "", at)
    assert symbols.symbolize(legacy).named == 3


def test_usr_lib_debug_is_always_searched() -> None:
    libc = Path("/lib/x86_64-linux-gnu/libc.so.6")
    build = elf.build_id(libc) if libc.exists() else None
    if build is None:
        pytest.skip("no x86-64 glibc with a build-id here")
    expected = symbols.DEBUG_ROOT / ".build-id" / build[:1].hex() / f"{build[1:].hex()}.debug"
    if not expected.exists():
        pytest.skip("glibc's debug file is not installed (apt-get install libc6-dbg)")
    assert symbols.find_debug_file(str(libc), build, []) == expected


@pytest.mark.skipif(not SHIM_SO.is_file(), reason="needs the record shim (make install)")
def test_record_symbols_dir_names_a_stripped_program(
    progs: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    a = progs["a"]
    top = tmp_path / "dbg"
    by_build_id(top, a["stripped"], a["debug"])
    base = [sys.executable, "-m", "pcstream", "record", "--method", "fp", "-o", str(tmp_path / "t.parquet")]

    def run(*opts: str) -> tuple[str, list[str]]:
        proc = subprocess.run(
            [*base, *opts, "--", str(a["stripped"])],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        pcs = json.loads(tracemeta.footer(tmp_path / "t.parquet")[tracemeta.KEY_PCS])
        return proc.stderr, [
            f.get("symbol", "")
            for frames in pcs.values()
            for f in frames
            if f["module"] == str(a["stripped"])
        ]

    _err, plain = run()
    assert not set(FUNCTIONS) & set(plain), "stripped: its own frames have no names"
    err, named = run("--symbols", str(top))
    assert {"deep_helper", "middle_helper", "main"} <= set(named), named
    assert "frames named" in err


def test_symbols_options_are_checked(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    both = invoke("record", "--symbols", tmp_path, "--no-symbols", "-o", out, "--", "true")
    assert both.status == 2 and "exclude each other" in both.stderr
    missing = invoke("record", "--symbols", tmp_path / "nope", "-o", out, "--", "true")
    assert missing.status == 2 and "does not exist" in missing.stderr
