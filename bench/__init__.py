"""Benchmarks of gensim-jax against reference implementations (issue 8).

The benchmarks are grouped by what they measure; :mod:`bench.run_all` (``make bench``) runs the
suite, :mod:`bench.report` turns its lines into the tables of docs/PERFORMANCE.md, and
:mod:`bench._harness` holds the timing plumbing they share:

``bench.functions``  the library's pure functions against reference implementations: kernel tables,
                     losses with their gradients, batch-size scaling, the Monte Carlo Eq. 1 estimator;
                     repeated ``embed_images`` calls
``bench.input``      the host side of training: data pipelines, augmentation (host and device), the
                     ImageNet stream, host input work per process
``bench.render``     stimulus generation (quadrilaterals, Geoclidean) and the renders' pixel statistics
``bench.step``       one training step: throughput against PyTorch, per-op profile, convolution forms,
                     XLA:CPU options, accelerator throughput
``bench.runner``     the loop around the step: runner overhead, records, device-idle figure, the
                     accelerator acceptance run, the runner's step profiled on a device against its roofline
``bench.suite``      the test suite's own cost: compile flags, a per-worker session profile

Every module of the suite has ``run(quick=False) -> list[dict]``; each dict is printed as one JSON
line by :mod:`bench.run_all`.  ``quick=True`` runs tiny sizes (used by ``tests/bench``).

``OMP_WAIT_POLICY=PASSIVE`` is set (unless already set) before PyTorch is imported: by default its
OpenMP workers spin for a while after each parallel region, and on this shared 2-core machine the
spinning both slows PyTorch's own 2-thread runs (a descheduled worker stalls every barrier) and
steals the cores from the JAX call timed right after it.  Passive waiting removes that
interference; it makes the PyTorch reference faster, not slower.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
