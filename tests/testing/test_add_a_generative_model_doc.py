"""Run the worked example of docs/ADD_A_GENERATIVE_MODEL.md: its Python blocks, in order, as written.

The page derives the Normal-mean kernel, checks it with the toolkit (and a wrong kernel fails),
then trains an MLP with GenSim regression through gensim_jax.training. The blocks carry their own
asserts; this test runs them and checks the results they leave behind.
"""

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

DOC = Path(__file__).resolve().parents[2] / "docs" / "ADD_A_GENERATIVE_MODEL.md"


def code_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_doc_code_runs_and_does_what_it_says():
    blocks = code_blocks(DOC.read_text())
    assert len(blocks) == 5
    ns = {"__name__": "add_a_generative_model_doc"}
    exec(compile("\n".join(blocks), str(DOC), "exec"), ns)  # noqa: S102 - our own documentation
    assert ns["report"].passed and ns["report"].num_pairs == 48 and ns["report"].min_ess > 1000
    assert ns["wrong_report"].worst_z > 20
    assert ns["corr_trained"] > ns["corr_init"] + 0.2
    assert int(ns["result"].state.step) == 300
    # the derived kernel against scipy's bivariate normal, computed independently here
    tau, sigma = ns["TAU"], ns["SIGMA"]
    v = tau**2 + sigma**2
    joint = stats.multivariate_normal([0.0, 0.0], [[v, tau**2], [tau**2, v]])
    marg = stats.norm(0.0, np.sqrt(v))
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 10, 2)) * 2
    ref = [
        sum(joint.logpdf([p[d], q[d]]) - marg.logpdf(p[d]) - marg.logpdf(q[d]) for d in range(2)) for p, q in zip(a, b)
    ]
    np.testing.assert_allclose(np.asarray(ns["normal_mean_log_similarity"](a, b)), ref, rtol=1e-5, atol=1e-5)
