"""Engine exceptions are importable by their module path, so they survive pickling (process pools)."""

import pickle

from pcstream import _engine


def test_exceptions_live_in_the_engine_module_and_pickle() -> None:
    for cls in (_engine.InputError, _engine.ConfigError, _engine.UsageError):
        assert cls.__module__ == "pcstream._engine"
        assert issubclass(cls, _engine.PcstreamError)
        err = pickle.loads(pickle.dumps(cls("x.parquet: no such file; check the path")))
        assert type(err) is cls
        assert str(err) == "x.parquet: no such file; check the path"
