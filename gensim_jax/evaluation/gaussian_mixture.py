"""Gaussian-mixture replication protocol (paper Appendices F-H, Fig. S1).

Given a 1-D (or any-D) embedding of points drawn from a mixture, report what the paper reports:

* test accuracy of the embedding as a classifier of the generating component (the threshold is the
  midpoint between the two components' mean embeddings on held-out fitting points);
* Spearman's rho between embedding distance and the theoretical generative similarity (Eq. H2),
  with pairs grouped into 500 quantile bins of embedding distance (paper: rho(498) = -0.99);
* 95% confidence intervals (mean +- 1.96 SE) of the embedding distance of "same" and "different"
  pairs (paper: [1.62, 1.66] and [4.77, 4.91]), and the ratio of the mean distances (paper:
  4.84 / 1.64 = 2.95).

Two definitions of a "different" pair (:func:`pair_distance_summary`). The paper's (Appendix A,
``p_diff`` of Eqs. A1-A4): the two points come from two *independently drawn* parameters, so with
two equally weighted components a "different" pair comes from the same component half the time;
its mean distance lies between the same-component and the different-component means. Ours, kept
as a second line: the two points come from *different* components.  The paper's is the headline
(``different_ci``, ``distance_ratio``); ours is ``different_component_ci`` and
``distance_ratio_component``.

:func:`fig_s1_report` runs the whole protocol on embedded fitting and test points; :func:`appendix_h_evaluation`
(the evaluator, also ``evaluate``) draws those points from the Appendix H mixture and embeds them (what the
experiment records per run); :func:`format_table` and :func:`plot_gaussian_mixture` (Fig. S1) present a run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from gensim_jax.evaluation.plotting import figure, save_figure

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "gaussian_mixture"


@dataclass
class MixtureReport:
    """The Fig. S1 numbers of one embedding.

    ``different_ci`` and ``distance_ratio`` follow the paper's definition of a different pair
    (independent parameters); ``different_component_ci`` and ``distance_ratio_component`` count
    only pairs from different components (see the module docstring).  ``mean_*``: the mean
    embedding distance of each kind of pair; ``num_pairs`` pairs of distinct test points, of which
    ``num_same_pairs`` share their component.
    """

    accuracy: float
    spearman_rho: float
    spearman_p: float
    spearman_dof: int
    same_ci: tuple[float, float]
    different_ci: tuple[float, float]
    num_test_points: int
    num_pairs: int
    different_component_ci: Optional[tuple[float, float]] = None
    mean_same: Optional[float] = None
    mean_different: Optional[float] = None
    mean_different_component: Optional[float] = None
    distance_ratio: Optional[float] = None
    distance_ratio_component: Optional[float] = None
    num_same_pairs: Optional[int] = None

    def as_dict(self) -> dict:
        return asdict(self)


def threshold_accuracy(fit_emb, fit_comp, test_emb, test_comp) -> float:
    """Accuracy of the 1-D rule "nearer mean embedding of component 0 or 1" (two components)."""
    fit_emb, test_emb = np.asarray(fit_emb).reshape(len(fit_comp), -1), np.asarray(test_emb).reshape(len(test_comp), -1)
    comps = np.unique(fit_comp)
    if len(comps) < 2:
        raise ValueError(f"fit_comp must contain at least two components, got {comps.tolist()}")
    centres = np.stack([fit_emb[fit_comp == c].mean(0) for c in comps])
    d = np.linalg.norm(test_emb[:, None, :] - centres[None], axis=-1)
    return float(np.mean(comps[np.argmin(d, axis=1)] == np.asarray(test_comp)))


def binned_spearman(distance, similarity, num_bins: int = 500) -> tuple[float, float, int]:
    """Spearman's rho between the mean distance and mean similarity of ``num_bins`` quantile bins."""
    distance, similarity = np.asarray(distance, np.float64), np.asarray(similarity, np.float64)
    if distance.shape != similarity.shape or distance.ndim != 1:
        raise ValueError(f"distance {distance.shape} and similarity {similarity.shape} must be equal 1-D shapes")
    if len(distance) < num_bins:
        raise ValueError(f"need at least num_bins={num_bins} pairs, got {len(distance)}")
    order = np.argsort(distance, kind="stable")
    bins = np.array_split(order, num_bins)
    mean_d = np.array([distance[b].mean() for b in bins])
    mean_s = np.array([similarity[b].mean() for b in bins])
    from scipy import stats  # here, not at the top: importing scipy.stats takes 1-3 s

    res = stats.spearmanr(mean_d, mean_s)
    return float(res.statistic), float(res.pvalue), num_bins - 2


