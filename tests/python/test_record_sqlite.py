"""pcstream record on a real program: Python's sqlite3 module (the system libsqlite3) writing a
database in rollback-journal mode, then in WAL mode. The trace holds the database, journal and
WAL writes, each with a PC signature, and no signature mixes two of those files."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pcstream import tracemeta
from pcstream.report.purity import purity

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux-only")

LOAD = """
import sqlite3
db = sqlite3.connect("t.db", isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
db.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v BLOB)")
for t in range(40):
    db.execute("BEGIN")
    for i in range(50):
        db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", ((t * 37 + i * 101) % 1500, bytes(300)))
    db.execute("COMMIT")
assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
for t in range(40):
    db.execute("BEGIN")
    for i in range(50):
        db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", ((t * 53 + i * 7) % 1500, bytes(300)))
    db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
print("sqlite ok")
"""


def kind(path: str) -> str:
    name = Path(path).name
    for suffix in ("-journal", "-wal", "-shm"):
        if name.endswith(suffix):
            return suffix[1:]
    return "db" if name.endswith(".db") else "other"


def test_sqlite_database_journal_and_wal(tmp_path: Path) -> None:
    (tmp_path / "load.py").write_text(LOAD)
    trace = tmp_path / "t.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "pcstream", "record", "-o", str(trace), "--", sys.executable, "load.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "sqlite ok\n", proc.stderr
    assert "lost" not in proc.stderr
    rows = pq.read_table(trace).to_pylist()
    meta = tracemeta.footer(trace)
    paths = tracemeta.paths(meta)
    pcs = json.loads(meta[tracemeta.KEY_PCS])
    ops = Counter((x["op"], kind(paths[x["path"]])) for x in rows if x["path"])
    written = Counter()
    for x in rows:
        if x["op"] == "write" and x["path"]:
            written[kind(paths[x["path"]])] += x["len"]
            assert x["pc"] and pcs[str(x["pc"])], "every write has a signature with frames"
    # 2000 rows x 300 B in 41 journaled transactions, then 40 WAL commits and a checkpoint
    assert written["db"] >= 600_000 and written["journal"] >= 600_000 and written["wal"] >= 600_000
    assert ops["unlink", "journal"] >= 41, "DELETE mode removes the journal after every transaction"
    assert ops["fdatasync", "db"] > 0 and ops["fdatasync", "wal"] > 0
    p = purity(trace, kind)
    assert p.purity == 1.0, p.as_dict()  # database, journal and WAL writes never share a signature
    libsqlite = [f for frames in pcs.values() for f in frames if "libsqlite3" in f["module"]]
    assert any(f.get("symbol") == "sqlite3_step" for f in libsqlite), "frames carry symbol names"
    with sqlite3.connect(tmp_path / "t.db") as db:
        keys = {(t * 37 + i * 101) % 1500 for t in range(40) for i in range(50)}
        keys |= {(t * 53 + i * 7) % 1500 for t in range(40) for i in range(50)}
        assert db.execute("SELECT count(*) FROM kv").fetchone()[0] == len(keys)
