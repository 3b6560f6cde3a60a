r"""Generative models as the toolkit sees them, and ready models of the shipped kernels' processes.

A :class:`GenerativeModel` is the pair of samplers that
:func:`gensim_jax.kernels.monte_carlo.sample_triplets` already takes (``prior_sampler(key) ->
theta``, ``likelihood_sampler(key, theta) -> x``) plus the log-likelihood ``log_likelihood(x,
theta)`` (and, for importance sampling, the log prior density ``log_prior(theta)``). One object
serves triplet sampling (paper Eq. A3) and kernel testing (paper Eq. 1,
:func:`gensim_jax.testing.estimate_log_similarity`). ``theta`` and ``x`` may be any pytrees; every
function must be traceable (they are ``vmap``-ed and ``jit``-ed).

Hierarchical models (paper Appendix K) fit the same interface: :func:`path_prior` turns a
level-by-level process (``init(key) -> state``, ``step(key, state, level) -> state``) into a prior
whose draw ``theta`` is the whole path of states, root first. :func:`hierarchy_model` is the
Appendix K walk on a :class:`~gensim_jax.kernels.hierarchy.Tree` built that way.

Ready models (the generative processes behind the shipped closed forms):

==================================  =====================================================  ==============================
model                               process                                                closed form it checks
==================================  =====================================================  ==============================
:func:`beta_bernoulli_model`        ``theta_i ~ Beta(a, b)``, ``f_i ~ Bern(theta_i)``      Eq. I3, Eq. I10 (``a = b``)
:func:`hierarchy_model`             stop depth ``k ~ q``, walk to depth ``k``, then apart   Eq. 4 with ``q`` uniform on 1..K
:func:`gaussian_mixture_model`      ``k ~ w``, ``x ~ N(mu_k, Sigma_k)``                    Eq. H2
:func:`categorical_model`           ``c ~ pi``, label ``y = c`` (or uniform w.p. ``eps``)  App. A table / noisy-label table
==================================  =====================================================  ==============================

Their log-likelihoods are written here from the process (``jax.scipy.stats`` densities, direct
path sums), not taken from the kernel modules, so a check against them is an independent one.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from gensim_jax.testing import GenerativeModel
    >>> model = GenerativeModel(
    ...     prior_sampler=lambda k: jax.random.normal(k, (2,)),
    ...     likelihood_sampler=lambda k, mu: mu + 0.5 * jax.random.normal(k, (2,)),
    ...     log_likelihood=lambda x, mu: jax.scipy.stats.norm.logpdf(x, mu, 0.5).sum())
    >>> model.sample_triplets(jax.random.key(0), 4).anchor.shape
    (4, 2)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln

from gensim_jax.kernels import gaussian_mixture as _gm
from gensim_jax.kernels import hierarchy as _hier
from gensim_jax.kernels import monte_carlo as _mc
from gensim_jax.kernels.categorical import check_class_probs

__all__ = [
    "GenerativeModel",
    "Proposal",
    "path_prior",
    "sample_pairs",
    "beta_bernoulli_model",
    "beta_bernoulli_posterior_proposal",
    "hierarchy_model",
    "hierarchy_eq4_model",
    "gaussian_mixture_model",
    "categorical_model",
]


def _check_callable(name: str, fn, signature: str) -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be callable {signature}; got {type(fn).__name__}")


@dataclasses.dataclass(frozen=True, eq=False)
class GenerativeModel:
    """A generative model ``theta ~ p(theta)``, ``x ~ p(x | theta)`` with its log-likelihood (paper Eq. 1).

    Hashable by identity (it is a static argument of the toolkit's jitted estimator): build a model
    once and reuse it, a new object recompiles.

    Attributes:
      prior_sampler: ``key -> theta``, one draw from ``p(theta)`` (``theta`` any pytree).
      likelihood_sampler: ``(key, theta) -> x``, one draw from ``p(x | theta)``.
      log_likelihood: ``(x, theta) -> log p(x | theta)``, a scalar (``-inf`` where ``x`` is
        impossible under ``theta``).
      log_prior: optional ``theta -> log p(theta)``, the prior density (or mass) in the measure the
        proposal's ``log_prob`` uses; needed only for importance sampling.
      name: a label used in reports.
    """

    prior_sampler: Callable[[jax.Array], Any]
    likelihood_sampler: Callable[[jax.Array, Any], Any]
    log_likelihood: Callable[[Any, Any], jax.Array]
    log_prior: Optional[Callable[[Any], jax.Array]] = None
    name: str = "model"

    def __post_init__(self):
        _check_callable("prior_sampler", self.prior_sampler, "key -> theta")
        _check_callable("likelihood_sampler", self.likelihood_sampler, "(key, theta) -> x")
        _check_callable("log_likelihood", self.log_likelihood, "(x, theta) -> scalar")
        if self.log_prior is not None:
            _check_callable("log_prior", self.log_prior, "theta -> scalar")

    def sample_triplets(self, key: jax.Array, num: int) -> _mc.Triplets:
        """Eq. A3 triplets from this model (:func:`gensim_jax.kernels.monte_carlo.sample_triplets`)."""
        return _mc.sample_triplets(key, self.prior_sampler, self.likelihood_sampler, num)


@dataclasses.dataclass(frozen=True, eq=False)
class Proposal:
    """An importance-sampling proposal ``q(theta)`` for :func:`~gensim_jax.testing.estimate_log_similarity`.

    With ``pair_conditional=False`` one proposal serves every pair: ``sampler(key) -> theta`` and
    ``log_prob(theta) -> log q(theta)``. With ``pair_conditional=True`` the proposal may depend on
    the pair (e.g. centred on the two points when the likelihood is peaked):
    ``sampler(key, x1, x2) -> theta`` and ``log_prob(theta, x1, x2)``. ``log_prob`` must be a
    normalised density in the same measure as the model's ``log_prior``, and ``q`` must be positive
    wherever ``p(theta) p(x | theta)`` is (a defensive mixture with the prior guarantees it).
    """

    sampler: Callable[..., Any]
    log_prob: Callable[..., jax.Array]
    pair_conditional: bool = False

    def __post_init__(self):
        _check_callable("sampler", self.sampler, "key -> theta (or (key, x1, x2) -> theta)")
        _check_callable("log_prob", self.log_prob, "theta -> scalar (or (theta, x1, x2) -> scalar)")


def path_prior(
    init_sampler: Callable[[jax.Array], Any], step_sampler: Callable[[jax.Array, Any, jax.Array], Any], num_levels: int
) -> Callable[[jax.Array], Any]:
    """Prior sampler of a hierarchical process that draws a path of parameters level by level (App. K).

    ``state_0 = init_sampler(key_0)``, ``state_{l+1} = step_sampler(key_{l+1}, state_l, l)`` for
    ``l = 0 .. num_levels - 1`` (a ``lax.scan``); the draw ``theta`` is the whole path, every leaf
    of the state pytree stacked on a leading axis of length ``num_levels + 1`` (root first). The
    likelihood of such a model reads the path (usually its last state).

    Args:
      init_sampler: ``key -> state`` (the root level).
      step_sampler: ``(key, state, level) -> state`` of the same structure; ``level`` an int32 scalar.
      num_levels: number of steps (a non-negative Python int).

    Returns:
      ``prior_sampler(key) -> path``, usable in :class:`GenerativeModel` and ``sample_triplets``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> walk = path_prior(lambda k: jnp.zeros(()), lambda k, s, l: s + jax.random.normal(k), 3)
      >>> walk(jax.random.key(0)).shape
      (4,)
    """
    _check_callable("init_sampler", init_sampler, "key -> state")
    _check_callable("step_sampler", step_sampler, "(key, state, level) -> state")
    if isinstance(num_levels, bool) or not isinstance(num_levels, (int, np.integer)) or num_levels < 0:
        raise ValueError(f"num_levels must be a non-negative int; got {num_levels!r}")
    num_levels = int(num_levels)

    def sample(key):
        k0, k_steps = jax.random.split(key)
        state0 = init_sampler(k0)
        if num_levels == 0:
            return jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], state0)

        def body(state, inp):
            k, level = inp
            new = step_sampler(k, state, level)
            return new, new

        levels = jnp.arange(num_levels, dtype=jnp.int32)
        _, rest = jax.lax.scan(body, state0, (jax.random.split(k_steps, num_levels), levels))
        return jax.tree_util.tree_map(lambda a, b: jnp.concatenate([jnp.asarray(a)[None], b]), state0, rest)

    return sample


def sample_pairs(model: GenerativeModel, key: jax.Array, num_pairs: int, same_fraction: float = 0.5):
    """Test pairs ``(x1, x2)`` drawn from the model: a fraction from one ``theta``, the rest from two.

    The first ``round(same_fraction * num_pairs)`` pairs share their ``theta`` (anchor, positive of
    Eq. A3: similar pairs, large ``log s``), the others have independent ``theta`` (anchor,
    negative). Inputs for :func:`~gensim_jax.testing.assert_log_similarity_close`.

    Returns:
      ``(x1, x2)``, pytrees with leading axis ``num_pairs``.
    """
    if isinstance(num_pairs, bool) or not isinstance(num_pairs, (int, np.integer)) or num_pairs < 1:
        raise ValueError(f"num_pairs must be a positive int; got {num_pairs!r}")
    if not 0.0 <= same_fraction <= 1.0:
        raise ValueError(f"same_fraction must be in [0, 1]; got {same_fraction!r}")
    t = model.sample_triplets(key, int(num_pairs))
    n_same = int(round(same_fraction * num_pairs))
    idx = jnp.arange(num_pairs)
    x2 = jax.tree_util.tree_map(
        lambda p, n: jnp.where((idx < n_same).reshape((-1,) + (1,) * (p.ndim - 1)), p, n), t.positive, t.negative
    )
    return t.anchor, x2


# ---------------------------------------------------------------------------------------- Beta-Bernoulli


#: Rounds of the vectorised Marsaglia-Tsang sampler; each accepts with probability > 0.95 for every
#: shape >= 1, so all rounds reject with probability < 0.05 ** 8 < 4e-11 (then the last proposal is kept).
_GAMMA_ROUNDS = 8


def _log_gamma_sample(key, a, shape):
    """``log G`` with ``G ~ Gamma(a, 1)``: Marsaglia-Tsang (2000) in fixed vectorised rounds.

    ``jax.random.loggamma`` runs a data-dependent while loop that is slow to compile and to run on
    CPU; this version is straight-line code. Shapes ``a < 1`` use the boost
    ``G(a) = G(a + 1) U^(1/a)``, kept in log space (exact for tiny ``a``).
    """
    a = jnp.broadcast_to(jnp.asarray(a, jnp.float32), shape)
    boost = a < 1.0
    a1 = jnp.where(boost, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    k_norm, k_unif = jax.random.split(key)
    normals = jax.random.normal(k_norm, (_GAMMA_ROUNDS,) + tuple(shape))  # two random-bit calls for all rounds
    log_us = jnp.log(
        jax.random.uniform(k_unif, (_GAMMA_ROUNDS + 1,) + tuple(shape), minval=jnp.finfo(jnp.float32).tiny)
    )
    out = jnp.zeros(shape, jnp.float32)
    done = jnp.zeros(shape, bool)
    for r in range(_GAMMA_ROUNDS):
        x = normals[r]
        v = (1.0 + c * x) ** 3
        safe_v = jnp.where(v > 0, v, 1.0)
        accept = (v > 0) & (log_us[r] < 0.5 * x * x + d - d * safe_v + d * jnp.log(safe_v))
        take = (accept & ~done) | ((r == _GAMMA_ROUNDS - 1) & ~done & (v > 0))
        out = jnp.where(take, jnp.log(d * safe_v), out)
        done = done | take
    log_u = log_us[-1]
    return jnp.where(boost, out + log_u / a, out)


def _beta_log_sample(key, a, b, shape):
    """``(log theta, log(1 - theta))`` of ``theta ~ Beta(a, b)`` via log-gamma draws (exact for tiny a, b)."""
    ka, kb = jax.random.split(key)
    ga = _log_gamma_sample(ka, a, shape)
    gb = _log_gamma_sample(kb, b, shape)
    norm = jnp.logaddexp(ga, gb)
    return ga - norm, gb - norm


def _beta_log_pdf(log_t, log_1mt, a, b):
    return (a - 1.0) * log_t + (b - 1.0) * log_1mt - betaln(a, b)


def beta_bernoulli_model(num_features: int, alpha=1.0, beta=1.0) -> GenerativeModel:
    """The Beta-Bernoulli feature process of paper Eq. 3 (the model of Eqs. I3 and I10).

    ``theta_i ~ Beta(alpha, beta)`` independently for ``i < F``; ``f_i ~ Bern(theta_i)``.
    ``theta`` is stored as ``{"log_p": log theta, "log_q": log(1 - theta)}`` (each ``(F,)``), drawn
    from log-gamma variates, so ``alpha = beta = 1e-3`` (rates at 0 or 1 to float precision) keeps
    finite log-likelihoods. ``x`` is a ``(F,)`` float32 0/1 vector. ``log_prior`` is the Beta
    density in ``theta``.

    Args:
      num_features: ``F`` (positive int).
      alpha, beta: positive scalars or ``(F,)`` arrays.
    """
    if isinstance(num_features, bool) or not isinstance(num_features, (int, np.integer)) or num_features < 1:
        raise ValueError(f"num_features must be a positive int; got {num_features!r}")
    f = int(num_features)
    a = np.broadcast_to(np.asarray(alpha, np.float32), (f,))
    b = np.broadcast_to(np.asarray(beta, np.float32), (f,))
    if not (np.all(np.isfinite(a)) and np.all(a > 0) and np.all(np.isfinite(b)) and np.all(b > 0)):
        raise ValueError(f"alpha and beta must be finite and > 0; got alpha={alpha!r}, beta={beta!r}")
    a_j, b_j = jnp.asarray(a), jnp.asarray(b)

    def prior(key):
        lp, lq = _beta_log_sample(key, a_j, b_j, (f,))
        return {"log_p": lp, "log_q": lq}

    def likelihood_sampler(key, theta):
        return (jnp.log(jax.random.uniform(key, (f,))) < theta["log_p"]).astype(jnp.float32)

    def log_likelihood(x, theta):
        return jnp.sum(jnp.where(x > 0.5, theta["log_p"], theta["log_q"]))

    def log_prior(theta):
        return jnp.sum(_beta_log_pdf(theta["log_p"], theta["log_q"], a_j, b_j))

    return GenerativeModel(
        prior, likelihood_sampler, log_likelihood, log_prior, name=f"beta_bernoulli(F={f}, alpha={alpha}, beta={beta})"
    )


def beta_bernoulli_posterior_proposal(num_features: int, alpha=1.0, beta=1.0) -> Proposal:
    """Pair-conditional importance proposal for :func:`beta_bernoulli_model` (peaked priors, ``alpha = beta -> 0``).

    With ``alpha = beta -> 0`` the prior puts the rates at 0 or 1, so prior draws almost never
    explain a pair that disagrees on a feature (plain Monte Carlo then reports a confident but
    wrong value with a tiny effective sample size). This proposal is the equal mixture, over whole
    rate vectors, of the three posteriors ``p(theta | x1, x2)``, ``p(theta | x1)``,
    ``p(theta | x2)`` (Beta by conjugacy, per feature ``Beta(alpha + n1, beta + n0)``). Every
    importance weight of the three terms of Eq. 1 is then at most 3 times its mean, so the
    effective sample size stays above about ``S / 3`` for any ``alpha, beta``.
    """
    f = int(num_features)
    a = jnp.asarray(np.broadcast_to(np.asarray(alpha, np.float32), (f,)))
    b = jnp.asarray(np.broadcast_to(np.asarray(beta, np.float32), (f,)))
    shifts = jnp.arange(3, dtype=jnp.float32)[:, None]  # the posterior shapes are a + {0, 1, 2}, b + {0, 1, 2}

    def counts(x1, x2):
        ones = jnp.stack([x1 + x2, x1, x2]).astype(jnp.int32)  # (3, F) successes under the three posteriors
        trials = jnp.asarray([2, 1, 1], jnp.int32)[:, None]
        return ones, trials - ones

    def sampler(key, x1, x2):
        # The gamma draws depend on the key only, so under vmap over pairs they are made once per
        # sample and shared: each pair still gets an exact draw from its own proposal.
        kc, ka, kb = jax.random.split(key, 3)
        comp = jax.random.randint(kc, (), 0, 3)
        ga = _log_gamma_sample(ka, a + shifts, (3, f))  # Gamma(a + j), j = 0, 1, 2
        gb = _log_gamma_sample(kb, b + shifts, (3, f))
        n1, n0 = counts(x1, x2)
        cols = jnp.arange(f)
        la, lb = ga[n1[comp], cols], gb[n0[comp], cols]
        norm = jnp.logaddexp(la, lb)
        return {"log_p": la - norm, "log_q": lb - norm}

    def log_prob(theta, x1, x2):
        n1, n0 = counts(x1, x2)
        per_comp = jnp.sum(_beta_log_pdf(theta["log_p"], theta["log_q"], a + n1, b + n0), axis=-1)  # (3,)
        return jax.scipy.special.logsumexp(per_comp) - np.log(3.0)

    return Proposal(sampler, log_prob, pair_conditional=True)


# ---------------------------------------------------------------------------------------- hierarchy


def hierarchy_model(tree: _hier.Tree, stop_depth_probs) -> GenerativeModel:
    """The Appendix K walk on a tree as a hierarchical model: ``theta`` is a path of nodes.

    Prior (level by level, :func:`path_prior`): draw a stop depth ``k ~ stop_depth_probs``, start at
    the root, and for ``level = 0 .. D - 1`` move to a child (chosen with the tree's edge
    probabilities) while ``level < k`` and the node has children. ``theta = {"path": (D + 1,) node
    ids, "stop": k}``; the last path entry is the node ``v`` where the shared walk stopped.
    Likelihood: the item (a leaf id, int32) continues the walk from ``v`` to a leaf, so
    ``log p(x | theta) = sum of log edge probabilities from v down to x`` (``-inf`` unless ``v`` is
    an ancestor of ``x`` or ``x`` itself). Items inside a leaf are left out: their uniform
    ``1 / M`` factors cancel in Eq. 1.

    With this prior ``E[p(x1 | theta) p(x2 | theta)] / (p(x1) p(x2)) = sum_k q_k prod_{j<=k} 1/p_j``
    over ``k <= K`` (``K`` the separation depth). Paper Eq. 4 is the case ``q`` uniform on
    ``1..K``: see :func:`hierarchy_eq4_model`.

    Args:
      tree: a :class:`~gensim_jax.kernels.hierarchy.Tree` whose child edges sum to one at every
        internal node (a proper walk).
      stop_depth_probs: ``(D + 1,)`` probabilities of stopping at depth ``0..D``, ``D = tree.max_depth``.

    Raises:
      ValueError: edge probabilities of a node not summing to one; ``stop_depth_probs`` of the
        wrong length or not a probability vector.
    """
    if not isinstance(tree, _hier.Tree):
        raise TypeError(f"tree must be a kernels.hierarchy.Tree; got {type(tree).__name__}")
    n, depth_max = tree.num_nodes, tree.max_depth
    q = np.asarray(stop_depth_probs, np.float64)
    if q.shape != (depth_max + 1,):
        raise ValueError(f"stop_depth_probs must have shape ({depth_max + 1},) (depths 0..{depth_max}); got {q.shape}")
    if not (np.all(np.isfinite(q)) and np.all(q >= 0) and abs(q.sum() - 1.0) < 1e-6):
        raise ValueError(f"stop_depth_probs must be a probability vector; got {q.tolist()}")
    par = tree.parents
    prob = np.exp(tree.log_edge_prob)
    sums = np.bincount(par[par >= 0], weights=prob[par >= 0], minlength=n)
    bad = np.flatnonzero((tree.num_children > 0) & (np.abs(sums - 1.0) > 1e-5))
    if bad.size:
        raise ValueError(
            f"the child edge probabilities of node {bad[0]} sum to {sums[bad[0]]:.6g}, not 1: "
            "hierarchy_model needs a proper walk"
        )
    max_children = int(tree.num_children.max(initial=0))
    children = np.zeros((n, max(max_children, 1)), np.int32)
    child_logits = np.full((n, max(max_children, 1)), -np.inf, np.float32)
    fill = np.zeros(n, np.int64)
    for v in range(n):
        p = par[v]
        if p >= 0:
            children[p, fill[p]] = v
            child_logits[p, fill[p]] = tree.log_edge_prob[v]
            fill[p] += 1
    # ancestors[x, d]: the ancestor of x at depth d (-1 below x); cum[x]: log prob of the root-to-x path
    anc = np.full((n, depth_max + 1), -1, np.int32)
    cum = np.zeros(n, np.float64)
    for v in range(n):
        path = tree.path(v)
        anc[v, : path.size] = path
        cum[v] = float(np.sum(tree.log_edge_prob[path[1:]]))
    children_j, logits_j = jnp.asarray(children), jnp.asarray(child_logits)
    has_children = jnp.asarray(tree.num_children > 0)
    anc_j, cum_j = jnp.asarray(anc), jnp.asarray(cum, jnp.float32)
    depth_j = jnp.asarray(tree.depth, jnp.int32)
    log_q = jnp.asarray(np.log(np.where(q > 0, q, 1.0)) + np.where(q > 0, 0.0, -np.inf), jnp.float32)
    root = int(tree.root)

    def init(key):
        return {"node": jnp.asarray(root, jnp.int32), "stop": jax.random.categorical(key, log_q).astype(jnp.int32)}

    def step(key, state, level):
        v = state["node"]
        child = children_j[v, jax.random.categorical(key, logits_j[v])]
        move = (level < state["stop"]) & has_children[v]
        return {"node": jnp.where(move, child, v), "stop": state["stop"]}

    walk = path_prior(init, step, depth_max)

    def prior(key):
        path = walk(key)
        return {"path": path["node"], "stop": path["stop"][0]}

    def likelihood_sampler(key, theta):
        def body(v, k):
            child = children_j[v, jax.random.categorical(k, logits_j[v])]
            return jnp.where(has_children[v], child, v), None

        leaf, _ = jax.lax.scan(body, theta["path"][-1], jax.random.split(key, max(depth_max, 1)))
        return leaf

    def log_likelihood(x, theta):
        v = theta["path"][-1]
        below = anc_j[x, depth_j[v]] == v
        return jnp.where(below, cum_j[x] - cum_j[v], -jnp.inf)

    def log_prior(theta):
        return log_q[theta["stop"]] + cum_j[theta["path"][-1]]

    return GenerativeModel(
        prior, likelihood_sampler, log_likelihood, log_prior, name=f"hierarchy(nodes={n}, depth={depth_max})"
    )


def hierarchy_eq4_model(tree: _hier.Tree, separation_depth: int) -> GenerativeModel:
    """The sampled process of paper Eq. 4 (Appendix K) for the pairs of separation depth ``K``.

    Appendix K sums over the joint processes that walk the shared path down to depth
    ``k = 1..K`` and weighs them equally (the ``1/K``): :func:`hierarchy_model` with the stop depth
    uniform on ``1..K`` (``K = 0``: stop at the root, ``log s = 0``). Because the weights depend
    on ``K``, check Eq. 4 on a group of pairs that share ``K`` (``hierarchy.lca_depth``).

    Args:
      tree: a :class:`~gensim_jax.kernels.hierarchy.Tree` (proper walk, see :func:`hierarchy_model`).
      separation_depth: ``K`` in ``[0, tree.max_depth]``.
    """
    k = int(separation_depth)
    if k != separation_depth or not 0 <= k <= tree.max_depth:
        raise ValueError(f"separation_depth must be an int in [0, {tree.max_depth}]; got {separation_depth!r}")
    q = np.zeros(tree.max_depth + 1)
    if k == 0:
        q[0] = 1.0
    else:
        q[1 : k + 1] = 1.0 / k
    return hierarchy_model(tree, q)


# ---------------------------------------------------------------------------------------- mixture, classes


def gaussian_mixture_model(mixture: _gm.GaussianMixture) -> GenerativeModel:
    """The Gaussian-mixture process of paper Appendices F-H (the model of Eq. H2).

    ``theta = k ~ Categorical(w)`` (int32), ``x ~ N(mu_k, Sigma_k)``. The log-likelihood uses
    ``Sigma_k^{-1/2}`` and ``log det Sigma_k`` computed once in float64 NumPy from
    ``Sigma_k = L_k L_k^T`` (an explicit inverse, independent of the kernel module's triangular
    solves), then ``-|Sigma_k^{-1/2} (x - mu_k)|^2 / 2 - log det / 2 - D log(2 pi) / 2`` per point.
    """
    if not isinstance(mixture, _gm.GaussianMixture):
        raise TypeError(f"mixture must be a GaussianMixture; got {type(mixture).__name__}")
    means = jnp.asarray(mixture.means, jnp.float32)
    scale = np.asarray(mixture.scale, np.float64)
    cov = np.stack([np.diag(s * s) for s in scale]) if scale.ndim == 2 else scale @ np.swapaxes(scale, -1, -2)
    w_eig, u_eig = np.linalg.eigh(cov)  # Sigma^{-1/2} = U diag(w^{-1/2}) U^T
    inv_sqrt = jnp.asarray(u_eig @ (w_eig[..., :, None] ** -0.5 * np.swapaxes(u_eig, -1, -2)), jnp.float32)
    log_det = jnp.asarray(np.sum(np.log(w_eig), axis=-1), jnp.float32)
    dim = means.shape[1]
    log_w = jnp.asarray(mixture.log_weights, jnp.float32)

    def prior(key):
        return jax.random.categorical(key, log_w).astype(jnp.int32)

    def log_likelihood(x, k):
        z = inv_sqrt[k] @ (x - means[k])
        return -0.5 * jnp.sum(z * z) - 0.5 * log_det[k] - 0.5 * dim * np.log(2.0 * np.pi)

    return GenerativeModel(
        prior,
        _mc.gaussian_mixture_likelihood(mixture),
        log_likelihood,
        lambda k: log_w[k],
        name=f"gaussian_mixture(K={means.shape[0]}, D={means.shape[1]})",
    )


def categorical_model(class_probs, label_noise: float = 0.0) -> GenerativeModel:
    """Class identity (paper Appendix A): ``c ~ pi``; the observed label is ``c`` (``label_noise = 0``).

    With ``label_noise = eps > 0`` the label is uniform over the ``C`` classes with probability
    ``eps`` (the model of ``categorical.noisy_label_log_similarity_table``):
    ``p(y | c) = (1 - eps) [y = c] + eps / C``. ``x`` is the int32 label.
    """
    check_class_probs(class_probs)
    if not 0.0 <= float(label_noise) <= 1.0:
        raise ValueError(f"label_noise must be in [0, 1]; got {label_noise!r}")
    pi = np.asarray(class_probs, np.float32)
    c = pi.shape[0]
    eps = float(label_noise)
    log_pi = jnp.log(jnp.asarray(pi))

    def prior(key):
        return jax.random.categorical(key, log_pi).astype(jnp.int32)

    def likelihood_sampler(key, cls):
        k_flip, k_label = jax.random.split(key)
        flip = jax.random.uniform(k_flip) < eps
        return jnp.where(flip, jax.random.randint(k_label, (), 0, c, jnp.int32), cls)

    def log_likelihood(y, cls):
        return jnp.log((1.0 - eps) * (y == cls) + eps / c)

    return GenerativeModel(
        prior, likelihood_sampler, log_likelihood, lambda cls: log_pi[cls], name=f"categorical(C={c}, eps={eps})"
    )