def mean_ci(values, z: float = 1.96) -> tuple[float, float]:
    """``mean +- z * SE`` of ``values``."""
    v = np.asarray(values, np.float64)
    if v.size < 2:
        raise ValueError(f"need at least 2 values for a confidence interval, got {v.size}")
    m, se = v.mean(), v.std(ddof=1) / np.sqrt(v.size)
    return float(m - z * se), float(m + z * se)


def pair_distance_summary(distance, same) -> dict:
    """Same / different pair distances under both definitions of a different pair (paper Eq. A4).

    Args:
      distance: ``(P,)`` embedding distances of pairs of points, each point drawn from its own,
        independently drawn component (so the pairs as a whole follow the paper's ``p_diff``).
      same: ``(P,)`` booleans, True where the two points of a pair come from the same component.

    Returns:
      ``{"same_ci", "different_ci", "different_component_ci", "mean_same", "mean_different",
      "mean_different_component", "distance_ratio", "distance_ratio_component"}``: ``different``
      over all pairs (the paper's definition), ``different_component`` over the pairs with
      ``same`` False; CIs by :func:`mean_ci`; ratios are mean different / mean same.

    Example:
      >>> s = pair_distance_summary(np.array([1.0, 1.2, 8.0, 9.0]), np.array([True, True, False, False]))
      >>> round(s["distance_ratio"], 3), round(s["distance_ratio_component"], 3)
      (4.364, 7.727)
    """
    d = np.asarray(distance, np.float64)
    same = np.asarray(same, bool)
    if d.ndim != 1 or same.shape != d.shape:
        raise ValueError(f"distance {d.shape} and same {same.shape} must be equal 1-D shapes")
    mean_same, mean_diff, mean_comp = float(d[same].mean()), float(d.mean()), float(d[~same].mean())
    return {
        "same_ci": mean_ci(d[same]),
        "different_ci": mean_ci(d),
        "different_component_ci": mean_ci(d[~same]),
        "mean_same": mean_same,
        "mean_different": mean_diff,
        "mean_different_component": mean_comp,
        "distance_ratio": mean_diff / mean_same,
        "distance_ratio_component": mean_comp / mean_same,
    }


def fig_s1_report(
    fit_emb, fit_comp, test_x, test_emb, test_comp, log_similarity, *, num_pairs: int, num_bins: int, seed: int
) -> tuple[MixtureReport, dict]:
    """The Fig. S1 protocol on embedded points: accuracy, binned Spearman, pair distances.

    Args:
      fit_emb, fit_comp: ``(F, E)`` embeddings and ``(F,)`` components of the fitting points (the
        threshold rule's centres).
      test_x, test_emb, test_comp: ``(T, D)`` test points, ``(T, E)`` embeddings, ``(T,)`` components.
      log_similarity: ``(x1 (P, D), x2 (P, D)) -> (P,)`` log generative similarity (paper Eq. H2).
      num_pairs: pairs ``(i, j)`` of test indices drawn uniformly (those with ``i == j`` dropped).
      num_bins: quantile bins of the Spearman statistic (paper: 500).
      seed: numpy seed of the pair indices.

    Returns:
      ``(report, pairs)`` with ``pairs = {"i", "j", "distance", "s_gen"}`` (for the figure).
    """
    test_x, test_emb, test_comp = np.asarray(test_x), np.asarray(test_emb), np.asarray(test_comp)
    accuracy = threshold_accuracy(fit_emb, fit_comp, test_emb, test_comp)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(test_x), num_pairs)
    j = rng.integers(0, len(test_x), num_pairs)
    keep = i != j
    i, j = i[keep], j[keep]
    dist = np.linalg.norm(test_emb[i] - test_emb[j], axis=1)
    s_gen = np.exp(np.asarray(log_similarity(test_x[i], test_x[j])))
    rho, p_value, dof = binned_spearman(dist, s_gen, num_bins)
    same = test_comp[i] == test_comp[j]
    report = MixtureReport(
        accuracy=accuracy,
        spearman_rho=rho,
        spearman_p=p_value,
        spearman_dof=dof,
        num_test_points=len(test_x),
        num_pairs=int(len(i)),
        num_same_pairs=int(same.sum()),
        **pair_distance_summary(dist, same),
    )
    return report, {"i": i, "j": j, "distance": dist, "s_gen": s_gen}


