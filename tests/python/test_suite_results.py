"""docs/RESULTS.md generator: the table normalises to baseline; each finding holds or says why not."""

from __future__ import annotations

import json
from pathlib import Path

from pcstream import suite_results


def row(trace: str, policy: str, waf: float, iops: float = 1000.0) -> dict:
    return {"trace": f"traces/{trace}.parquet", "ssd": "medium", "policy": policy, "waf": waf, "iops": iops}


def test_table_and_findings(tmp_path: Path) -> None:
    rows = [
        row("rocksdb-ur", "baseline", 1.50),
        row("rocksdb-ur", "pcstream", 1.20, 1250.0),
        row("rocksdb-ur", "pcstream-star", 1.30),
        row("rocksdb-ur", "autostream-sfr", 1.10),
        row("mixed1", "baseline", 1.01),
        row("mixed1", "pcstream", 1.02),
        row("fio-uniform", "baseline", 2.0),
        {"trace": "traces/gone.parquet", "policy": "pcstream", "error": "gone.parquet: no such file"},
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "RESULTS.md"
    assert suite_results.main([str(results), "-o", str(out)]) == 0
    text = out.read_text()
    # Baseline first; each cell WAF (ratio), IOPS relative to baseline.
    assert "| workload | `baseline` | `autostream-sfr` | `pcstream` | `pcstream-star` |" in text
    cells = "| 1.500 (1.00), IOPS ×1.00 | 1.100 (0.73), IOPS ×1.00 | 1.200 (0.80), IOPS ×1.25 |"
    assert f"| rocksdb-ur {cells}" in text
    assert "* holds: rocksdb-ur: pcstream WAF 1.200 < baseline 1.500" in text
    assert "* holds: rocksdb-ur: internal substreams help" in text
    assert "* rocksdb-ur (baseline WAF 1.500): best `autostream-sfr` 1.100, `pcstream` 1.200" in text
    rival = "rocksdb-ur: pcstream WAF 1.200 < autostream-sfr 1.100 — the workload's LBA"
    assert f"**does not hold**: {rival}" in text
    # Little GC: the reason says so, with the baseline's WAF.
    little = "mixed1: pcstream WAF 1.020 < baseline 1.010 — GC had little to do (baseline WAF 1.010)"
    assert f"**does not hold**: {little}" in text
    assert "fio-uniform: pcstream" not in text, "findings only on RocksDB and mixed workloads"
    assert "## Runs that failed" in text and "gone.parquet: no such file" in text


def test_missing_results_file_is_one_line(tmp_path: Path, capsys) -> None:
    assert suite_results.main([str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.jsonl" in err and "compare --results" in err
