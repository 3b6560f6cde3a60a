"""``python -m eval oddball``: the quadrilateral oddball protocol (paper Sec. 3.1, Fig. 2).

Input: ``--trials FILE.npz`` with arrays ``embeddings`` ``(T, 6, D)``, ``deviant`` ``(T,)`` and
``shapes`` ``(T,)`` (str), e.g. made with :func:`gensim_jax.evaluation.embed.embed_images`.
Reports error rate per shape, Spearman rho against irregularity rank, and correlations with the
packaged per-population error rates (or ``--error-rates CSV``) and, with ``--behavior FILE ...``,
with every subject of those trial-level files. ``--judgements CSV --stimuli FILE.npz`` (arrays
``ids``, ``embeddings``) adds the correlation with human similarity ratings.
"""

from __future__ import annotations

import argparse
import numpy as np

from eval._common import emit, load_npz
from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval oddball", description=__doc__)
    p.add_argument("--trials", required=True, help="npz with embeddings (T,6,D), deviant (T,), shapes (T,)")
    p.add_argument("--error-rates", default=None, help="per-population CSV (default: packaged data)")
    p.add_argument("--behavior", nargs="+", default=None,
                   help="trial-level CSV files for per-subject correlations (give each subject once: "
                        "e.g. baboons_target.csv or the per-baboon files, not both)")
    p.add_argument("--judgements", default=None, help="CSV stimulus_a,stimulus_b,rating")
    p.add_argument("--stimuli", default=None, help="npz with ids (S,) and embeddings (S,D) for --judgements")
    p.add_argument("--out", default=None, help="also write the JSON here")
    a = p.parse_args(argv)

    z = load_npz(a.trials, ("embeddings", "deviant", "shapes"))
    rates = ob.error_rates_by_shape(z["embeddings"], z["deviant"].astype(np.int64), [str(s) for s in z["shapes"]])
    model = rates["error_rate"]
    result = {"shapes": list(sm.SHAPES), "error_rate": model, "trials": rates["trials"]}
    if np.all(np.isfinite(model)):
        rho, pval, dof = ob.regularity_correlation(model)
        result["regularity_spearman"] = {"rho": rho, "p": pval, "dof": dof}
        table = sm.read_error_rates(a.error_rates) if a.error_rates else sm.packaged_error_rates()
        result["population_correlation"] = {
            pop: dict(zip(("r", "p"), ob.behaviour_correlation(model, d["error_rate"]))) for pop, d in table.items()}
        if a.behavior:
            trials = [t for f in a.behavior for t in sm.read_behavior(f)]
            subj = ob.subject_correlations(model, sm.subject_error_rates(trials))
            by_pop: dict[str, list[float]] = {}
            for d in subj.values():
                by_pop.setdefault(d["population"], []).append(d["r"])
            result["subject_correlation"] = {pop: {"mean_r": float(np.mean(r)), "n": len(r)} for pop, r in by_pop.items()}
    if a.judgements:
        if not a.stimuli:
            p.error("--judgements needs --stimuli")
        s = load_npz(a.stimuli, ("ids", "embeddings"))
        emb = {str(k): v for k, v in zip(s["ids"], s["embeddings"])}
        rho, pval, n = ob.similarity_judgement_correlation(ob.read_similarity_judgements(a.judgements), emb)
        result["judgement_spearman"] = {"rho": rho, "p": pval, "pairs": n}
    emit(result, a.out)
    return 0
