"""Benchmarks of gensim-jax against reference implementations (issue 8).

Every benchmark module has ``run(quick=False) -> list[dict]``; each dict is printed as one JSON line
by :mod:`bench.run_all`.  ``quick=True`` runs tiny sizes (used by ``tests/bench``).
"""
