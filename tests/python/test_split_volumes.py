"""import FORMAT FILE --split-volumes DIR: one trace per volume of a generated public-trace-set file
(over 1,000 volumes), request counts matching the input, each trace what `import --device V`
writes, gzip input, errors leaving nothing; memory that does not grow with the input."""

from __future__ import annotations

import gzip
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from pcstream import splitvolumes
from support import invoke


def alibaba_lines(lines: int, volumes: int, seed: int = 1) -> tuple[str, Counter[str]]:
    """Alibaba 2020 lines (device_id,opcode,offset,length,timestamp) over ``volumes`` volumes."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    out = []
    for i in range(lines):
        volume = rng.randrange(volumes)
        counts[str(volume)] += 1
        op = "W" if rng.random() < 0.7 else "R"
        offset, length = rng.randrange(1 << 16) * 4096, 4096 * rng.randint(1, 4)
        out.append(f"{volume},{op},{offset},{length},{1577808000000000 + i}\n")
    return "".join(out), counts


def test_one_trace_per_volume_with_the_input_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, counts = alibaba_lines(30_000, 1_100)
    source = tmp_path / "io_traces.csv.gz"
    with gzip.open(source, "wt") as handle:
        handle.write(text)
    # Small buffers: the lines go to the spill files many times over.
    monkeypatch.setattr(splitvolumes, "BUFFER_BYTES", 64 << 10)
    out = tmp_path / "volumes"
    run = invoke("import", "alibaba", source, "--split-volumes", out, "--json")
    assert run.status == 0, run.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert run.json() == manifest
    assert manifest["lines"] == 30_000 and manifest["skipped_count"] == 0
    by_volume = {v["volume"]: v for v in manifest["volumes"]}
    assert len(by_volume) == len(counts) > 1_000
    assert {name: v["requests"] for name, v in by_volume.items()} == dict(counts)
    assert sorted(p.name for p in out.glob("*.parquet")) == sorted(v["trace"] for v in manifest["volumes"])
    assert not list(out.glob(".split-*"))
    for volume in ("0", "517"):
        single = tmp_path / f"d{volume}.parquet"
        assert invoke("import", "alibaba", source, "--device", volume, "-o", single).status == 0
        assert (out / f"{volume}.parquet").read_bytes() == single.read_bytes()
        assert by_volume[volume]["bytes"] == single.stat().st_size


@pytest.mark.parametrize(
    ("fmt", "lines", "volumes"),
    [
        ("tencent", ["1538323200,8,8,1,17\n", "1538323201,16,8,0,17\n", "1538323201,0,8,1,3\n"],
         {"17": 2, "3": 1}),
        ("msr", ["128166372003061629,hm,0,Write,4096,4096,1\n", "128166372003061630,prn,1,Read,0,512,1\n"],
         {"hm_0": 1, "prn_1": 1}),
    ],
)  # fmt: skip
def test_tencent_and_msr_volumes(tmp_path: Path, fmt: str, lines: list[str], volumes: dict[str, int]) -> None:
    source = tmp_path / "in.csv"
    source.write_text("".join(lines))
    run = invoke("import", fmt, source, "--split-volumes", tmp_path / "out", "--json")
    assert run.status == 0, run.stderr
    assert {v["volume"]: v["requests"] for v in run.json()["volumes"]} == volumes


def test_errors_leave_nothing(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("3,W,0,4096,1\n4,W,0,4096,2\n3,X,0,4096,3\n")
    out = tmp_path / "out"
    run = invoke("import", "alibaba", source, "--split-volumes", out)
    assert run.status == 3
    assert run.stderr.strip() == (
        f"pcstream: error: {source}: volume 3, its line 2: opcode 'X' is neither R nor W; "
        "fix the line or pass --skip-bad N to tolerate N bad lines"
    )
    assert not out.exists()
    source.write_text("3,W,0,4096,1\nnot a line\n")
    run = invoke("import", "alibaba", source, "--split-volumes", out)
    assert run.status == 3 and f"{source}:2: no volume (device_id)" in run.stderr and not out.exists()
    skipped = invoke("import", "alibaba", source, "--split-volumes", out, "--skip-bad", "1", "--json")
    assert skipped.status == 0 and skipped.json()["skipped_count"] == 1
    for extra in (["-o", tmp_path / "x.parquet"], ["--device", "3"]):
        assert invoke("import", "alibaba", source, "--split-volumes", out, *extra).status == 2
    assert invoke("import", "fio", source, "--split-volumes", out).status == 2
    assert invoke("import", "alibaba", source).status == 2


# The peak resident memory of a split, in KiB: VmHWM (ru_maxrss would carry the forking test
# process's own peak across exec).
PEAK = """
import sys
from pcstream import splitvolumes
splitvolumes.BUFFER_BYTES = 1 << 20
splitvolumes.split_volumes("alibaba", sys.argv[1], sys.argv[2])
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def test_peak_memory_does_not_grow_with_the_input(tmp_path: Path) -> None:
    peaks = []
    for lines in (40_000, 320_000):
        source = tmp_path / f"in{lines}.csv"
        source.write_text(alibaba_lines(lines, 300, seed=lines)[0])
        proc = subprocess.run(
            [sys.executable, "-c", PEAK, str(source), str(tmp_path / f"out{lines}")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        peaks.append(int(proc.stdout.split()[-1]))
    # 8 times the input (about 14 MB more lines): the peak grows by far less than the input.
    assert peaks[1] - peaks[0] < 6 * 1024, peaks


def test_sigterm_while_importing_volumes_leaves_nothing(tmp_path: Path) -> None:
    # An import that ended before the signal was sent (this process kept off the CPU while
    # the volumes were written) says nothing: tried again, up to 3 times, with twice the volumes.
    for attempt in range(3):
        source = tmp_path / f"in{attempt}.csv"
        source.write_text(alibaba_lines(100_000, 1_000 << attempt)[0])
        out = tmp_path / f"out{attempt}"
        argv = [
            sys.executable,
            "-m",
            "pcstream",
            "import",
            "alibaba",
            str(source),
            "--split-volumes",
            str(out),
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(out.glob("*.parquet"))) < 5:
            time.sleep(0.02)
        assert list(out.glob("*.parquet")), "the import never reached its volumes"
        if proc.poll() is None:
            break
        proc.communicate(timeout=60)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip() == "pcstream: error: terminated (SIGTERM); nothing was written"
    assert not out.exists()
