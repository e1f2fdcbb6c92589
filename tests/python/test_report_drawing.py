"""The report's per-trace figures drawn on worker processes are the files drawn in process: same
names, same bytes, None where a figure has no data, in the order of the tasks."""

from __future__ import annotations

from pathlib import Path

from pcstream.report import data, drawing

PNG = b"\x89PNG\r\n\x1a\n"


def _result(k: int, j: int) -> dict:
    """Trace k, policy j: two streams whose lifetimes depend on both; a latency CDF for even k."""
    streams = [
        {
            "stream": s,
            "pages": 10 * (s + 1),
            "share": 0.5,
            "lifetime_samples": 9,
            "lifetime_p25": 4 + k + j + s,
            "p50": 9 + 2 * k + s,
            "p75": 30 + 3 * k + s,
        }
        for s in (0, 1)
    ]
    cdf = [[10.0 + k, 0.5], [100.0 + k, 1.0]] if k % 2 == 0 else None
    return {"per_stream": streams, "latency_cdf": cdf}


def _sweep(traces: int) -> data.Sweep:
    names = [f"t{k}.parquet" for k in range(traces)]
    rows = [
        data.Row(trace, "small", policy, _result(k, j), None, 0)
        for k, trace in enumerate(names)
        for j, policy in enumerate(("baseline", "pcstream"))
    ]
    return data.Sweep(rows, names, ["small"], ["baseline", "pcstream"])


def _tasks(sweep: data.Sweep) -> list[drawing.Task]:
    return [
        drawing.Task(kind, trace, "small", f"{kind}-{trace}.png")
        for trace in sweep.traces
        for kind in ("lifetimes", "latency")
    ]


def test_figures_drawn_on_two_processes_are_those_drawn_in_process(tmp_path: Path) -> None:
    sweep = _sweep(4)
    tasks = _tasks(sweep)
    assert len(tasks) // drawing.MIN_FIGURES_PER_WORKER >= 2, "the pool must really be used"
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    alone = drawing.draw(sweep, tasks, str(one), jobs=1)
    pooled = drawing.draw(sweep, tasks, str(two), jobs=2)
    # Every lifetimes figure is drawn; the latency CDF only where the result has one (even k).
    expected = [
        task.name if task.kind == "lifetimes" or int(task.trace[1]) % 2 == 0 else None for task in tasks
    ]
    assert alone == expected
    assert pooled == expected
    assert sorted(p.name for p in two.iterdir()) == sorted(n for n in expected if n)
    for name in filter(None, expected):
        content = (two / name).read_bytes()
        assert content.startswith(PNG), name
        assert content == (one / name).read_bytes(), name


def test_a_few_figures_are_drawn_in_process(tmp_path: Path, monkeypatch) -> None:
    sweep = _sweep(1)

    def no_pool(*_args, **_kwargs):
        raise AssertionError("a pool started for two figures")

    monkeypatch.setattr(drawing, "ProcessPoolExecutor", no_pool)
    assert drawing.draw(sweep, _tasks(sweep), str(tmp_path), jobs=8) == [
        "lifetimes-t0.parquet.png",
        "latency-t0.parquet.png",
    ]
