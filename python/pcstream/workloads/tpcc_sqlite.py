"""A small TPC-C-like workload on SQLite (Python's ``sqlite3``): the write mix of TPC-C.

The nine TPC-C tables, scaled down (items, customers per district and initial orders are
parameters), and the five transactions in the standard mix: New-Order 45 %, Payment 43 %,
Delivery 4 %, Order-Status 4 % and Stock-Level 4 % (the last two only read). Keys are drawn with
TPC-C's NURand. One client; every transaction is one SQLite transaction, so the rollback journal
(``--journal delete``) is created, written, synced and deleted per transaction, or the WAL
(``--journal wal``) is appended and checkpointed. Deterministic for a given seed and count.

Run: ``python -m pcstream.workloads.tpcc_sqlite DB [--txns N | --duration S] [--journal wal]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import time
from dataclasses import dataclass

SCHEMA = """
CREATE TABLE warehouse (w_id INTEGER PRIMARY KEY, w_name TEXT, w_street TEXT, w_city TEXT,
  w_state TEXT, w_zip TEXT, w_tax REAL, w_ytd REAL);
CREATE TABLE district (d_id INTEGER, d_w_id INTEGER, d_name TEXT, d_street TEXT, d_city TEXT,
  d_state TEXT, d_zip TEXT, d_tax REAL, d_ytd REAL, d_next_o_id INTEGER,
  PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (c_id INTEGER, c_d_id INTEGER, c_w_id INTEGER, c_first TEXT, c_middle TEXT,
  c_last TEXT, c_street TEXT, c_city TEXT, c_state TEXT, c_zip TEXT, c_phone TEXT, c_since TEXT,
  c_credit TEXT, c_credit_lim REAL, c_discount REAL, c_balance REAL, c_ytd_payment REAL,
  c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data TEXT, PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE TABLE history (h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER,
  h_w_id INTEGER, h_date TEXT, h_amount REAL, h_data TEXT);
CREATE TABLE new_order (no_o_id INTEGER, no_d_id INTEGER, no_w_id INTEGER,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE orders (o_id INTEGER, o_d_id INTEGER, o_w_id INTEGER, o_c_id INTEGER,
  o_entry_d TEXT, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER,
  PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (ol_o_id INTEGER, ol_d_id INTEGER, ol_w_id INTEGER, ol_number INTEGER,
  ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d TEXT, ol_quantity INTEGER,
  ol_amount REAL, ol_dist_info TEXT, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_im_id INTEGER, i_name TEXT, i_price REAL,
  i_data TEXT);
CREATE TABLE stock (s_i_id INTEGER, s_w_id INTEGER, s_quantity INTEGER, s_dist TEXT,
  s_ytd INTEGER, s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data TEXT,
  PRIMARY KEY (s_w_id, s_i_id));
"""

SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]
DISTRICTS = 10


@dataclass(frozen=True)
class Scale:
    warehouses: int = 1
    items: int = 10_000
    customers: int = 300  # per district
    orders: int = 300  # initial orders per district


class Rand:
    """TPC-C's random functions on a seeded generator (clause 2.1.6 NURand)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.c_last = self.r.randrange(256)
        self.c_id = self.r.randrange(1024)
        self.c_item = self.r.randrange(8192)

    def nurand(self, a: int, x: int, y: int, c: int) -> int:
        return (((self.r.randint(0, a) | self.r.randint(x, y)) + c) % (y - x + 1)) + x

    def astring(self, lo: int, hi: int) -> str:
        n = self.r.randint(lo, hi)
        return "".join(self.r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))

    def last_name(self, n: int) -> str:
        return SYLLABLES[n // 100] + SYLLABLES[(n // 10) % 10] + SYLLABLES[n % 10]


def load(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    """Create and populate the tables (one transaction per table and warehouse)."""
    db.executescript(SCHEMA)
    r = rnd.r
    with db:
        db.executemany(
            "INSERT INTO item VALUES (?,?,?,?,?)",
            (
                (i, r.randint(1, 10_000), rnd.astring(14, 24), r.uniform(1, 100), rnd.astring(26, 50))
                for i in range(1, s.items + 1)
            ),
        )
    for w in range(1, s.warehouses + 1):
        with db:
            db.execute(
                "INSERT INTO warehouse VALUES (?,?,?,?,?,?,?,?)",
                (w, rnd.astring(6, 10), rnd.astring(10, 20), rnd.astring(10, 20), "CA", "123456789",
                 r.uniform(0, 0.2), 300_000.0),
            )  # fmt: skip
            db.executemany(
                "INSERT INTO stock VALUES (?,?,?,?,?,?,?,?)",
                (
                    (i, w, r.randint(10, 100), rnd.astring(24, 24), 0, 0, 0, rnd.astring(26, 50))
                    for i in range(1, s.items + 1)
                ),
            )
        for d in range(1, DISTRICTS + 1):
            with db:
                db.execute(
                    "INSERT INTO district VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (d, w, rnd.astring(6, 10), rnd.astring(10, 20), rnd.astring(10, 20), "CA",
                     "123456789", r.uniform(0, 0.2), 30_000.0, s.orders + 1),
                )  # fmt: skip
                db.executemany(
                    "INSERT INTO customer VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        (c, d, w, rnd.astring(8, 16), "OE",
                         rnd.last_name(c - 1 if c <= 1000 else rnd.nurand(255, 0, 999, rnd.c_last)),
                         rnd.astring(10, 20), rnd.astring(10, 20), "CA", "123456789", "0123456789012345",
                         "2026-01-01", "GC" if r.random() > 0.1 else "BC", 50_000.0, r.uniform(0, 0.5),
                         -10.0, 10.0, 1, 0, rnd.astring(300, 500))
                        for c in range(1, s.customers + 1)
                    ),
                )  # fmt: skip
                perm = list(range(1, s.customers + 1))
                r.shuffle(perm)
                for o in range(1, s.orders + 1):
                    n = r.randint(5, 15)
                    delivered = o < s.orders * 0.7
                    db.execute(
                        "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?)",
                        (o, d, w, perm[(o - 1) % len(perm)], "2026-01-01",
                         r.randint(1, 10) if delivered else None, n, 1),
                    )  # fmt: skip
                    db.executemany(
                        "INSERT INTO order_line VALUES (?,?,?,?,?,?,?,?,?,?)",
                        (
                            (o, d, w, k, r.randint(1, s.items), w, "2026-01-01" if delivered else None, 5,
                             0.0 if delivered else r.uniform(0.01, 9999.99), rnd.astring(24, 24))
                            for k in range(1, n + 1)
                        ),
                    )  # fmt: skip
                    if not delivered:
                        db.execute("INSERT INTO new_order VALUES (?,?,?)", (o, d, w))


def new_order(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    r = rnd.r
    w = r.randint(1, s.warehouses)
    d = r.randint(1, DISTRICTS)
    c = rnd.nurand(1023, 1, s.customers, rnd.c_id)
    lines = [(rnd.nurand(8191, 1, s.items, rnd.c_item), w, r.randint(1, 10)) for _ in range(r.randint(5, 15))]
    with db:
        (o,) = db.execute("SELECT d_next_o_id FROM district WHERE d_w_id=? AND d_id=?", (w, d)).fetchone()
        db.execute("UPDATE district SET d_next_o_id=? WHERE d_w_id=? AND d_id=?", (o + 1, w, d))
        db.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?)", (o, d, w, c, "2026-01-02", None, len(lines), 1)
        )
        db.execute("INSERT INTO new_order VALUES (?,?,?)", (o, d, w))
        for k, (item, supply, qty) in enumerate(lines, 1):
            row = db.execute("SELECT i_price FROM item WHERE i_id=?", (item,)).fetchone()
            (sq,) = db.execute(
                "SELECT s_quantity FROM stock WHERE s_w_id=? AND s_i_id=?", (supply, item)
            ).fetchone()
            sq = sq - qty if sq - qty >= 10 else sq - qty + 91
            db.execute(
                "UPDATE stock SET s_quantity=?, s_ytd=s_ytd+?, s_order_cnt=s_order_cnt+1 "
                "WHERE s_w_id=? AND s_i_id=?",
                (sq, qty, supply, item),
            )
            db.execute(
                "INSERT INTO order_line VALUES (?,?,?,?,?,?,?,?,?,?)",
                (o, d, w, k, item, supply, None, qty, qty * row[0], rnd.astring(24, 24)),
            )


def payment(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    r = rnd.r
    w = r.randint(1, s.warehouses)
    d = r.randint(1, DISTRICTS)
    amount = r.uniform(1, 5000)
    with db:
        db.execute("UPDATE warehouse SET w_ytd=w_ytd+? WHERE w_id=?", (amount, w))
        db.execute("UPDATE district SET d_ytd=d_ytd+? WHERE d_w_id=? AND d_id=?", (amount, w, d))
        if r.random() < 0.6:
            last = rnd.last_name(rnd.nurand(255, 0, min(999, s.customers - 1), rnd.c_last))
            ids = [
                row[0]
                for row in db.execute(
                    "SELECT c_id FROM customer WHERE c_w_id=? AND c_d_id=? AND c_last=? ORDER BY c_first",
                    (w, d, last),
                )
            ]
            c = ids[len(ids) // 2] if ids else rnd.nurand(1023, 1, s.customers, rnd.c_id)
        else:
            c = rnd.nurand(1023, 1, s.customers, rnd.c_id)
        db.execute(
            "UPDATE customer SET c_balance=c_balance-?, c_ytd_payment=c_ytd_payment+?, "
            "c_payment_cnt=c_payment_cnt+1 WHERE c_w_id=? AND c_d_id=? AND c_id=?",
            (amount, amount, w, d, c),
        )
        db.execute(
            "INSERT INTO history VALUES (?,?,?,?,?,?,?,?)",
            (c, d, w, d, w, "2026-01-02", amount, rnd.astring(12, 24)),
        )


def delivery(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    w = rnd.r.randint(1, s.warehouses)
    carrier = rnd.r.randint(1, 10)
    with db:
        for d in range(1, DISTRICTS + 1):
            row = db.execute(
                "SELECT MIN(no_o_id) FROM new_order WHERE no_w_id=? AND no_d_id=?", (w, d)
            ).fetchone()
            if row[0] is None:
                continue
            o = row[0]
            db.execute("DELETE FROM new_order WHERE no_w_id=? AND no_d_id=? AND no_o_id=?", (w, d, o))
            (c,) = db.execute(
                "SELECT o_c_id FROM orders WHERE o_w_id=? AND o_d_id=? AND o_id=?", (w, d, o)
            ).fetchone()
            db.execute(
                "UPDATE orders SET o_carrier_id=? WHERE o_w_id=? AND o_d_id=? AND o_id=?", (carrier, w, d, o)
            )
            db.execute(
                "UPDATE order_line SET ol_delivery_d='2026-01-03' "
                "WHERE ol_w_id=? AND ol_d_id=? AND ol_o_id=?",
                (w, d, o),
            )
            (total,) = db.execute(
                "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id=? AND ol_d_id=? AND ol_o_id=?", (w, d, o)
            ).fetchone()
            db.execute(
                "UPDATE customer SET c_balance=c_balance+?, c_delivery_cnt=c_delivery_cnt+1 "
                "WHERE c_w_id=? AND c_d_id=? AND c_id=?",
                (total or 0.0, w, d, c),
            )


def order_status(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    w, d = rnd.r.randint(1, s.warehouses), rnd.r.randint(1, DISTRICTS)
    c = rnd.nurand(1023, 1, s.customers, rnd.c_id)
    row = db.execute(
        "SELECT MAX(o_id) FROM orders WHERE o_w_id=? AND o_d_id=? AND o_c_id=?", (w, d, c)
    ).fetchone()
    if row[0] is not None:
        db.execute(
            "SELECT * FROM order_line WHERE ol_w_id=? AND ol_d_id=? AND ol_o_id=?", (w, d, row[0])
        ).fetchall()


def stock_level(db: sqlite3.Connection, s: Scale, rnd: Rand) -> None:
    w, d = rnd.r.randint(1, s.warehouses), rnd.r.randint(1, DISTRICTS)
    (o,) = db.execute("SELECT d_next_o_id FROM district WHERE d_w_id=? AND d_id=?", (w, d)).fetchone()
    db.execute(
        "SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id=ol_i_id AND s_w_id=ol_w_id "
        "WHERE ol_w_id=? AND ol_d_id=? AND ol_o_id>=? AND s_quantity<?",
        (w, d, o - 20, rnd.r.randint(10, 20)),
    ).fetchone()


# Cumulative mix (percent): New-Order 45, Payment 43, Delivery 4, Order-Status 4, Stock-Level 4.
MIX = ((45, new_order), (88, payment), (92, delivery), (96, order_status), (100, stock_level))


def run(path: str, scale: Scale, txns: int | None, duration: float | None, journal: str, seed: int) -> dict:
    """Load a fresh database at `path`, then run the mix; returns counts per transaction."""
    db = sqlite3.connect(path, isolation_level=None)  # autocommit for the PRAGMAs
    db.execute(f"PRAGMA journal_mode={'WAL' if journal == 'wal' else 'DELETE'}")
    db.execute("PRAGMA synchronous=FULL")
    db.isolation_level = "DEFERRED"  # DML opens a transaction; `with db` commits it
    rnd = Rand(seed)
    load(db, scale, rnd)
    counts = {fn.__name__: 0 for _, fn in MIX}
    start = time.monotonic()
    done = 0
    while (txns is None or done < txns) and (duration is None or time.monotonic() - start < duration):
        x = rnd.r.randrange(100)
        fn = next(f for bound, f in MIX if x < bound)
        fn(db, scale, rnd)
        counts[fn.__name__] += 1
        done += 1
    db.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", help="database file to create (must not exist)")
    ap.add_argument("--txns", type=int, help="number of transactions (default 2000 unless --duration)")
    ap.add_argument("--duration", type=float, help="seconds to run instead of a count")
    ap.add_argument("--journal", choices=["delete", "wal"], default="delete")
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--customers", type=int, default=300, help="per district")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if os.path.exists(a.db):
        print(f"error: {a.db} exists; give a new database path", file=sys.stderr)
        return 2
    if a.warehouses < 1 or a.items < 100 or a.customers < 10:
        print("error: need --warehouses ≥ 1, --items ≥ 100, --customers ≥ 10", file=sys.stderr)
        return 2
    txns = a.txns if a.txns is not None else (None if a.duration else 2000)
    scale = Scale(a.warehouses, a.items, a.customers, a.customers)
    counts = run(a.db, scale, txns, a.duration, a.journal, a.seed)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
