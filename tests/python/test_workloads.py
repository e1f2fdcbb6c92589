"""Workload suite: the SQLite TPC-C-like driver, the filebench-like personalities, the recipe runner
(recording a real program, checking its trace) and the ``pcstream workload`` verb."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from pcstream import api
from pcstream.aging import Aging
from pcstream.cli import _common
from pcstream.errors import Failure, Terminated
from pcstream.record import runner, shimrun
from pcstream.units import parse_size
from pcstream.workloads import bundle, fileops, packages, recording, tpcc_sqlite
from pcstream.workloads.recipes import RECIPES, Recipe, deletes_files, files_matching
from support import assert_user_error, run_module

PY = sys.executable


def small_tpcc(tmp_path: Path, name: str, journal: str) -> dict[str, int]:
    scale = tpcc_sqlite.Scale(warehouses=1, items=200, customers=20, orders=20)
    return tpcc_sqlite.run(str(tmp_path / name), scale, 300, None, journal, seed=3)


def test_tpcc_mix_is_deterministic_and_follows_the_standard_shares(tmp_path: Path) -> None:
    a = small_tpcc(tmp_path, "a.db", "delete")
    b = small_tpcc(tmp_path, "b.db", "wal")
    assert a == b, "same seed, same transactions whatever the journal mode"
    assert sum(a.values()) == 300
    # 45 / 43 / 4 / 4 / 4 %: New-Order and Payment dominate.
    assert a["new_order"] > 100 and a["payment"] > 100
    assert a["delivery"] + a["order_status"] + a["stock_level"] < 60
    db = sqlite3.connect(tmp_path / "a.db")
    (orders,) = db.execute("SELECT COUNT(*) FROM orders").fetchone()
    (lines,) = db.execute("SELECT COUNT(*) FROM order_line WHERE ol_o_id > 20").fetchone()
    # Initial 20 orders per district × 10 districts, plus one per New-Order.
    assert orders == 200 + a["new_order"]
    assert lines >= 5 * a["new_order"]
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_tpcc_refuses_an_existing_database(tmp_path: Path) -> None:
    (tmp_path / "x.db").write_bytes(b"")
    assert tpcc_sqlite.main([str(tmp_path / "x.db"), "--txns", "1"]) == 2


def test_varmail_keeps_its_file_set_bounded_and_deletes(tmp_path: Path) -> None:
    d = tmp_path / "fs"
    assert fileops.main(["varmail", "--dir", str(d), "--loops", "700", "--rate", "1000"]) == 0
    files = list(d.iterdir())
    # 500 pre-populated + 700 created, capped at 1000 live: 200 deleted.
    assert len(files) == 1000


def recorded(tmp_path: Path, script: str, checks: tuple = (), map_blocks: bool = False) -> dict:
    r = Recipe("t", "test recipe", (), script, checks)
    return recording.run_recipe(
        r, tmp_path / "out", map_blocks=map_blocks, capacity_pages=parse_size("small")
    )


def test_a_recipe_is_recorded_and_its_trace_checked(tmp_path: Path) -> None:
    script = f"{PY} -m pcstream.workloads.fileops varmail --loops 600 --rate 1000 --dir mail"
    res = recorded(tmp_path, script, (deletes_files(100), files_matching("mail/f", 500)))
    assert res["check_problems"] == []
    f = res["facts"]
    assert f["unlinks"] == 100 and f["ops"]["fsync"] >= 1100
    assert f["write_signatures"] >= 1
    assert Path(res["file_trace"]).is_file()
    assert not (tmp_path / "out" / "t.work").exists(), "scratch directory removed"


def test_a_recorded_recipe_is_mapped_to_a_block_trace(tmp_path: Path) -> None:
    script = f"{PY} -m pcstream.workloads.fileops varmail --loops 600 --rate 1000 --dir mail"
    res = recorded(tmp_path, script, map_blocks=True)
    block = Path(res["block_trace"])
    assert block == tmp_path / "out" / "t.parquet" and block.is_file()
    m = res["map"]
    # 500 + 600 small files, fsync'ed: data and journal pages; 100 deleted and trimmed (discard).
    assert m["data_pages"] >= 1100 and m["journal_pages"] > 0 and m["trim_pages"] > 0
    assert m["capacity_pages"] == 61248
    info = api.info(str(block))
    assert info["writes"]["pages"] == m["data_pages"] + m["journal_pages"] + sum(m["metadata_pages"].values())
    assert info["trims"]["pages"] == m["trim_pages"] and info["capacity_pages"] == 61248


def test_a_failing_check_or_script_is_an_error(tmp_path: Path) -> None:
    script = f"{PY} -m pcstream.workloads.fileops varmail --loops 10 --rate 1000 --dir mail"
    with pytest.raises(Failure, match="trace check failed: 0 files deleted"):
        recorded(tmp_path, script, (deletes_files(1),))
    with pytest.raises(Failure, match="exited with status 3"):
        recorded(tmp_path, "exit 3")


def test_missing_packages_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Recipe("t", "x", (("no-such-package", "no-such-binary-xyz"),), "true")
    assert packages.missing_packages(r) == ["no-such-package"]
    monkeypatch.setattr(packages.os, "geteuid", lambda: 1000)
    with pytest.raises(Failure, match="needs the Debian packages no-such-package"):
        packages.ensure_packages(r)


def test_every_recipe_is_listed_and_shown() -> None:
    out = run_module("workload")
    assert out.status == 0
    for name in ("rocksdb-ur", "rocksdb-ar", "rocksdb-fr", "sqlite-tpcc", "gcc", "mixed1", "fio-zipf1.2"):
        assert name in out.stdout
    shown = run_module("workload", "gcc")
    assert shown.status == 0 and "make -s -j2 fs/ext4/" in shown.stdout
    assert_user_error(run_module("workload", "nope"), 2, "nope", "rocksdb-ur")


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipes_are_bounded(name: str) -> None:
    r = dataclasses.asdict(RECIPES[name])
    assert r["seconds"] <= 15 * 60
    bounds = ("--duration", "--runtime", "seq 1", " -T ", "fillseq", "--updates")
    assert any(bound in r["script"] for bound in bounds)


def test_the_suite_records_within_its_budget() -> None:
    # `make suite` must stay under 90 minutes on 2 cores; the recipes' own estimates leave room
    # for set-up (package installs, unpacking the kernel sources) and the maps.
    assert sum(RECIPES[n].seconds for n in bundle.SUITE) <= 60 * 60


def test_the_suite_keeps_going_after_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = Recipe(
        "good",
        "varmail",
        (),
        f"{PY} -m pcstream.workloads.fileops varmail --loops 600 --rate 1000 --dir mail",
        (deletes_files(100),),
    )
    missing = Recipe("missing", "a program that is not installed", (), "no-such-program-xyz --flag")
    # 260 MiB in one file: more than the 239 MiB file system the suite maps onto here, so the
    # engine's map fails (an engine error, not one of the library's own) after a good recording.
    huge = Recipe(
        "huge",
        "more data than the file system holds",
        (),
        f"{PY} -c \"open('big', 'wb').write(b'x' * (260 << 20))\"",
    )
    monkeypatch.setattr(bundle, "RECIPES", {"missing": missing, "huge": huge, "good": good})

    said: list[str] = []
    out = tmp_path / "traces"
    m = bundle.record_suite(
        out,
        names=("missing", "huge", "good"),
        capacity_pages=parse_size("small"),
        modes=(("discard", ""), ("nodiscard", ".nodiscard")),
        say=said.append,
        age=Aging(None),
    )
    assert list(m["traces"]) == ["good", "good.nodiscard"]
    assert (
        "file system is full" in m["failed"]["huge"]
        and "file system is full" in m["failed"]["huge.nodiscard"]
    )
    assert any("huge: discard: FAILED" in s for s in said)
    assert "status 127" in m["failed"]["missing"] and "no-such-program-xyz" in m["failed"]["missing"]
    assert any("missing: FAILED" in s for s in said)
    e = m["traces"]["good"]
    block = out / "good.parquet"
    assert e["trace"] == "good.parquet" and e["bytes"] == block.stat().st_size
    assert e["sha256"] == hashlib.sha256(block.read_bytes()).hexdigest()
    assert e["map"]["capacity_pages"] == 61248 and e["record"]["writes"] > 1000
    assert e["record"]["recovered_bytes"] == 0 and e["record"]["unplaced_bytes"] == 0
    assert "fileops varmail" in e["script"] and m["environment"]["pcstream"] == api.version()
    assert e["mount_opts"] == "discard" and e["age"] is None
    # The same recording, mapped without discard: no TRIM reaches the device.
    n = m["traces"]["good.nodiscard"]
    assert (
        n["mount_opts"] == "nodiscard"
        and n["record"] == e["record"]
        and n["trace"] == "good.nodiscard.parquet"
    )
    assert e["map"]["trim_pages"] > 0 and n["map"]["trim_pages"] == 0
    assert json.loads((out / bundle.MANIFEST).read_text()) == m
    # Only the block traces stay, and the log of the failure.
    assert sorted(p.name for p in out.iterdir()) == [
        "good.nodiscard.parquet",
        "good.parquet",
        "huge.log",
        "manifest.json",
        "missing.log",
    ]
    assert m["total_bytes"] == block.stat().st_size + (out / "good.nodiscard.parquet").stat().st_size


def test_sigterm_stops_the_suite_and_keeps_the_manifest_of_what_it_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipes = {
        n: Recipe(
            n, "varmail", (), f"{PY} -m pcstream.workloads.fileops varmail --loops 300 --rate 1000 --dir mail"
        )
        for n in ("first", "second", "third")
    }
    monkeypatch.setattr(bundle, "RECIPES", recipes)
    map_recipe = recording.map_recipe

    def terminated_on_second(r: Recipe, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if r.name == "second":
            raise Terminated()
        return map_recipe(r, *args, **kwargs)

    monkeypatch.setattr(recording, "map_recipe", terminated_on_second)
    out = tmp_path / "traces"
    said: list[str] = []
    with pytest.raises(Terminated):
        bundle.record_suite(
            out, names=("first", "second", "third"), capacity_pages=parse_size("small"),
            modes=(("discard", ""),), say=said.append, age=Aging(None),
        )  # fmt: skip
    # The suite stopped at the signal: the third recipe never ran, and no failure was recorded
    # as if the suite had gone on; the first recipe's trace is in the manifest on disk.
    assert not any(s.startswith("[3/3]") for s in said) and not any("FAILED" in s for s in said)
    m = json.loads((out / bundle.MANIFEST).read_text())
    assert list(m["traces"]) == ["first"] and not m["failed"]
    assert (out / "first.parquet").is_file() and not (out / "second.parquet").exists()


def test_a_signal_during_a_recipes_program_stops_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The program ended by a forwarded SIGTERM: the cut-off trace is removed and the suite stops
    # (record itself keeps such a trace; a suite must not bundle it as the recipe's).
    def terminated(cmd: list[str], out: Path, *_: Any, **__: Any) -> tuple[int, dict[str, Any]]:
        out.write_bytes(b"partial")
        monkeypatch.setattr(runner, "last_forwarded", (signal.SIGTERM,))
        return 128 + signal.SIGTERM, {}

    monkeypatch.setattr(shimrun, "record", terminated)
    r = Recipe("cut", "a program stopped by SIGTERM", (), "sleep 60")
    with pytest.raises(Terminated):
        recording.run_recipe(r, tmp_path)
    assert not (tmp_path / "cut.file.parquet").exists()


def test_the_suite_keeps_the_failures_of_recipes_it_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = Recipe("good", "varmail", (), "true")
    monkeypatch.setattr(bundle, "RECIPES", {"good": good})
    out = tmp_path / "traces"
    out.mkdir()
    earlier = {"other": "status 127", "other.nodiscard": "status 127", "good": "old", "goodness": "kept"}
    (out / bundle.MANIFEST).write_text(json.dumps({"traces": {}, "failed": earlier}))
    # Re-running only "good" (here: mapped again without its file trace, so it fails anew).
    m = bundle.record_suite(
        out, names=("good",), capacity_pages=parse_size("small"), remap=True, say=lambda _: None
    )
    assert m["failed"]["other"] == "status 127" and m["failed"]["other.nodiscard"] == "status 127"
    assert m["failed"]["goodness"] == "kept", "another recipe whose name starts alike"
    assert (
        "no file-level trace" in m["failed"]["good"]
        and "no file-level trace" in m["failed"]["good.nodiscard"]
    )
    assert json.loads((out / bundle.MANIFEST).read_text())["failed"] == m["failed"]


def test_the_suite_is_listed() -> None:
    shown = run_module("workload", "suite")
    assert shown.status == 0
    text = " ".join(shown.stdout.split())
    assert all(name in text for name in bundle.SUITE) and "paper" in text and "nodiscard" in text


def test_the_suite_refuses_an_unknown_recipe() -> None:
    assert_user_error(run_module("workload", "suite", "--record", "--only", "nope"), 2, "nope", "rocksdb-ur")


def test_the_suite_maps_its_kept_file_traces_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = Recipe(
        "good",
        "varmail",
        (),
        f"{PY} -m pcstream.workloads.fileops varmail --loops 300 --rate 1000 --dir mail",
    )
    monkeypatch.setattr(bundle, "RECIPES", {"good": good})
    out = tmp_path / "traces"
    small = parse_size("small")
    first = bundle.record_suite(
        out, names=("good",), capacity_pages=small, modes=(("discard", ""),), keep_file_traces=True,
        say=lambda _: None, age=Aging(None),
    )  # fmt: skip
    assert (out / "good.file.parquet").is_file()
    # Map again, aged and without discard: no recording, the record figures kept.
    again = bundle.record_suite(
        out, names=("good",), capacity_pages=small, modes=(("nodiscard", ".nodiscard"),), remap=True,
        say=lambda _: None, age=Aging(0.5),
    )  # fmt: skip
    e = again["traces"]["good.nodiscard"]
    assert e["record"] == first["traces"]["good"]["record"] and e["mount_opts"] == "nodiscard"
    assert e["age"] == {"share": 0.5, "seed": 0, "churn": 0} and e["map"]["aged"]["pages"] > 0
    assert (out / "good.file.parquet").is_file() and not again["failed"]
    # Without the file trace: one line saying how to get it.
    (out / "good.file.parquet").unlink()
    said: list[str] = []
    # As 'pcstream workload suite --remap' runs it: the failure names the option to record with.
    gone = bundle.record_suite(
        out, names=("good",), capacity_pages=small, remap=True, say=said.append, spelling=_common.spelling
    )
    assert "no file-level trace; record with --keep-file-traces first" in gone["failed"]["good"]
