"""Every shipped closed-form kernel checked against the Monte Carlo estimate of its generative process.

These test the toolkit as much as the kernels: each correct kernel must pass pair by pair within
5 standard errors, and deliberately wrong kernels (sign flipped, a factor 2, a dropped term) must
fail by a wide margin (worst z far above the threshold). Keys are fixed, so the tests are
deterministic; sample counts keep the file fast on a shared 2-core CPU.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

from gensim_jax.kernels import beta_bernoulli as bb
from gensim_jax.kernels import categorical
from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.kernels import hierarchy as H
from gensim_jax.testing import (
    KernelMismatchError,
    assert_log_similarity_close,
    beta_bernoulli_model,
    beta_bernoulli_posterior_proposal,
    categorical_model,
    estimate_log_similarity,
    gaussian_mixture_model,
    hierarchy_eq4_model,
    hierarchy_model,
    sample_pairs,
)
from gensim_jax.testing import strategies as gst

NUM_SE = 5.0
WIDE = 4 * NUM_SE  # a wrong kernel must miss by at least this many standard errors


def check(kernel, inputs, est):
    return assert_log_similarity_close(kernel, None, inputs, estimate=est, num_se=NUM_SE)


def assert_caught(kernel, inputs, est):
    with pytest.raises(KernelMismatchError) as info:
        check(kernel, inputs, est)
    assert info.value.report.worst_z > WIDE, info.value.report
    assert "worst pair" in str(info.value)
    return info.value.report


# ------------------------------------------------------------------------------ Beta-Bernoulli (Eq. I3)

ALPHA = np.array([0.5, 1.0, 2.0, 0.7, 3.0], np.float32)
BETA = np.array([1.5, 1.0, 0.5, 2.0, 1.0], np.float32)
BB_MODEL = beta_bernoulli_model(5, ALPHA, BETA)
BB_SAMPLES = 20_000


def exact_bb(a, b):
    return bb.log_similarity(a, b, ALPHA, BETA)


@pytest.mark.slow
def test_beta_bernoulli_exact_kernel():
    x1, x2 = sample_pairs(BB_MODEL, jax.random.key(0), 32)
    est = estimate_log_similarity(BB_MODEL, x1, x2, jax.random.key(1), BB_SAMPLES)
    report = check(exact_bb, (x1, x2), est)
    assert report.min_ess > 500
    assert_caught(lambda a, b: -exact_bb(a, b), (x1, x2), est)
    assert_caught(lambda a, b: 2 * exact_bb(a, b), (x1, x2), est)
    # alpha and beta swapped: a plausible slip
    assert_caught(lambda a, b: bb.log_similarity(a, b, BETA, ALPHA), (x1, x2), est)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(pairs=gst.feature_pairs(num_features=5, num_pairs=32))
@pytest.mark.slow
def test_beta_bernoulli_exact_kernel_on_hypothesis_inputs(pairs):
    est = estimate_log_similarity(BB_MODEL, pairs[0], pairs[1], jax.random.key(2), BB_SAMPLES)
    check(exact_bb, pairs, est)


@pytest.mark.slow
def test_beta_bernoulli_limit_with_scale_and_offset():
    """alpha = beta = b -> 0 (Eqs. I8-I10): exact kernel = F log(2(b+1)/(2b+1)) + scale * limit kernel."""
    b, f = 0.01, 6
    model = beta_bernoulli_model(f, b, b)
    x1, x2 = sample_pairs(model, jax.random.key(3), 30)
    x2 = x2.at[-10:].set(1.0 - x1[-10:])  # pairs that disagree on every feature
    est = estimate_log_similarity(
        model, x1, x2, jax.random.key(4), 20_000, proposal=beta_bernoulli_posterior_proposal(f, b, b)
    )
    scale, offset_b_to_0 = bb.limit_scale_and_offset(b, f)
    offset_b = f * math.log(2 * (b + 1) / (2 * b + 1))
    report = check(lambda p, q: offset_b + scale * bb.limit_log_similarity(p, q), (x1, x2), est)
    assert report.min_ess > 2000
    assert_caught(lambda p, q: offset_b + 2 * scale * bb.limit_log_similarity(p, q), (x1, x2), est)
    assert_caught(lambda p, q: offset_b - scale * bb.limit_log_similarity(p, q), (x1, x2), est)
    # Eq. I10 verbatim uses the b -> 0 constant F log 2: at b = 0.01 that is F * 0.0098 too high,
    # which the estimate resolves (it is the limit, not the finite-b kernel)
    missed = assert_caught(lambda p, q: offset_b_to_0 + scale * bb.limit_log_similarity(p, q), (x1, x2), est)
    assert missed.worst_closed_form - missed.worst_estimate == pytest.approx(float(offset_b_to_0) - offset_b, abs=0.01)


# ------------------------------------------------------------------------------ hierarchy (Eq. 4, App. K)


def random_tree(seed, n):
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(max(0, i - 4), i)) for i in range(1, n)]  # deepish trees
    w = rng.uniform(0.1, 1.0, n)
    par = np.asarray(parents)
    sums = np.bincount(par[1:], weights=w[1:], minlength=n)
    probs = np.where(par >= 0, w / sums[np.maximum(par, 0)], 1.0)
    return H.Tree.from_parents(parents, probs)


def lca_depth_loop(tree, a, b):
    def up(v):
        path = [v]
        while tree.parents[path[-1]] >= 0:
            path.append(int(tree.parents[path[-1]]))
        return path[::-1]

    pa, pb = up(int(a)), up(int(b))
    k = 0
    while k + 1 < min(len(pa), len(pb)) and pa[k + 1] == pb[k + 1]:
        k += 1
    return k


TREE = random_tree(3, 12)
LEAVES = TREE.leaves.astype(np.int32)
A, B = (m.ravel() for m in np.meshgrid(LEAVES, LEAVES, indexing="ij"))
K_PAIRS = np.array([lca_depth_loop(TREE, a, b) for a, b in zip(A, B)])


def test_random_tree_is_deep_enough():
    assert TREE.max_depth >= 4 and len(LEAVES) >= 5 and len(set(K_PAIRS.tolist())) >= 3


@pytest.mark.slow
def test_hierarchy_eq4_as_one_sampled_process_over_all_pairs():
    """Stop depth uniform on 1..D, one model for all pairs.

    Stopping at depth k <= K contributes prod_{j<=k} 1/p_j (Appendix K), so the shared-path part is
    (1/D) sum_{k<=K} = (K / D) * Eq. 4; a walk told to stop below a leaf stops at the leaf, so a
    pair of the same leaf (K = its depth) also collects (D - K) / D times 1/p(leaf). K = 0: s = 0.
    """
    d = TREE.max_depth
    q = np.r_[0.0, np.full(d, 1.0 / d)]
    est = estimate_log_similarity(hierarchy_model(TREE, q), A, B, jax.random.key(6), 30_000)
    inv_p_leaf = np.array([np.exp(-np.sum(TREE.log_edge_prob[TREE.path(int(v))[1:]])) for v in A])
    same = A == B

    def as_process(log_s_eq4):
        with np.errstate(divide="ignore"):
            s = K_PAIRS * np.exp(np.asarray(log_s_eq4, np.float64)) + np.where(same, (d - K_PAIRS) * inv_p_leaf, 0.0)
            return np.log(s / d)

    def eq4(a, b):
        return H.log_similarity_pairs(TREE, a, b)

    report = check(lambda a, b: as_process(eq4(a, b)), (A, B), est)
    assert np.isneginf(report.estimate.log_similarity[K_PAIRS == 0]).all()
    assert_caught(lambda a, b: as_process(-eq4(a, b)), (A, B), est)
    assert_caught(lambda a, b: as_process(2 * eq4(a, b)), (A, B), est)
    # Eq. 4 without its 1/K (the sum instead of the mean over stop depths)
    assert_caught(lambda a, b: as_process(eq4(a, b) + np.log(np.maximum(K_PAIRS, 1))), (A, B), est)


@pytest.mark.slow
def test_hierarchy_eq4_literal_process_for_one_separation_depth():
    """Appendix K verbatim: stop depth uniform on 1..K for the pairs that part at depth K."""
    k = 2
    sel = K_PAIRS == k
    a, b = A[sel], B[sel]
    est = estimate_log_similarity(hierarchy_eq4_model(TREE, k), a, b, jax.random.key(7), 20_000)
    check(lambda x, y: H.log_similarity_pairs(TREE, x, y), (a, b), est)
    assert_caught(lambda x, y: 2 * H.log_similarity_pairs(TREE, x, y), (a, b), est)
    assert_caught(lambda x, y: -H.log_similarity_pairs(TREE, x, y), (a, b), est)


@pytest.mark.slow
def test_hierarchy_model_samples_leaves_with_the_walk_probabilities():
    model = hierarchy_eq4_model(TREE, 0)
    t = model.sample_triplets(jax.random.key(8), 4000)
    freq = np.bincount(np.asarray(t.anchor), minlength=TREE.num_nodes)[LEAVES] / 4000
    cum = np.array([np.sum(TREE.log_edge_prob[TREE.path(v)[1:]]) for v in LEAVES])
    np.testing.assert_allclose(freq, np.exp(cum), atol=0.03)


# ------------------------------------------------------------------------------ Gaussian mixture (Eq. H2)


@pytest.mark.slow
def test_gaussian_mixture_full_covariances():
    mix = gm.make_mixture(
        [0.5, 0.3, 0.2],
        [[0.0, 0.0, 1.0], [2.0, 1.0, -1.0], [-1.0, 2.5, 0.0]],
        [
            [[1.0, 0.3, 0.1], [0.3, 0.5, 0.0], [0.1, 0.0, 0.7]],
            [[0.6, -0.2, 0.0], [-0.2, 0.8, 0.2], [0.0, 0.2, 0.5]],
            [[0.4, 0.0, 0.1], [0.0, 1.5, -0.3], [0.1, -0.3, 0.9]],
        ],
    )
    model = gaussian_mixture_model(mix)
    x1, x2 = sample_pairs(model, jax.random.key(9), 40)
    x1 = x1.at[:3].set(jnp.array([[30.0, -20.0, 5.0], [-8.0, 9.0, 0.0], [1.0, 1.0, 1.0]]))  # far and in-between points
    est = estimate_log_similarity(model, x1, x2, jax.random.key(10), 5_000)

    def kernel(a, b):
        return gm.log_similarity(a, b, mix)

    check(kernel, (x1, x2), est)
    assert_caught(lambda a, b: -kernel(a, b), (x1, x2), est)
    assert_caught(lambda a, b: 2 * kernel(a, b), (x1, x2), est)
    # a diagonal approximation of the covariances is a wrong kernel too
    diag = gm.make_mixture(
        np.exp(np.asarray(mix.log_weights)),
        mix.means,
        np.asarray(jnp.diagonal(mix.scale @ jnp.swapaxes(mix.scale, 1, 2), axis1=1, axis2=2)),
    )
    assert_caught(lambda a, b: gm.log_similarity(a, b, diag), (x1, x2), est)


# ------------------------------------------------------------------------------ categorical (App. A)

PI = jnp.array([0.1, 0.2, 0.3, 0.4])
Y1, Y2 = (jnp.asarray(m.ravel(), jnp.int32) for m in np.meshgrid(np.arange(4), np.arange(4), indexing="ij"))


@pytest.mark.slow
def test_categorical_exact_kernel_with_minus_infinity():
    est = estimate_log_similarity(categorical_model(PI), Y1, Y2, jax.random.key(11), 20_000)
    check(lambda a, b: categorical.log_similarity(a, b, PI), (Y1, Y2), est)
    with pytest.raises(KernelMismatchError) as info:  # a finite floor is not the model's -inf
        check(lambda a, b: categorical.log_similarity(a, b, PI, log_floor=-1.0), (Y1, Y2), est)
    assert math.isinf(info.value.report.worst_ratio)
    assert_caught(lambda a, b: -categorical.log_similarity(a, b, PI), (Y1, Y2), est)
    assert_caught(lambda a, b: 2 * categorical.log_similarity(a, b, PI), (Y1, Y2), est)


@pytest.mark.slow
def test_categorical_noisy_label_kernel():
    eps = 0.2
    table = categorical.noisy_label_log_similarity_table(PI, eps)
    est = estimate_log_similarity(categorical_model(PI, eps), Y1, Y2, jax.random.key(12), 20_000)
    check(lambda a, b: categorical.table_lookup(table, a, b), (Y1, Y2), est)
    assert_caught(lambda a, b: 2 * categorical.table_lookup(table, a, b), (Y1, Y2), est)
    assert_caught(lambda a, b: -categorical.table_lookup(table, a, b), (Y1, Y2), est)
    # the noise-free table (floored) is a different model
    assert_caught(lambda a, b: categorical.log_similarity(a, b, PI, log_floor=float(table.min())), (Y1, Y2), est)
