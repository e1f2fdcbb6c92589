"""pcstream record of a Java program: JFR's file events give each write its Java call path as PC
(python/pcstream/record/jvm.py). A real program compiled here with javac and recorded twice, and
the join of events to shim records on a made-up recording and log directory."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pcstream import api, tracemeta
from pcstream.options import RecordOptions
from pcstream.record import elf, jvm
from test_record import bpf_missing

JAVA_TOOLS = {tool: shutil.which(tool) for tool in ("java", "javac")}
needs_java = pytest.mark.skipif(
    not all(JAVA_TOOLS.values()),
    reason=f"needs a JDK: {', '.join(t for t, p in JAVA_TOOLS.items() if p is None)} not found",
)

PAGE = 4096
N = 300  # writes of each call site
SOURCE = """
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.*;

public class W {
    static final byte[] PAGE = new byte[4096];
    static void shortPath(String f, int n) throws IOException {
        try (FileOutputStream o = new FileOutputStream(f)) { for (int i = 0; i < n; i++) o.write(PAGE); }
    }
    static void longPath(String f, int n) throws IOException {
        try (FileOutputStream o = new FileOutputStream(f)) { for (int i = 0; i < n; i++) o.write(PAGE); }
    }
    static void sharedA(RandomAccessFile r) throws IOException { r.write(PAGE); }
    static void sharedB(RandomAccessFile r) throws IOException { r.write(PAGE); }
    static void forced(String f) throws IOException {
        try (FileChannel c = FileChannel.open(Paths.get(f), StandardOpenOption.CREATE,
                                              StandardOpenOption.WRITE)) {
            c.write(ByteBuffer.wrap(PAGE));
            c.force(true);
        }
    }
    public static void main(String[] a) throws IOException {
        int n = Integer.parseInt(a[0]);
        shortPath("short.dat", n);
        longPath("long.dat", 2 * n);
        try (RandomAccessFile r = new RandomAccessFile("same.dat", "rw")) {
            for (int i = 0; i < n; i++) { sharedA(r); sharedB(r); }
        }
        forced("forced.dat");
        System.out.println("wrote " + n);
        System.err.println("done");
        System.exit(3);
    }
}
"""
FILES = {"short.dat": N, "long.dat": 2 * N, "same.dat": 2 * N, "forced.dat": 1}


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("java")
    (out / "W.java").write_text(SOURCE)
    subprocess.run([JAVA_TOOLS["javac"], "-g", "-d", str(out), str(out / "W.java")], check=True)
    return out


def java_cmd(classes: Path) -> list[str]:
    return ["java", "-cp", str(classes), "W", str(N)]


class Run:
    def __init__(self, cwd: Path, proc: subprocess.CompletedProcess[str], trace: Path) -> None:
        self.status, self.stdout = proc.returncode, proc.stdout
        lines = proc.stderr.splitlines(keepends=True)
        self.stderr = "".join(x for x in lines if not x.startswith("pcstream record"))
        self.summary = "".join(x for x in lines if x.startswith("pcstream record"))
        self.rows: list[dict[str, Any]] = pq.read_table(trace).to_pylist()
        meta = tracemeta.footer(trace)
        self.paths = tracemeta.paths(meta)
        self.pcs = json.loads(meta[tracemeta.KEY_PCS])

    def by_file(self, op: str = "write") -> dict[str, dict[int, int]]:
        """file name -> signature -> bytes (writes) or count (other ops)."""
        out: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for r in self.rows:
            if r["op"] == op and r["path"]:
                out[Path(self.paths[r["path"]]).name][r["pc"]] += r["len"] if op == "write" else 1
        return out

    def symbols(self, pc: int) -> list[str]:
        return [f.get("symbol", "") for f in self.pcs[str(pc)]]


def record(cwd: Path, cmd: list[str]) -> Run:
    trace = cwd / "trace.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "-o", str(trace), "--", *cmd],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert trace.exists(), proc.stderr
    return Run(cwd, proc, trace)


@needs_java
def test_java_call_sites_get_their_own_signatures(classes: Path, tmp_path: Path) -> None:
    plain_dir, runs = tmp_path / "plain", []
    plain_dir.mkdir()
    plain = subprocess.run(java_cmd(classes), cwd=plain_dir, capture_output=True, text=True, timeout=120)
    assert (plain.returncode, plain.stdout, plain.stderr) == (3, f"wrote {N}\n", "done\n")
    for k in range(2):
        cwd = tmp_path / f"run{k}"
        cwd.mkdir()
        run = record(cwd, java_cmd(classes))
        # the program's outputs, status and files are those of a plain run
        assert (run.status, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr), (
            run.summary
        )
        for name in FILES:
            assert (cwd / name).read_bytes() == (plain_dir / name).read_bytes()
        runs.append(run)
    for run in runs:
        files = run.by_file()
        for name, writes in FILES.items():  # every byte recorded
            assert abs(sum(files[name].values()) - writes * PAGE) <= 0.01 * writes * PAGE, (name, files[name])
        short, long_ = (only(files[name]) for name in ("short.dat", "long.dat"))
        assert short != long_
        assert run.symbols(short)[:2] == ["java.io.FileOutputStream.write", "W.shortPath"]
        assert run.symbols(long_)[:2] == ["java.io.FileOutputStream.write", "W.longPath"]
        assert {f["module"] for f in run.pcs[str(short)]} == {jvm.JAVA_MODULE}
        # the same file from two methods: two signatures, each with its bytes
        same = files["same.dat"]
        assert sorted(same.values()) == [N * PAGE, N * PAGE], same
        assert sorted(run.symbols(pc)[1] for pc in same) == ["W.sharedA", "W.sharedB"]
        # FileChannel.force: the fsync carries the Java path too
        (sync_pc,) = run.by_file("fsync")["forced.dat"]
        assert "W.forced" in run.symbols(sync_pc)
        # JFR's own files (its recording, repository and our settings, in the log directory) are
        # not in the trace; the JDK's own settings files it reads are
        assert not [p for p in run.paths.values() if p.endswith(".jfr") or "pcstream-record-" in p]
        assert f"{5 * N + 1} writes given their Java call path" in run.summary, run.summary
    sigs = [{name: set(pcs) for name, pcs in run.by_file().items() if name in FILES} for run in runs]
    assert sigs[0] == sigs[1], "the same signatures in two runs"


def only(pcs: dict[int, int]) -> int:
    assert len(pcs) == 1, pcs
    return next(iter(pcs))


@needs_java
def test_a_plain_program_is_left_alone(tmp_path: Path) -> None:
    run = jvm.prepare(["sh", "-c", "true"], "/bin/sh", tmp_path, 12)
    # its command is unchanged; only a JVM it starts itself would take JFR's options (the shim's
    # variable, recording into the children directory)
    assert run.cmd == ["sh", "-c", "true"] and not run.top
    assert run.env is not None and set(run.env) - set(os.environ) == {jvm.SHIM_JFR_ENV}
    assert f"filename={tmp_path.resolve() / 'jfr' / jvm.CHILDREN_DIR} " in run.env[jvm.SHIM_JFR_ENV]
    assert run.attribute(tmp_path) == {}, "no JVM ran: nothing to join, no warning"
    java = jvm.prepare(["java", "-version"], JAVA_TOOLS["java"] or "", tmp_path, 7)
    assert java.cmd[0] == "java" and java.cmd[-1] == "-version" and "stackdepth=7" in " ".join(java.cmd)
    assert java.top and (tmp_path / "jfr" / jvm.SETTINGS_FILE).is_file()
    odd = tmp_path / "a,b"
    refused = jvm.prepare(["java", "-version"], JAVA_TOOLS["java"] or "", odd, 7)
    assert (refused.cmd, refused.jfr_dir, odd.exists()) == (["java", "-version"], None, False)
    (warning,) = refused.attribute(odd)["warnings"]
    assert warning.startswith("JFR not started") and "comma or white space" in warning
    plain = jvm.prepare(["sh", "-c", "true"], "/bin/sh", odd, 7)
    assert (plain.cmd, plain.env, plain.jfr_dir) == (["sh", "-c", "true"], None, None)


# Writes through a FileChannel opened with O_DIRECT (Cassandra's commit log in `direct` mode):
# the shim marks them (VIA_DIRECT) and JFR reports them as any FileChannel write.
DIRECT_SOURCE = """
import com.sun.nio.file.ExtendedOpenOption;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.*;

