"""docs/EXPERIMENTS.md's fork example, run as a fork would: the Python block saved as a file, then its two commands.

The block is extracted from the document (so the document cannot rot), written beside a module it does
not need (a file experiment may import modules beside it: the test adds one and imports it), trained by
``gensim-jax train FILE`` (both arms, GenSim and the supervised baseline, and the figure) and compiled by
``gensim-jax plan FILE`` for a v5e:2x2 topology. The trained network must have learned its target: the
held-out rank correlation of its cosine with the closed-form log similarity rises above the untrained
network's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import gammaln

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "EXPERIMENTS.md"

pytestmark = pytest.mark.slow


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def _experiment_block() -> str:
    (block,) = [b for b in _blocks("python") if "EXPERIMENT = " in b]
    return block


def test_the_closed_form_matches_a_direct_sum_over_features():
    ns: dict = {}
    exec(compile(_experiment_block(), "poisson_gamma.py", "exec"), ns)  # noqa: S102 - the doc's own code
    a, b = 2.0, 0.5
    x = np.array([[0.0, 3.0], [1.0, 0.0]])
    got = np.asarray(ns["log_similarity"](x, x, a, b))

    def log_p(*obs):  # marginal of counts sharing one Gamma(a, b) rate: Poisson-Gamma conjugacy, per feature
        n, s = len(obs), sum(obs)
        return gammaln(a + s) - gammaln(a) - sum(gammaln(o + 1) for o in obs) + a * np.log(b) - (a + s) * np.log(b + n)

    want = np.array(
        [[sum(log_p(xi[f], xj[f]) - log_p(xi[f]) - log_p(xj[f]) for f in range(2)) for xj in x] for xi in x]
    )
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_the_fork_trains_evaluates_and_plans_from_its_file(tmp_path):
    src = tmp_path / "poisson_gamma.py"
    src.write_text(_experiment_block() + "\nimport helper_beside  # noqa: E402,F401\n")
    (tmp_path / "helper_beside.py").write_text("VALUE = 1\n")
    commands = [line for b in _blocks("bash") for line in b.splitlines() if "poisson_gamma.py" in line]
    assert [c.split()[1] for c in commands] == ["train", "plan"]
    env_cmd = [sys.executable, "-m", "gensim_jax.commands"]
    workdir = tmp_path / "runs" / "poisson_gamma"
    for line in commands:
        args = line.split("#")[0].split()[1:]
        args = [str(src) if a == "poisson_gamma.py" else str(workdir) if a == "runs/poisson_gamma" else a for a in args]
        done = subprocess.run(env_cmd + args, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        if args[0] == "plan":
            assert "v5e" in done.stdout and "memory" in done.stdout
        else:
            assert "| held-out Spearman(cosine, log s) |" in done.stdout
    results = json.loads((workdir / "results.json").read_text())
    trained = results["evaluations"]["gensim"][0]["spearman_vs_log_s"]
    assert results["num_steps"] == 30 and (workdir / "gensim" / "run0" / "export" / "model.json").is_file()
    # the baseline arm and the untrained reference row are in the results, the table and the figure
    assert set(results["evaluations"]) == {"untrained", "gensim", "supervised"}
    assert (workdir / "poisson_gamma.png").stat().st_size > 1000

    from gensim_jax import experiments as registry

    fork = registry.load(str(src))
    config = fork.get_config("small")
    arm = fork.arm("gensim", config, fork.prepare(config))
    untrained = arm.evaluation(arm.model, arm.init_variables(0), 0)["spearman_vs_log_s"]
    assert trained > untrained + 0.1 and trained > 0.5, (untrained, trained)


def test_a_bug_in_the_forks_own_code_names_its_file_and_line(tmp_path):
    """A fork's bug (a broadcast error in its batch stream, run on the host-stream thread) is one line naming
    the fork's file, line and function; ``--debug`` shows the whole traceback through that line (its other
    forms, before the command and ``GENSIM_JAX_DEBUG=1``, are parsed alike: tests/commands/test_errors.py)."""
    block = _experiment_block()
    good = 'yield {"x": np.log1p(x), "counts": x,'
    assert good in block
    src = tmp_path / "buggy_fork.py"
    src.write_text(block.replace(good, 'yield {"x": np.log1p(x) + np.ones((1, 3)), "counts": x,'))
    line = 1 + next(i for i, x in enumerate(src.read_text().splitlines()) if "np.ones((1, 3))" in x)
    base = [sys.executable, "-m", "gensim_jax.commands"]
    train = ["train", str(src), "--config", "small", "--set", "num_steps=2"]
    env = {k: v for k, v in os.environ.items() if k != "GENSIM_JAX_DEBUG"}

    def run(argv, workdir, **extra):
        argv = [*argv, "--workdir", str(tmp_path / workdir)]
        return subprocess.run(
            base + argv, capture_output=True, text=True, cwd=tmp_path, env={**env, **extra}, timeout=300
        )

    done = run(train, "plain")
    errors = [x for x in done.stderr.splitlines() if "error" in x]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(errors) == 1 and f"(at {src}:{line} in stream)" in errors[0], done.stderr[-2000:]
    assert "operands could not be broadcast" in errors[0]
    done = run([*train, "--debug"], "debug")
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr, done.stderr[-2000:]
    assert f'File "{src}", line {line}, in stream' in done.stderr
