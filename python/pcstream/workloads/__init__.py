"""Workloads: real programs recorded into traces (docs/WORKLOADS.md).

:mod:`.recipes` lists them (what each needs, runs and must produce), :mod:`.packages` installs
what they need, :mod:`.recording` records, checks and maps one recipe, :mod:`.bundle` records the
bundled suite (``traces/`` and its manifest); :mod:`.tpcc_sqlite` and :mod:`.fileops` are
workload programs of our own that recipes run.
"""