public class D {
    static void direct(String f, int n) throws Exception {
        try (FileChannel c = FileChannel.open(Paths.get(f), StandardOpenOption.CREATE,
                                              StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
            ByteBuffer b = ByteBuffer.allocateDirect(3 * 4096).alignedSlice(4096);
            for (int i = 0; i < n; i++) { b.clear().limit(4096); c.write(b); }
        }
    }
    public static void main(String[] a) throws Exception {
        direct("direct.dat", Integer.parseInt(a[0]));
        System.out.println("direct done");
    }
}
"""


def o_direct_works(where: Path) -> bool:
    try:
        fd = os.open(where / "probe", os.O_CREAT | os.O_WRONLY | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    (where / "probe").unlink()
    return True


@needs_java
def test_jvms_a_script_starts_get_java_call_paths(classes: Path, tmp_path: Path) -> None:
    """Two JVMs started by a shell script (not the recorded command): each gets JFR's options
    from the shim (its own recording), and their writes, O_DIRECT ones included, their Java
    call paths; the script's output, status and files are those of a plain run."""
    (classes / "D.java").write_text(DIRECT_SOURCE)
    subprocess.run([JAVA_TOOLS["javac"], "-g", "-d", str(classes), str(classes / "D.java")], check=True)
    script = (
        f'mkdir -p a b && cd a && java -cp {classes} W {N}; echo "W exited $?"; '
        f"cd ../b && java -cp {classes} D 40; exit 5"
    )
    plain_dir, cwd = tmp_path / "plain", tmp_path / "rec"
    plain_dir.mkdir()
    cwd.mkdir()
    if not o_direct_works(cwd):
        pytest.skip(f"{cwd}: the file system refuses O_DIRECT")
    plain = subprocess.run(["sh", "-c", script], cwd=plain_dir, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 5 and plain.stdout == f"wrote {N}\nW exited 3\ndirect done\n", plain.stderr
    run = record(cwd, ["sh", "-c", script])
    assert (run.status, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr), run.summary
    for name in FILES:
        assert (cwd / "a" / name).read_bytes() == (plain_dir / "a" / name).read_bytes()
    files = run.by_file()
    short, long_ = (only(files[name]) for name in ("short.dat", "long.dat"))
    assert run.symbols(short)[:2] == ["java.io.FileOutputStream.write", "W.shortPath"]
    assert run.symbols(long_)[:2] == ["java.io.FileOutputStream.write", "W.longPath"]
    direct = only(files["direct.dat"])
    assert files["direct.dat"][direct] == 40 * PAGE
    assert run.symbols(direct)[:2] == ["sun.nio.ch.FileChannelImpl.write", "D.direct"], run.symbols(direct)
    assert f"{5 * N + 1 + 40} writes given their Java call path" in run.summary, run.summary
    assert not [p for p in run.paths.values() if p.endswith(".jfr") or "pcstream-record-" in p]


# A program that links libjvm and runs W.main in the JVM it creates (JNI): its JVM only takes
# options from JAVA_TOOL_OPTIONS.
LAUNCHER = r"""
#include <jni.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    char cp[4096];
    snprintf(cp, sizeof cp, "-Djava.class.path=%s", argv[1]);
    JavaVMOption opt[1] = {{.optionString = cp}};
    JavaVMInitArgs args = {.version = JNI_VERSION_10, .nOptions = 1, .options = opt};
    JavaVM *vm;
    JNIEnv *env;
    if (JNI_CreateJavaVM(&vm, (void **)&env, &args) != JNI_OK) return 2;
    jclass w = (*env)->FindClass(env, "W");
    jmethodID m = w ? (*env)->GetStaticMethodID(env, w, "main", "([Ljava/lang/String;)V") : NULL;
    if (m == NULL) return 2;
    jclass str = (*env)->FindClass(env, "java/lang/String");
    jobjectArray a = (*env)->NewObjectArray(env, 1, str, (*env)->NewStringUTF(env, argv[2]));
    (*env)->CallStaticVoidMethod(env, w, m, a);
    (*vm)->DestroyJavaVM(vm);
    return 0;
}
"""


@needs_java
def test_a_program_linking_libjvm_gets_jfr_through_java_tool_options(classes: Path, tmp_path: Path) -> None:
    home = Path(os.path.realpath(JAVA_TOOLS["javac"] or "")).parents[1]
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not (home / "include" / "jni.h").is_file():
        pytest.skip(f"needs a C compiler and {home}/include/jni.h")
    (tmp_path / "launch.c").write_text(LAUNCHER)
    exe, server = tmp_path / "launch", home / "lib" / "server"
    subprocess.run(
        [
            cc,
            "-O2",
            f"-I{home}/include",
            f"-I{home}/include/linux",
            "-o",
            str(exe),
            str(tmp_path / "launch.c"),
        ]
        + [f"-L{server}", f"-Wl,-rpath,{server}", "-ljvm"],
        check=True,
    )
    assert jvm.is_jvm(str(exe)) == "libjvm" and "libjvm.so" in (elf.needed(exe) or [])
    cmd = [str(exe), str(classes), str(N)]
    plain = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    run = record(tmp_path, cmd)
    assert (run.status, run.stdout) == (plain.returncode, plain.stdout) == (3, f"wrote {N}\n")
    # JAVA_TOOL_OPTIONS makes the JVM say so on stderr: the one line it adds
    picked = [
        x for x in run.stderr.splitlines(keepends=True) if x.startswith("Picked up JAVA_TOOL_OPTIONS: ")
    ]
    assert len(picked) == 1 and run.stderr.replace(picked[0], "") == plain.stderr
    files = run.by_file()
    assert run.symbols(only(files["short.dat"]))[1] == "W.shortPath"
    assert sorted(run.symbols(pc)[1] for pc in files["same.dat"]) == ["W.sharedA", "W.sharedB"]


# --------------------------------------------------------------------------- the join, made up

TID = 100
NATIVE = 0x77


def shim_logs(d: Path, records: list[tuple[int, int, int, str]], paths: list[str]) -> None:
    """A process image's logs: (ts_ns, op, len, path) records of thread TID, all with the native
    signature NATIVE."""
    hashes = {p: 0x1000 + k for k, p in enumerate(paths)}
    head = b"PCSHIM01" + struct.pack("<6I", 1, 88, 42, 1, 12, 3)
    body = b"".join(
        jvm.RECORD.pack(ts, 0, n, NATIVE if op == 2 else 0, 1, 2, hashes[p], 0, 42, TID, 5, 0, op, 1, 0)
        for ts, op, n, p in records
    )
    (d / "42.1.bin").write_bytes(head + body)
    txt = "".join(f"P {hashes[p]:016x} {len(p)} {p}\n" for p in paths)
    txt += f"S {NATIVE:016x} 1\nF {9:016x} 40 4 /lib\nW unplaced: 5 {d}/jfr/run.jfr: why\nE {len(records)}\n"
    (d / "42.1.txt").write_text(txt)


def event(path: str | None, n: int, start_s: float, method: str) -> bytes:
    """One event as the reader prints it (python/pcstream/record/JfrWrites.java), 1 ms long."""
    head = f"E W {TID} {round(start_s * 1e9)} 1000000 {n} 2 " + ("0 " if path is None else f"1 {path}")
    return f"{head}\n83 java.io.FileOutputStream.write\n7 app.Main.{method}\n".encode()


def test_join_on_a_made_up_recording(tmp_path: Path) -> None:
    a, b, out = str(tmp_path / "a.dat"), str(tmp_path / "b.dat"), str(tmp_path / "out.log")
    jfr_file = str(tmp_path / "jfr" / "run.jfr")
    shim_logs(
        tmp_path,
        [
            (1, 1, 0, jfr_file),  # JFR's own file: dropped
            (1_000_000_000, 2, 4096, a),  # event 1
            (2_000_000_000, 2, 2048, a),  # event 2: one write() call split in two
            (2_000_100_000, 2, 2048, a),
            (3_000_000_000, 2, 100, a),  # no event (native code): keeps NATIVE
            (4_000_000_000, 2, 4096, a),  # event 4, after an event of the same thread that found no write
            (7_000_000_000, 2, 6, out),  # event 7: stdout redirected to a file, no path in JFR
        ],
        [a, b, jfr_file, out],
    )
    printed = [
        event("a.dat", 4096, 1.0, "one"),
        event("a.dat", 4096, 2.0, "two"),
        event("a.dat", 555, 3.5, "three"),  # no write of these bytes then: counted
        event("a.dat", 4096, 4.0, "four"),
        event("b.dat", 10, 5.0, "five"),  # a file without writes: counted
        event(None, 6, 6.0, "six"),  # no path (stdout to a pipe): counted
        event(None, 6, 7.0, "seven"),  # no path, a write of its thread: joined
    ]
    events = list(jvm.parse_events(io.BytesIO(b"".join(printed)), 0, str(tmp_path)))
    assert events[0].path == a and events[5].path is None and events[0].end_ns == 1_001_000_000
    logs = jvm.JvmLogs.read(tmp_path, tmp_path / "jfr")
    join = jvm.Join()
    join.run(logs, events)
    logs.rewrite(join.assigned, join.sigs)
    summary = join.summary(logs, None)
    assert (summary["java_events"], summary["java_writes"], summary["java_bytes"]) == (7, 5, 3 * 4096 + 6)
    assert (summary["java_unmatched_events"], summary["java_dropped_records"]) == (3, 1)
    assert (join.no_path, join.no_file, join.unmatched) == (1, 1, 1)
    assert "3 of 7 JFR file events found no write" in summary["warnings"][0]

    trace = tmp_path / "t.parquet"
    api.record_convert(str(tmp_path), str(trace), "test", RecordOptions(coalesce=False))
    rows = [r for r in pq.read_table(trace).to_pylist() if r["op"] == "write"]
    pcs = json.loads(tracemeta.footer(trace)[tracemeta.KEY_PCS])
    names = [[f.get("symbol") for f in pcs[str(r["pc"])]] for r in rows]
    assert [n[1] if n[0] else None for n in names] == [
        "app.Main.one",
        "app.Main.two",
        "app.Main.two",
        None,
        "app.Main.four",
        "app.Main.seven",
    ]
    assert rows[3]["pc"] == NATIVE and rows[1]["pc"] == rows[2]["pc"]
    assert pcs[str(rows[0]["pc"])][0] == {
        "module": "java",
        "module_id": f"{jvm.JAVA_MODULE_ID:016x}",
        "offset": 83,
        "symbol": "java.io.FileOutputStream.write",
    }
    assert rows[0]["pc"] == jvm.java_signature([("java.io.FileOutputStream.write", 83), ("app.Main.one", 7)])
    assert "jfr" not in json.dumps(tracemeta.paths(tracemeta.footer(trace)))
    assert (tmp_path / "42.1.txt").read_text().endswith("E 6\n")
    assert jvm.path_table(b"P 00000000000000ff 99 /torn") is None


def test_reader_output_is_parsed_exactly() -> None:
    printed = b"E F 7 1000 5 1 1 1 /a\\\\b\\nc d\n-1 x.Y.\\nz\nE W 8 2000 0 3 0 0 \n"
    force, write = jvm.parse_events(io.BytesIO(printed), 0, "/")
    assert (force.force, force.tid, force.path, force.bytes, force.frames) == (
        True,
        7,
        "/a\\b\nc d",
        1,
        (("x.Y.\nz", 0),),
    )
    assert (write.force, write.path, write.bytes, write.start_ns, write.end_ns) == (
        False,
        None,
        3,
        2000,
        2000,
    )
    with pytest.raises(jvm.JfrError, match="unexpected line"):
        list(jvm.parse_events(io.BytesIO(b"Exception in thread main\n"), 0, "/"))


@pytest.mark.parametrize("tool", [None, "java"])
def test_unreadable_recording_keeps_native_signatures(tmp_path: Path, tool: str | None) -> None:
    if tool is not None and JAVA_TOOLS["java"] is None:
        pytest.skip("needs the java launcher of a JDK")
    a, jfr_file = str(tmp_path / "a"), tmp_path / "jfr" / "run.jfr"
    shim_logs(tmp_path, [(1, 1, 0, str(jfr_file)), (5, 2, 10, a)], [a, str(jfr_file)])
    jfr_file.parent.mkdir()
    jfr_file.write_bytes(b"not a recording")
    run = jvm.JavaRun(["java"], None, tmp_path / "jfr", 12, tool and JAVA_TOOLS["java"], 0, str(tmp_path))
    summary = run.attribute(tmp_path)
    (warning,) = summary["warnings"]
    assert warning.startswith(
        "the JVM's JFR recording could not be read, its writes keep native signatures: "
    )
    assert "\n" not in warning and (tool is not None or "no 'java' launcher found" in warning), warning
    assert (summary["java_writes"], summary["java_dropped_records"]) == (0, 1)
    records = list(jvm.RECORD.iter_unpack((tmp_path / "42.1.bin").read_bytes()[jvm.HEADER_BYTES :]))
    assert [(r[3], r[12]) for r in records] == [(NATIVE, 2)]


SERVER = """
import java.io.*;

public class Srv {
    static final byte[] PAGE = new byte[4096];
    static void appendLog(FileOutputStream o) throws IOException { o.write(PAGE); }
    static void rewritePage(RandomAccessFile r, int i) throws IOException {
        r.seek((i % 64) * 4096L);
        r.write(PAGE);
    }
    public static void main(String[] a) throws Exception {
        try (FileOutputStream o = new FileOutputStream("log.dat");
             RandomAccessFile r = new RandomAccessFile("pages.dat", "rw")) {
            System.out.println("ready");
            System.out.flush();
            for (int i = 0; ; i++) { appendLog(o); rewritePage(r, i); Thread.sleep(2); }
        }
    }
}
"""


@needs_java
@pytest.mark.skipif(bpf_missing() is not None, reason=str(bpf_missing()))
@pytest.mark.skipif(shutil.which("jcmd") is None, reason="needs jcmd (a JDK's)")
def test_attach_to_a_running_jvm_gives_java_call_paths(tmp_path: Path) -> None:
    """record --pid of a JVM started without us: jcmd starts JFR in it while the BPF capture is
    attached, and the writes get their Java methods as signatures, the same in two attachments."""
    (tmp_path / "Srv.java").write_text(SERVER)
    subprocess.run([JAVA_TOOLS["javac"], "-g", "-d", str(tmp_path), str(tmp_path / "Srv.java")], check=True)
    srv = subprocess.Popen(
        [JAVA_TOOLS["java"], "-cp", str(tmp_path), "Srv"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        assert srv.stdout is not None and srv.stdout.readline() == "ready\n"
        sigs = []
        for k in range(2):
            trace = tmp_path / f"t{k}.parquet"
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pcstream",
                    "record",
                    "--pid",
                    str(srv.pid),
                    "--duration",
                    "4",
                    "--no-coalesce",
                    "-o",
                    str(trace),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr
            assert srv.poll() is None, "the JVM keeps running"
            rows = pq.read_table(trace).to_pylist()
            meta = tracemeta.footer(trace)
            paths = tracemeta.paths(meta)
            pcs = json.loads(meta[tracemeta.KEY_PCS])
            by_file: dict[str, set[int]] = defaultdict(set)
            for r in rows:
                if r["op"] == "write" and r["path"] is not None:
                    by_file[Path(paths[r["path"]]).name].add(r["pc"])
            assert not any("pcstream-jfr" in p for p in paths.values()), (
                "JFR's own files are not in the trace"
            )
            methods = {}
            for name, want in (("log.dat", "Srv.appendLog"), ("pages.dat", "Srv.rewritePage")):
                # the writes made before JFR started keep their native signature
                java = [pc for pc in by_file[name] if pcs[str(pc)][0].get("module") == "java"]
                assert len(java) == 1, (name, by_file[name], proc.stderr)
                # JDK frames included: FileOutputStream.write < Srv.appendLog < Srv.main
                assert want in [f["symbol"] for f in pcs[str(java[0])]], pcs[str(java[0])]
                methods[name] = java[0]
            sigs.append(methods)
        assert sigs[0] == sigs[1]
    finally:
        srv.kill()
        srv.wait()
