"""A YCSB-like load on Cassandra through the DataStax Python driver (PyPI ``cassandra-driver``).

YCSB's core workload shape: a ``usertable`` of records with a key and ten fields of random bytes
(``--field-bytes``, YCSB's ``fieldlength``: 100 by default, 1 KB a record), a **load** phase
inserting ``--records`` records in key order, then a **run** phase of ``--updates`` updates, each
rewriting every field of one record whose key is drawn from YCSB's Zipfian distribution
(constant 0.99: a few keys are hot, most are cold). The values are
random bytes, so the table's compression (off) and the commit log hold what the program wrote. The
node's address is waited for (a server starting beside this script), the keyspace made (one
replica) with size-tiered compaction, and the updates sent ``--concurrency`` at a time.
Deterministic for a given seed: the same keys and the same bytes in the same order.

Run: ``python -m pcstream.workloads.ycsb_cassandra [--records N] [--updates M] [--port P]``.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from collections.abc import Iterator

import numpy as np

FIELDS = 10
FIELD_BYTES = 100
# YCSB's Zipfian constant (ZipfianGenerator.ZIPFIAN_CONSTANT).
ZIPF_THETA = 0.99
# Rows handed to the driver per batch of concurrent statements (bounds what is held in memory).
CHUNK = 5000
KEYSPACE = "ycsb"


def zipf_keys(n_keys: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` keys in [0, n_keys) drawn with P(rank r) ∝ 1 / r^θ, the ranks scattered over the
    key space by a fixed permutation (YCSB's scrambled Zipfian: the hot keys are not neighbours)."""
    weights = 1.0 / np.arange(1, n_keys + 1, dtype=np.float64) ** ZIPF_THETA
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(count), side="right")
    return rng.permutation(n_keys)[np.minimum(ranks, n_keys - 1)]


def rows(keys: Iterator[int] | np.ndarray, field_bytes: int, rng: np.random.Generator) -> Iterator[tuple]:
    """(key, field0 .. field9) with fresh random bytes for each field."""
    for k in keys:
        blob = rng.bytes(FIELDS * field_bytes)
        yield (int(k), *(blob[i * field_bytes : (i + 1) * field_bytes] for i in range(FIELDS)))


def wait_for(host: str, port: int, timeout_s: float) -> None:
    """Until ``host:port`` accepts a connection (the node finished starting), or exit 1."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError:
            if time.monotonic() > end:
                sys.exit(f"ycsb_cassandra: {host}:{port} did not accept connections within {timeout_s:.0f} s")
            time.sleep(1)


def schema(session) -> None:  # type: ignore[no-untyped-def]
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    columns = ", ".join(f"field{i} blob" for i in range(FIELDS))
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.usertable (y_id bigint PRIMARY KEY, {columns}) "
        "WITH compression = {'enabled': false} "
        "AND compaction = {'class': 'SizeTieredCompactionStrategy'}"
    )


def send(session, statement, data: Iterator[tuple], concurrency: int, what: str, total: int) -> None:  # type: ignore[no-untyped-def]
    from cassandra.concurrent import execute_concurrent_with_args

    done, chunk, start = 0, [], time.monotonic()
    for row in data:
        chunk.append(row)
        if len(chunk) == CHUNK:
            execute_concurrent_with_args(
                session, statement, chunk, concurrency=concurrency, raise_on_first_error=True
            )
            done += len(chunk)
            chunk = []
    if chunk:
        execute_concurrent_with_args(
            session, statement, chunk, concurrency=concurrency, raise_on_first_error=True
        )
        done += len(chunk)
    took = time.monotonic() - start
    print(f"{what}: {done} of {total} in {took:.1f} s ({done / max(took, 1e-9):,.0f}/s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000, help="records inserted by the load phase")
    ap.add_argument("--updates", type=int, default=100_000, help="Zipfian updates of the run phase")
    ap.add_argument("--field-bytes", type=int, default=FIELD_BYTES, help="bytes of each of the ten fields")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9042)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--wait", type=float, default=300.0, help="seconds to wait for the node to accept connections"
    )
    args = ap.parse_args(argv)
    if args.records < 1 or args.updates < 0 or args.field_bytes < 1:
        ap.error("--records and --field-bytes must be ≥ 1 and --updates ≥ 0")
    try:
        from cassandra.cluster import Cluster
    except ImportError:
        sys.exit("ycsb_cassandra: the Python package cassandra-driver is missing (make install)")

    wait_for(args.host, args.port, args.wait)
    rng = np.random.default_rng(args.seed)
    cluster = Cluster([args.host], port=args.port, protocol_version=5, connect_timeout=30)
    try:
        session = cluster.connect()
        session.default_timeout = 120
        schema(session)
        fields = ", ".join(f"field{i}" for i in range(FIELDS))
        marks = ", ".join("?" for _ in range(FIELDS + 1))
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.usertable (y_id, {fields}) VALUES ({marks})")
        send(
            session,
            insert,
            rows(range(args.records), args.field_bytes, rng),
            args.concurrency,
            "load",
            args.records,
        )
        keys = zipf_keys(args.records, args.updates, rng)
        send(session, insert, rows(keys, args.field_bytes, rng), args.concurrency, "update", args.updates)
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
