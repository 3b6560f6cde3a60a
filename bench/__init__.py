"""Benchmarks of gensim-jax against reference implementations (issue 8).

Every benchmark module has ``run(quick=False) -> list[dict]``; each dict is printed as one JSON line
by :mod:`bench.run_all`.  ``quick=True`` runs tiny sizes (used by ``tests/bench``).

``OMP_WAIT_POLICY=PASSIVE`` is set (unless already set) before PyTorch is imported: by default its
OpenMP workers spin for a while after each parallel region, and on this shared 2-core machine the
spinning both slows PyTorch's own 2-thread runs (a descheduled worker stalls every barrier) and
steals the cores from the JAX call timed right after it.  Passive waiting removes that
interference; it makes the PyTorch reference faster, not slower.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
