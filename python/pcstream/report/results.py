"""The results of a sweep as files: ``results.jsonl`` and ``results.parquet``.

``results.jsonl`` holds exactly the lines ``compare --json`` prints: one JSON object per job, the
engine's result or an error record (trace, policy, ssd, error, exit_status).

``results.parquet`` is one row per job with a fixed schema (:data:`SCHEMA`): the scalar result
fields, ``ok``/``error``/``exit_status`` for failed jobs (their figures are null), the WAF and IOPS
normalised to the baseline of the same trace and SSD (``waf_norm``, ``iops_norm``), the per-stream
figures as a list of structs, the latency CDF as a list of (us, share) and the policy's saved
table as JSON text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pcstream.compare.outcome import Outcome
from pcstream.outputs import atomic_path, atomic_write
from pcstream.report.data import Row, Sweep
from pcstream.report.runlog import JSONL

PARQUET = "results.parquet"

STREAM = pa.struct(
    [
        ("stream", pa.int32()),
        ("pages", pa.int64()),
        ("share", pa.float64()),
        ("lifetime_samples", pa.int64()),
        ("lifetime_p25", pa.int64()),
        ("p50", pa.int64()),
        ("p75", pa.int64()),
    ]
)
CDF_POINT = pa.struct([("us", pa.float64()), ("share", pa.float64())])

# (column, type) of the scalar fields taken from a result as they are.
RESULT_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("waf", pa.float64()),
    ("host_pages", pa.int64()),
    ("gc_pages", pa.int64()),
    ("erases", pa.int64()),
    ("trims_pages", pa.int64()),
    ("reads_pages", pa.int64()),
    ("requests", pa.int64()),
    ("iops", pa.float64()),
    ("lat_mean_us", pa.float64()),
    ("lat_p50_us", pa.float64()),
    ("lat_p99_us", pa.float64()),
    ("lat_p999_us", pa.float64()),
    ("sim_time_s", pa.float64()),
    ("stream0_share", pa.float64()),
    ("policy_state_bytes", pa.int64()),
    ("engine_state_bytes", pa.int64()),
    ("open_write_points", pa.int64()),
    ("write_points", pa.int64()),
    ("logical_pages", pa.int64()),
    ("physical_pages", pa.int64()),
    ("wall_s", pa.float64()),
    ("host_pages_per_s", pa.float64()),
    ("page_ops_per_s", pa.float64()),
)

SCHEMA = pa.schema(
    [
        ("trace", pa.string()),
        ("ssd", pa.string()),
        ("policy", pa.string()),
        ("ok", pa.bool_()),
        ("error", pa.string()),
        ("exit_status", pa.int32()),
        ("seed", pa.int64()),
        ("prefill", pa.float64()),
        ("warmup", pa.int64()),
        ("timing", pa.bool_()),
        *RESULT_COLUMNS,
        ("waf_norm", pa.float64()),
        ("iops_norm", pa.float64()),
        ("per_stream", pa.list_(STREAM)),
        ("latency_cdf", pa.list_(CDF_POINT)),
        ("params", pa.string()),
        ("saved_table", pa.string()),
    ]
)


def write_jsonl(outcomes: Sequence[Outcome], path: str) -> str:
    with atomic_write(path, encoding="utf-8") as handle:
        for outcome in outcomes:
            handle.write(json.dumps(outcome.record(), separators=(",", ":")) + "\n")
    return path


def _scalar(value: Any) -> Any:
    return None if isinstance(value, (dict, list)) else value


def parquet_row(row: Row, outcome: Outcome) -> dict[str, Any]:
    job = outcome.job
    result = row.result or {}
    record: dict[str, Any] = {
        "trace": row.trace,
        "ssd": row.ssd,
        "policy": row.policy,
        "ok": row.ok,
        "error": row.error,
        "exit_status": row.status,
        "seed": result.get("seed", job.options.seed),
        "prefill": result.get("prefill", job.options.prefill),
        "warmup": result.get("warmup", job.options.warmup),
        "timing": result.get("timing", job.options.timing),
    }
    for name, _type in RESULT_COLUMNS:
        record[name] = _scalar(result.get(name))
    record["waf_norm"] = row.waf_norm
    record["iops_norm"] = row.iops_norm
    record["per_stream"] = [
        {name: stream.get(name) for name in STREAM.names} for stream in result.get("per_stream") or []
    ]
    record["latency_cdf"] = [
        {"us": point[0], "share": point[1]}
        for point in result.get("latency_cdf") or []
        if isinstance(point, (list, tuple)) and len(point) == 2
    ]
    params = result.get("params")
    record["params"] = json.dumps(params, sort_keys=True) if params is not None else None
    table = result.get("saved_table")
    record["saved_table"] = table if isinstance(table, str) or table is None else json.dumps(table)
    return record


def write_parquet(sweep: Sweep, outcomes: Sequence[Outcome], path: str) -> str:
    rows = [parquet_row(row, outcome) for row, outcome in zip(sweep.rows, outcomes)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


def write_results(sweep: Sweep, outcomes: Sequence[Outcome], out_dir: str) -> tuple[str, str]:
    """Write ``results.jsonl`` and ``results.parquet`` into ``out_dir``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    jsonl = write_jsonl(outcomes, os.path.join(out_dir, JSONL))
    parquet = write_parquet(sweep, outcomes, os.path.join(out_dir, PARQUET))
    return jsonl, parquet
