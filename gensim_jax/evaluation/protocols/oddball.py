"""The oddball protocol on exports and files (``gensim-jax eval oddball``, :mod:`gensim_jax.commands.eval.oddball`):
statistics of a model's per-shape error rates and the embedding of the rendered test set."""

from __future__ import annotations

import numpy as np

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm
from gensim_jax.evaluation.oddball_evaluator import trial_images


def shape_statistics(model, table, behavior_trials=None) -> dict:
    """Spearman with regularity and correlations with every population (and subject) of ``model`` ``(11,)``.

    Nothing is computed when a shape has no trials (NaN rate); a constant rate vector (e.g. no
    errors at all) has no correlation with anything and gets ``None``.
    """
    out = {}
    if not np.all(np.isfinite(model)):
        return out
    if np.ptp(model) == 0:
        return {"regularity_spearman": None, "population_correlation": None}
    rho, pval, dof = ob.regularity_correlation(model)
    out["regularity_spearman"] = {"rho": rho, "p": pval, "dof": dof}
    out["population_correlation"] = {
        pop: dict(zip(("r", "p"), ob.behaviour_correlation(model, d["error_rate"]))) for pop, d in table.items()
    }
    if behavior_trials:
        subj = ob.subject_correlations(model, sm.subject_error_rates(behavior_trials))
        by_pop: dict[str, list[float]] = {}
        for d in subj.values():
            by_pop.setdefault(d["population"], []).append(d["r"])
        out["subject_correlation"] = {pop: {"mean_r": float(np.mean(r)), "n": len(r)} for pop, r in by_pop.items()}
    return out


def embed_test_set(trials, encoder, batch_size: int, cache: dict) -> np.ndarray:
    """``(T, 6, D)`` embeddings of the test set's items with ``encoder`` (renders cached per size)."""
    s = encoder.image_size
    if s not in cache:  # uint8, as a run renders them (gensim_jax.evaluation.oddball_evaluator): the same numbers
        cache[s] = trial_images(trials, s)
    img = cache[s]
    t = img.shape[0]
    return encoder(img.reshape(t * 6, s, s), batch_size).reshape(t, 6, -1)
