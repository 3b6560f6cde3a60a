"""Monte Carlo estimator of paper Eq. 1 (``gensim_jax.testing.estimate_log_similarity``) vs a NumPy loop.

Model: a 3-component Gaussian mixture in 2-D with full covariances (``theta`` = component), the
process behind ``kernels.gaussian_mixture`` (paper Eq. H2); 1,000 pairs drawn from it
(``testing.sample_pairs``), and a second case with 100 pairs. Ours: the jitted, chunked estimator (log-mean-exp, delta-method
standard error, ESS). Reference: the plain NumPy program a researcher would write -- a Python
loop over samples, each drawing ``theta`` and computing the pairs' likelihoods vectorised over
pairs in float64, accumulating the nine sums of the delta method directly (no log-space shifts,
so it does less work than ours). Throughput is samples x pairs per second; both sides run
different sample counts (the loop is slow), so ``ours_s`` and ``reference_s`` are seconds per
10^8 samples x pairs (medians of runs alternated between the two, after one compile / warm-up
call each), and ``speedup = reference_s / ours_s`` (target >= 20). On a shared, loaded machine the
ratio moves with the load: XLA spreads the chunk over the cores, the NumPy loop uses one.

Memory: ``jax_temp_bytes`` is the compiled program's temporary buffers (XLA
``memory_analysis``) for the measured run, ``jax_temp_bytes_1e6_x_1000`` the same for 10^6 samples
x 1,000 pairs (compiled, not run: the chunked loop keeps it independent of the sample count);
``numpy_peak_bytes`` is tracemalloc's peak during the reference loop; ``maxrss_delta_bytes`` the
growth of the process's peak RSS over the whole case.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np

from bench._harness import first_call, record, sig
from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.testing import estimate as est_mod
from gensim_jax.testing import estimate_log_similarity, gaussian_mixture_model, sample_pairs

PER = 1e8  # timings are reported as seconds per 10^8 samples x pairs

MIXTURE = dict(
    weights=[0.5, 0.3, 0.2],
    means=[[0.0, 0.0], [2.0, 1.0], [-1.0, 2.5]],
    covariances=[[[1.0, 0.3], [0.3, 0.5]], [[0.6, -0.2], [-0.2, 0.8]], [[0.4, 0.0], [0.0, 1.5]]],
)


def numpy_loop(x1, x2, weights, means, covs, num_samples, seed=0):
    """Eq. 1 by a plain loop over samples (float64), vectorised over pairs; returns (log s, se)."""
    rng = np.random.default_rng(seed)
    inv_sqrt, log_det = [], []
    for c in covs:
        w, u = np.linalg.eigh(c)
        inv_sqrt.append(u @ np.diag(w**-0.5) @ u.T)
        log_det.append(np.log(w).sum())
    dim = x1.shape[1]
    acc = np.zeros((9, x1.shape[0]))
    for _ in range(num_samples):
        k = rng.choice(len(weights), p=weights)
        z1 = (x1 - means[k]) @ inv_sqrt[k].T
        z2 = (x2 - means[k]) @ inv_sqrt[k].T
        l1 = -0.5 * (z1 * z1).sum(1) - 0.5 * log_det[k] - 0.5 * dim * math.log(2 * math.pi)
        l2 = -0.5 * (z2 * z2).sum(1) - 0.5 * log_det[k] - 0.5 * dim * math.log(2 * math.pi)
        b, c = np.exp(l1), np.exp(l2)
        a = b * c
        acc[0] += a
        acc[1] += b
        acc[2] += c
        acc[3] += a * a
        acc[4] += b * b
        acc[5] += c * c
        acc[6] += a * b
        acc[7] += a * c
        acc[8] += b * c
    n = num_samples
    ma, mb, mc = acc[0] / n, acc[1] / n, acc[2] / n
    eu2 = (
        acc[3] / ma**2
        + acc[4] / mb**2
        + acc[5] / mc**2
        - 2 * acc[6] / (ma * mb)
        - 2 * acc[7] / (ma * mc)
        + 2 * acc[8] / (mb * mc)
    ) / n
    se = np.sqrt(np.maximum(eu2 - 1.0, 0.0) / (n - 1))
    return np.log(ma) - np.log(mb) - np.log(mc), se


def _temp_bytes(model, x1, x2, num_samples, num_pairs):
    return est_mod.estimate_temp_bytes(model, x1, x2, num_samples)


def run(quick: bool = False) -> list[dict]:
    """One line per case: 1,000 pairs (the headline) and 100 pairs (where the loop's per-sample
    Python overhead dominates); ``--quick``: 100 pairs, tiny sample counts."""
    if quick:
        return [_case(100, 4_000, 200, repeats=2, big_memory=True)]
    return [_case(1000, 60_000, 1_000, repeats=9, big_memory=True), _case(100, 300_000, 2_000, repeats=9)]


def _case(num_pairs: int, s_ours: int, s_ref: int, repeats: int, big_memory: bool = False) -> dict:
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    mix = gm.make_mixture(MIXTURE["weights"], MIXTURE["means"], MIXTURE["covariances"])
    model = gaussian_mixture_model(mix)
    x1, x2 = sample_pairs(model, jax.random.key(0), num_pairs)
    key = jax.random.key(1)

    def ours():
        return estimate_log_similarity(model, x1, x2, key, s_ours)

    weights = np.asarray(MIXTURE["weights"], np.float64)
    means = np.asarray(MIXTURE["means"], np.float64)
    covs = np.asarray(MIXTURE["covariances"], np.float64)
    x1n, x2n = np.asarray(x1, np.float64), np.asarray(x2, np.float64)

    def reference(seed=0):
        return numpy_loop(x1n, x2n, weights, means, covs, s_ref, seed=seed)

    _, compile_s = first_call(ours)
    tracemalloc.start()
    ref_log_s, ref_se = reference()  # warm-up, and the peak of the loop's own allocations
    numpy_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    t_ours, t_ref = [], []
    for r in range(repeats):  # alternated (ours first on even rounds), medians reported
        for which in (0, 1) if r % 2 == 0 else (1, 0):
            t0 = time.perf_counter()
            ours() if which == 0 else reference(seed=r + 1)
            (t_ours if which == 0 else t_ref).append(time.perf_counter() - t0)
    t_ours = {"median_s": statistics.median(t_ours), "min_s": min(t_ours), "repeats": repeats}
    t_ref_med, t_ref_min = statistics.median(t_ref), min(t_ref)
    # the two estimates agree within their combined standard errors (a by-product check)
    est = ours()
    z = np.abs(est.log_similarity - ref_log_s) / np.sqrt(est.stderr**2 + ref_se**2)
    ours_rate = s_ours * num_pairs / t_ours["median_s"]
    ref_rate = s_ref * num_pairs / t_ref_med
    timing = {
        "ours_s": PER / ours_rate,
        "reference_s": PER / ref_rate,
        "compile_s": compile_s,
        "repeats": repeats,
        "ours_min_s": PER * t_ours["min_s"] / (s_ours * num_pairs),
        "reference_min_s": PER * t_ref_min / (s_ref * num_pairs),
    }
    temp = _temp_bytes(model, x1, x2, s_ours, num_pairs)
    extra = {}
    if big_memory:
        extra["jax_temp_bytes_1e6_x_1000"] = _temp_bytes(model, jnp.zeros((1000, 2)), jnp.zeros((1000, 2)), 10**6, 1000)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return record(
        "mc_estimator_gaussian_mixture",
        {
            "pairs": num_pairs,
            "samples_ours": s_ours,
            "samples_reference": s_ref,
            "components": 3,
            "dim": 2,
            "timings_per": "1e8 samples x pairs",
        },
        timing,
        reference="NumPy loop over samples, vectorised over pairs, float64",
        target=20.0,
        higher_is_better=True,
        ours_samples_pairs_per_s=sig(ours_rate),
        reference_samples_pairs_per_s=sig(ref_rate),
        max_z_vs_reference=sig(float(np.max(z))),
        jax_temp_bytes=temp,
        numpy_peak_bytes=int(numpy_peak),
        maxrss_delta_bytes=int(rss1 - rss0),
        **extra,
    )


if __name__ == "__main__":  # python -m bench.functions.mc_estimator [--quick]
    import sys

    from bench._harness import emit

    for line in run(quick="--quick" in sys.argv):
        emit(line)
