"""``python -m eval odd_one_out``: likelihood of human odd-one-out choices (paper Sec. 3.3, Fig. 4D).

``--trials CSV`` (columns ``image_1, image_2, image_3, choice, rt, participant``) and
``--embeddings FILE.npz`` (arrays ``ids`` ``(N,)`` str and ``embeddings`` ``(N, D)``). alpha of
``tau = alpha * rt`` is grid-searched per participant.
"""

from __future__ import annotations

import argparse

from eval._common import emit, load_npz
from gensim_jax.evaluation.odd_one_out import odd_one_out_likelihood, read_trials


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval odd_one_out", description=__doc__)
    p.add_argument("--trials", required=True)
    p.add_argument("--embeddings", required=True)
    p.add_argument("--objective", choices=("mean_likelihood", "log_likelihood"), default="mean_likelihood")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    z = load_npz(a.embeddings, ("ids", "embeddings"))
    trials = read_trials(a.trials, [str(i) for i in z["ids"]])
    emit(odd_one_out_likelihood(z["embeddings"], trials, objective=a.objective), a.out)
    return 0
