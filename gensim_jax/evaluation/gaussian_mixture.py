"""Gaussian-mixture replication protocol (paper Appendices F-H, Fig. S1).

Given a 1-D (or any-D) embedding of points drawn from a mixture, report what the paper reports:

* test accuracy of the embedding as a classifier of the generating component (the threshold is the
  midpoint between the two components' mean embeddings on held-out fitting points);
* Spearman's rho between embedding distance and the theoretical generative similarity (Eq. H2),
  with pairs grouped into 500 quantile bins of embedding distance (paper: rho(498) = -0.99);
* 95% confidence intervals (mean +- 1.96 SE) of the embedding distance of same-component and
  different-component pairs (paper: [1.62, 1.66] and [4.77, 4.91]).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass
class MixtureReport:
    accuracy: float
    spearman_rho: float
    spearman_p: float
    spearman_dof: int
    same_ci: tuple[float, float]
    different_ci: tuple[float, float]
    num_test_points: int
    num_pairs: int

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
    res = stats.spearmanr(mean_d, mean_s)
    return float(res.statistic), float(res.pvalue), num_bins - 2


def mean_ci(values, z: float = 1.96) -> tuple[float, float]:
    """``mean +- z * SE`` of ``values``."""
    v = np.asarray(values, np.float64)
    if v.size < 2:
        raise ValueError(f"need at least 2 values for a confidence interval, got {v.size}")
    m, se = v.mean(), v.std(ddof=1) / np.sqrt(v.size)
    return float(m - z * se), float(m + z * se)