def appendix_h_evaluation(embed, test_key, *, num_test_points: int, num_pairs: int, num_bins: int, pair_seed: int):
    """``(report, arrays)`` of the Fig. S1 protocol for ``embed(x (N, 2)) -> (N, D)`` on the Appendix H mixture.

    ``split(test_key)`` draws the ``num_test_points`` points the threshold is fitted on and the
    test points (Eq. A3 anchors with their components); :func:`fig_s1_report` scores them, its
    pairs drawn with numpy seed ``pair_seed``. ``arrays``: test points ``x``, components
    ``component``, embeddings ``embedding`` and the pairs' ``distance`` and ``s_gen`` (for the figure).
    """
    import jax

    from gensim_jax.kernels import gaussian_mixture as gm
    from gensim_jax.kernels import monte_carlo

    mixture = gm.appendix_h_mixture()
    k_fit, k_eval = jax.random.split(test_key)
    fit = monte_carlo.sample_gaussian_mixture_triplets(k_fit, num_test_points, mixture)
    test = monte_carlo.sample_gaussian_mixture_triplets(k_eval, num_test_points, mixture)
    fit_x, fit_c = np.asarray(fit.anchor), np.asarray(fit.theta_positive)
    test_x, test_c = np.asarray(test.anchor), np.asarray(test.theta_positive)
    test_e = embed(test_x)
    report, pairs = fig_s1_report(
        embed(fit_x),
        fit_c,
        test_x,
        test_e,
        test_c,
        lambda a, b: gm.log_similarity(a, b, mixture),
        num_pairs=num_pairs,
        num_bins=num_bins,
        seed=pair_seed,
    )
    return report, {"x": test_x, "component": test_c, "embedding": test_e, **pairs}


def format_table(results: dict) -> str:
    """The Fig. S1 report of a run next to the paper's numbers (``results["report"]``, ``results["paper"]``), as a
    Markdown table (the paper's "different" pairs first)."""
    r, p = results["report"], results["paper"]
    ci = "[{:.2f}, {:.2f}]".format
    rows = [
        ("test accuracy", f"{r['accuracy']:.3f}", f"{p['accuracy']:.3f}"),
        (
            f"Spearman rho({r['spearman_dof']}) distance vs s_gen",
            f"{r['spearman_rho']:.3f} (p={r['spearman_p']:.1e})",
            f"{p['spearman_rho']:.2f}",
        ),
        ("95% CI mean distance, same pairs", ci(*r["same_ci"]), ci(*p["same_ci"])),
        (
            "95% CI mean distance, different pairs (independent parameters, App. A)",
            ci(*r["different_ci"]),
            ci(*p["different_ci"]),
        ),
        (
            "mean distance ratio different / same (App. A)",
            f"{r['distance_ratio']:.2f}",
            f"{p['distance_ratio']:.2f} (4.84 / 1.64)",
        ),
        ("95% CI mean distance, pairs from different components", ci(*r["different_component_ci"]), "n/a"),
        ("mean distance ratio different-component / same", f"{r['distance_ratio_component']:.2f}", "n/a"),
    ]
    w = max(len(a) for a, _, _ in rows)
    lines = [f"| {'metric':<{w}} | ours | paper |", f"|{'-' * (w + 2)}|------|-------|"]
    lines += [f"| {a:<{w}} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def plot_gaussian_mixture(arrays: Mapping, history, num_bins: int, path) -> Path:
    """Fig. S1 of a Gaussian-mixture run: the points coloured by their 1-D embedding, the embedding per
    generating component, and ``s_gen`` (Eq. H2) against the embedding distance per quantile bin with the
    training loss inset; ``arrays`` from :func:`appendix_h_evaluation`."""
    x, comp, emb = arrays["x"], arrays["component"], arrays["embedding"]
    dist, s_gen = arrays["distance"], arrays["s_gen"]
    fig, ax = figure(13, 3.8, ncols=3)
    sc = ax[0].scatter(x[:, 0], x[:, 1], c=emb[:, 0], s=4, cmap="coolwarm")
    fig.colorbar(sc, ax=ax[0], label="embedding phi(x)")
    ax[0].set(title="Points coloured by their learned 1-D embedding", xlabel="x1", ylabel="x2")
    for c, colour in zip(np.unique(comp), ("tab:blue", "tab:orange")):
        ax[1].hist(emb[comp == c, 0], bins=60, alpha=0.6, color=colour, label=f"component {c}")
    ax[1].set(title="Embedding per generating component", xlabel="phi(x)")
    ax[1].legend()
    order = np.argsort(dist)
    bins = np.array_split(order, num_bins)
    ax[2].plot([dist[b].mean() for b in bins], [s_gen[b].mean() for b in bins], ".", ms=3)
    ax[2].set(
        title="s_gen (Eq. H2) vs embedding distance", xlabel="|phi(x1) - phi(x2)|", ylabel="mean s_gen per quantile bin"
    )
    inset = ax[2].inset_axes([0.55, 0.55, 0.4, 0.4])
    inset.plot(history)
    inset.set_title("train loss", fontsize=8)
    inset.tick_params(labelsize=6)
    return Path(save_figure(fig, path, dpi=110))


#: The registry's face (:mod:`gensim_jax.evaluation.registry`): the evaluator of one embedding function.
evaluate = appendix_h_evaluation
