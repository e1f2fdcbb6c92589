"""A real server under record: MariaDB with its default I/O (native AIO through io_uring, O_DIRECT
data files) and --log-error, a short sysbench write load and a clean shutdown. The recording ends
by itself when the server does; the trace shows the I/O path InnoDB used (its io_uring
submissions, counted by info), and the bytes recorded to InnoDB's files are at least 90 % of what
InnoDB says it wrote. Skips, with the reason, without mariadbd, sysbench, root or the BPF capture
(the ring's writes are the BPF capture's: docs/RECORD.md, "BPF capture")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pcstream import tracemeta

INNODB_FILES = ("ibdata", "ib_logfile", ".ibd", "undo0")
CAPTURE = Path(__file__).resolve().parents[2] / "python" / "pcstream" / "_bpf" / "pcsys-capture"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the BPF capture of io_uring needs root"),
    pytest.mark.skipif(not CAPTURE.is_file(), reason="the BPF capture is not built (make install)"),
    pytest.mark.skipif(
        not all(
            shutil.which(p)
            for p in ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-admin", "sysbench")
        ),
        reason="MariaDB (mariadb-server) and sysbench are not installed",
    ),
]


def sql(sock: Path, query: str) -> list[list[str]]:
    out = subprocess.run(
        ["mariadb", "-S", str(sock), "-u", "root", "-N", "-B", "-e", query],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [line.split("\t") for line in out.stdout.splitlines()]


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A directory the server's user (mysql) can reach: pytest's own is root's alone."""
    d = Path(tempfile.mkdtemp(prefix="pcstream-mariadb-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_mariadb_with_native_aio_and_log_error(server_dir: Path) -> None:
    tmp_path = server_dir
    data, sock = tmp_path / "data", tmp_path / "sock"
    data.mkdir()
    shutil.chown(data, "mysql", "mysql")
    shutil.chown(tmp_path, "mysql", "mysql")
    cnf = tmp_path / "my.cnf"
    cnf.write_text(
        f"[mysqld]\ndatadir={data}\nsocket={sock}\nskip-networking=1\nuser=mysql\n"
        f"innodb_buffer_pool_size=128M\ninnodb_log_file_size=64M\nlog-error={tmp_path / 'err.log'}\n"
        f"pid-file={tmp_path / 'pid'}\n"
    )
    subprocess.run(
        ["mariadb-install-db", f"--defaults-file={cnf}", "--user=mysql"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    trace = tmp_path / "trace.parquet"
    rec = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pcstream",
            "record",
            "-o",
            str(trace),
            "--",
            "mariadbd",
            f"--defaults-file={cnf}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(120):
            if sock.exists():
                break
            time.sleep(0.5)
        assert sock.exists(), "the server did not start under record"
        assert sql(sock, "SHOW GLOBAL VARIABLES LIKE 'innodb_use_native_aio'") == [
            ["innodb_use_native_aio", "ON"]
        ]
        sql(sock, "CREATE DATABASE sbtest")
        sb = [
            "sysbench",
            "oltp_write_only",
            "--db-driver=mysql",
            f"--mysql-socket={sock}",
            "--mysql-user=root",
        ]
        sb += ["--tables=2", "--table-size=20000", "--threads=2"]
        subprocess.run([*sb, "prepare"], capture_output=True, check=True, timeout=300)
        subprocess.run([*sb, "--time=10", "run"], capture_output=True, check=True, timeout=300)
        said = dict(
            sql(
                sock,
                "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_data_written', 'Innodb_os_log_written')",
            )
        )
        subprocess.run(["mariadb-admin", "-S", str(sock), "-u", "root", "shutdown"], check=True, timeout=120)
        _, err = rec.communicate(timeout=120)  # the recording ends by itself with the server
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    assert rec.returncode == 0, err
    info = json.loads(
        subprocess.run(
            [sys.executable, "-m", "pcstream", "info", str(trace), "--json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
    )
    assert info["capture"] == "shim+bpf"
    assert info["io_uring"]["writes"] > 0 and info["io_uring"]["bytes"] > 0, info["io_uring"]
    import pyarrow.parquet as pq

    paths = tracemeta.paths(tracemeta.footer(trace))
    recorded = sum(
        row["len"]
        for row in pq.read_table(trace, columns=["op", "len", "path"]).to_pylist()
        if row["op"] == "write" and any(k in paths.get(row["path"], "") for k in INNODB_FILES)
    )
    written = int(said["Innodb_data_written"]) + int(said["Innodb_os_log_written"])
    assert recorded >= 0.9 * written, (recorded, written)
