"""Compare: batches of simulations, every trace × SSD config × placement policy.

:mod:`.outcome` holds one simulation and its result (:class:`~.outcome.Job`,
:class:`~.outcome.Outcome`), :mod:`.jobs` the executors that run a batch (serial, worker
processes, Ray tasks); :mod:`.sweep` builds a sweep (the traces of the bundled suite or of
generated workloads, the jobs in output order), runs it and describes it. ``pcstream compare``
and ``pcstream demo`` render what they return; :mod:`pcstream.report` writes its files.
"""
