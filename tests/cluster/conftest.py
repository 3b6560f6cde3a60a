"""The local SLURM cluster for tests/cluster: started once per session by scripts/slurm_local.sh.

When the cluster is already running (``.ci/run`` starts it before ``make test``) the session uses it
and leaves it running; when the session started it, the session stops it (not in a pytest-xdist
worker: the other worker may still run jobs; `scripts/slurm_local.sh stop` then stops it). Where it cannot start (not
root, no apt-get) every cluster test skips with the script's reason.
"""

from __future__ import annotations

import os

import pytest

from tests.cluster import slurm


@pytest.fixture(scope="session")
def slurm_conf():
    conf, started = slurm.start_cluster()
    try:
        yield conf
    finally:
        # a pytest-xdist worker leaves a cluster it started running: the other worker may still use it
        if started and not os.environ.get("PYTEST_XDIST_WORKER"):
            slurm.stop_cluster()


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """The held experiment's ``tiny`` config (20 steps, 2 arms) in one process with the job's 4 devices."""
    d = tmp_path_factory.mktemp("one-process")
    return slurm.train_one_process(slurm.HELD, d / "run", [], cwd=d)
