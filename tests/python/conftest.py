"""Session fixtures: the 'small' SSD summary and small generated traces (see support.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pcstream import api
from support import SSD, WRITES


@pytest.fixture(scope="session")
def small() -> dict[str, Any]:
    """ssd_summary of the 'small' preset."""
    return api.ssd_summary(SSD)


@pytest.fixture(scope="session")
def traces(tmp_path_factory: pytest.TempPathFactory, small: dict[str, Any]) -> dict[str, Path]:
    """A few small generated traces addressing the whole logical space of 'small'."""
    out = tmp_path_factory.mktemp("traces")
    capacity = str(small["logical_pages"])
    specs = {
        "uniform": ("uniform", {}),
        "zipf": ("zipf", {"theta": "0.99"}),
        "hotcold": ("hotcold", {"hot_fraction": "0.1", "hot_ratio": "0.9"}),
    }
    paths = {}
    for name, (kind, extra) in specs.items():
        path = out / f"{name}.parquet"
        api.gen(kind, str(path), {"capacity_pages": capacity, "writes": str(WRITES), "seed": "1", **extra})
        paths[name] = path
    return paths


@pytest.fixture(scope="session")
def tiny_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace of a few pages: fits any SSD, so config errors are the only errors."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.parquet"
    api.gen("uniform", str(path), {"capacity_pages": "16", "writes": "32", "seed": "1"})
    return path
