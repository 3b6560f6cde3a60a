"""The odd-one-out protocol on embeddings (``gensim-jax eval odd_one_out``, :mod:`gensim_jax.commands.eval.odd_one_out`):
the objective over the alpha grid per participant."""

from __future__ import annotations

import numpy as np

from gensim_jax.evaluation.odd_one_out import choice_log_probs


def objective_curves(embeddings, trials, alphas, objective: str) -> dict[str, np.ndarray]:
    """``{participant: (A,)}`` mean likelihood (or mean log-likelihood) of their choices at each alpha."""
    out = {}
    for p in np.unique(trials.participant):
        m = trials.participant == p
        sub = type(trials)(trials.items[m], trials.choice[m], trials.rt[m], trials.participant[m])
        lp = choice_log_probs(embeddings, sub, alphas)  # (A, T_p)
        out[str(p)] = (np.exp(lp) if objective == "mean_likelihood" else lp).mean(axis=1)
    return out
