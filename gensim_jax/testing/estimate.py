r"""Monte Carlo estimate of the generative similarity of any model (paper Eq. 1), with its standard error.

Paper Eq. 1 for a pair ``(x1, x2)``::

    log s(x1, x2) = log E_theta[p(x1|theta) p(x2|theta)] - log E_theta[p(x1|theta)] - log E_theta[p(x2|theta)]

:func:`estimate_log_similarity` replaces the three expectations by means over the same ``S`` draws
``theta_s ~ p(theta)`` (or ``theta_s ~ q`` with weights ``p(theta_s) / q(theta_s)``: importance
sampling), each computed as a log-mean-exp, so products of many likelihoods never under- or
overflow. With ``A_s = w_s p(x1|theta_s) p(x2|theta_s)``, ``B_s = w_s p(x1|theta_s)``,
``C_s = w_s p(x2|theta_s)`` the estimate is ``log mean(A) - log mean(B) - log mean(C)``; its
standard error is the delta method's, the three means being correlated::

    se^2 = Var_s(A_s / mean(A) - B_s / mean(B) - C_s / mean(C)) / (S - 1)

(the gradient of ``log a - log b - log c`` is ``(1/a, -1/b, -1/c)``). The report also gives Kish's
effective sample size of the joint term, ``(sum A)^2 / sum A^2``: when it is a small fraction of
``S`` the likelihood is peaked relative to the sampling distribution and the standard error itself
is unreliable -- use a :class:`~gensim_jax.testing.Proposal`.

Vectorisation and memory. One draw of ``theta`` serves every pair (common random numbers; a
pair-conditional proposal draws per pair). The samples are processed in chunks inside a
``lax.fori_loop``: a chunk evaluates the ``(chunk, P)`` log-likelihoods (``vmap`` over pairs and over
samples) and reduces them to nine running log-sums per pair (first moments, squares and cross
products of ``A, B, C``, each shifted by the chunk maximum and merged with ``logaddexp``), so the
memory is ``O(chunk x P)`` whatever ``S`` (``10**6`` samples x 1,000 pairs: about 6 MB of XLA
temporaries with the default chunk of ``2**18 // P`` samples, small enough to stay in cache; see
``bench/mc_estimator.py``).
Sample ``i`` uses the key ``fold_in(key, i)``, so the estimate does not depend on the chunk size.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from gensim_jax.testing import categorical_model, estimate_log_similarity
    >>> model = categorical_model(jnp.full(4, 0.25))
    >>> est = estimate_log_similarity(model, jnp.array([0, 1]), jnp.array([0, 2]), jax.random.key(0), 4000)
    >>> [round(float(v), 1) for v in est.log_similarity]   # log 4 = 1.39 and -inf
    [1.4, -inf]
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.testing.models import GenerativeModel, Proposal

__all__ = ["LogSimilarityEstimate", "estimate_log_similarity", "DEFAULT_MAX_CHUNK_ELEMENTS"]

#: Default bound on ``chunk x num_pairs`` (the size of one log-likelihood table of a chunk).
DEFAULT_MAX_CHUNK_ELEMENTS = 1 << 18

# Order of the nine running log-sums: first moments, squares, cross products.
_A, _B, _C, _AA, _BB, _CC, _AB, _AC, _BC = range(9)


class LogSimilarityEstimate(NamedTuple):
    """Monte Carlo estimate of paper Eq. 1 for ``P`` pairs (all arrays ``(P,)``, numpy float64).

    Attributes:
      log_similarity: the estimate ``log mean(A) - log mean(B) - log mean(C)``; ``-inf`` when no
        sample gave the pair a positive joint likelihood, NaN when none gave ``x1`` (or ``x2``) one.
      stderr: delta-method standard error (``inf`` where ``log_similarity`` is ``-inf``).
      log_joint: ``log E[p(x1|theta) p(x2|theta)]`` estimate.
      log_marginal1, log_marginal2: ``log E[p(x|theta)]`` estimates for ``x1`` and ``x2``.
      ess: Kish effective sample size of the joint term.
      num_samples: ``S``.
    """

    log_similarity: np.ndarray
    stderr: np.ndarray
    log_joint: np.ndarray
    log_marginal1: np.ndarray
    log_marginal2: np.ndarray
    ess: np.ndarray
    num_samples: int


def _leading_size(tree, name: str) -> int:
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise ValueError(f"{name} must contain at least one array")
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(
            f"every array in {name} must have the same leading (pair) axis; got leading sizes {sorted(sizes)}"
        )
    return sizes.pop()


def _check_positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}")
    return int(value)


def _shifted(l):
    """``exp(l - m)`` and ``m = max(l, axis=0)`` (0 where the whole column is ``-inf``)."""
    m = jnp.max(l, axis=0)
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    return jnp.exp(l - m), m


def _chunk_log_sums(log_w, l1, l2):
    """Nine ``(P,)`` log-sums over a chunk of ``(c, P)`` log-likelihoods (``log_w``: ``(c, 1)`` or ``(c, P)``)."""
    e_a, m_a = _shifted(l1 + l2 + log_w)
    e_b, m_b = _shifted(l1 + log_w)
    e_c, m_c = _shifted(l2 + log_w)
    sums = jnp.stack(
        [
            e_a.sum(0),
            e_b.sum(0),
            e_c.sum(0),
            (e_a * e_a).sum(0),
            (e_b * e_b).sum(0),
            (e_c * e_c).sum(0),
            (e_a * e_b).sum(0),
            (e_a * e_c).sum(0),
            (e_b * e_c).sum(0),
        ]
    )
    shifts = jnp.stack([m_a, m_b, m_c, 2 * m_a, 2 * m_b, 2 * m_c, m_a + m_b, m_a + m_c, m_b + m_c])
    return jnp.log(sums) + shifts


def _pair_log_likelihoods(model, x1, x2, thetas):
    """``(c, P)`` tables ``log p(x1[p] | theta_s)`` and ``log p(x2[p] | theta_s)``."""
    per_theta = lambda th: (
        jax.vmap(lambda x: model.log_likelihood(x, th))(x1),  # noqa: E731
        jax.vmap(lambda x: model.log_likelihood(x, th))(x2),
    )
    return jax.vmap(per_theta)(thetas)


@functools.partial(jax.jit, static_argnums=(0, 5, 6))
def _log_sums(model: GenerativeModel, x1, x2, key, num_samples, chunk: int, proposal: Optional[Proposal]):
    # num_samples is traced (a while loop over chunks): one compile per (model, shapes, chunk, proposal)
    num_chunks = (num_samples + chunk - 1) // chunk
    num_pairs = jax.tree_util.tree_leaves(x1)[0].shape[0]

    def body(c, acc):
        idx = c * chunk + jnp.arange(chunk)
        valid = (idx < num_samples)[:, None]
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(idx)
        if proposal is None:
            thetas = jax.vmap(model.prior_sampler)(keys)
            l1, l2 = _pair_log_likelihoods(model, x1, x2, thetas)
            log_w = jnp.zeros((chunk, 1), l1.dtype)
        elif not proposal.pair_conditional:
            thetas = jax.vmap(proposal.sampler)(keys)
            l1, l2 = _pair_log_likelihoods(model, x1, x2, thetas)
            log_w = (jax.vmap(model.log_prior)(thetas) - jax.vmap(proposal.log_prob)(thetas))[:, None]
        else:

            def per_pair(a, b):
                th = jax.vmap(lambda k: proposal.sampler(k, a, b))(keys)
                lw = jax.vmap(model.log_prior)(th) - jax.vmap(lambda t: proposal.log_prob(t, a, b))(th)
                return (
                    lw,
                    jax.vmap(lambda t: model.log_likelihood(a, t))(th),
                    jax.vmap(lambda t: model.log_likelihood(b, t))(th),
                )

            log_w, l1, l2 = (v.T for v in jax.vmap(per_pair)(x1, x2))
        log_w = jnp.where(valid, log_w.astype(l1.dtype), -jnp.inf)
        return jnp.logaddexp(acc, _chunk_log_sums(log_w, l1, l2))

    dtype = jnp.result_type(float)
    acc0 = jnp.full((9, num_pairs), -jnp.inf, dtype)
    return jax.lax.fori_loop(0, num_chunks, body, acc0)


def _finish(log_sums: np.ndarray, n: int) -> LogSimilarityEstimate:
    s = log_sums.astype(np.float64)
    log_n = math.log(n)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        log_joint = s[_A] - log_n
        lm1 = s[_B] - log_n
        lm2 = s[_C] - log_n
        log_s = log_joint - lm1 - lm2

        def moment(ij, i, j):  # E[(X_i / mean X_i)(X_j / mean X_j)]
            return np.exp(s[ij] - s[i] - s[j] + log_n)

        var_u = (
            moment(_AA, _A, _A)
            + moment(_BB, _B, _B)
            + moment(_CC, _C, _C)
            - 2 * moment(_AB, _A, _B)
            - 2 * moment(_AC, _A, _C)
            + 2 * moment(_BC, _B, _C)
            - 1.0
        )
        stderr = np.sqrt(np.maximum(var_u, 0.0) / (n - 1))
        ess = np.exp(2 * s[_A] - s[_AA])
    stderr = np.where(np.isneginf(log_s), np.inf, stderr)
    ess = np.where(np.isneginf(s[_A]), 0.0, ess)
    return LogSimilarityEstimate(log_s, stderr, log_joint, lm1, lm2, ess, n)


def estimate_log_similarity(
    model: GenerativeModel,
    x1: Any,
    x2: Any,
    key: jax.Array,
    num_samples: int,
    *,
    proposal: Optional[Proposal] = None,
    chunk_size: Optional[int] = None,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> LogSimilarityEstimate:
    """Monte Carlo estimate of ``log s(x1[p], x2[p])`` (paper Eq. 1) and its standard error, for ``P`` pairs.

    Args:
      model: a :class:`~gensim_jax.testing.GenerativeModel` (its ``log_likelihood`` is used; its
        ``prior_sampler`` draws ``theta`` unless a ``proposal`` is given).
      x1: first items, a pytree whose arrays have leading axis ``P``.
      x2: second items, same structure and leading axis ``P``.
      key: a ``jax.random`` key.
      num_samples: ``S >= 2`` draws of ``theta`` (shared by all pairs).
      proposal: optional :class:`~gensim_jax.testing.Proposal` for importance sampling (needs
        ``model.log_prior``): ``theta_s ~ q``, weights ``p(theta_s) / q(theta_s)``.
      chunk_size: samples per chunk; default ``max(1, min(S, max_chunk_elements // P))``.
      max_chunk_elements: bound on ``chunk x P`` used for the default chunk size.

    Returns:
      :class:`LogSimilarityEstimate` of numpy ``(P,)`` arrays.

    Raises:
      ValueError: ``x1``/``x2`` without a common leading axis, ``num_samples`` < 2, bad chunk size,
        a proposal without ``model.log_prior``. TypeError: ``model``/``proposal`` of the wrong type.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from gensim_jax.testing import categorical_model
      >>> pi = jnp.array([0.5, 0.5])
      >>> y1, y2 = jnp.array([0, 0, 1]), jnp.array([0, 1, 1])
      >>> est = estimate_log_similarity(categorical_model(pi, label_noise=0.5), y1, y2, jax.random.key(0), 20000)
      >>> est.log_similarity.shape, bool(abs(est.log_similarity[0] - jnp.log(1.25)) < 5 * est.stderr[0])
      ((3,), True)
    """
    if not isinstance(model, GenerativeModel):
        raise TypeError(f"model must be a gensim_jax.testing.GenerativeModel; got {type(model).__name__}")
    if proposal is not None:
        if not isinstance(proposal, Proposal):
            raise TypeError(f"proposal must be a gensim_jax.testing.Proposal; got {type(proposal).__name__}")
        if model.log_prior is None:
            raise ValueError(f"importance sampling needs the prior density: model {model.name!r} has no log_prior")
    n = _check_positive_int("num_samples", num_samples, 2)
    p1, p2 = _leading_size(x1, "x1"), _leading_size(x2, "x2")
    if p1 != p2:
        raise ValueError(f"x1 and x2 must hold the same number of pairs; got {p1} and {p2}")
    if p1 < 1:
        raise ValueError("x1 and x2 must hold at least one pair; got 0")
    if jax.tree_util.tree_structure(x1) != jax.tree_util.tree_structure(x2):
        raise ValueError("x1 and x2 must have the same pytree structure")
    if chunk_size is None:
        chunk = max(1, min(n, _check_positive_int("max_chunk_elements", max_chunk_elements) // p1))
    else:
        chunk = min(_check_positive_int("chunk_size", chunk_size), n)
    x1 = jax.tree_util.tree_map(jnp.asarray, x1)
    x2 = jax.tree_util.tree_map(jnp.asarray, x2)
    sums = np.asarray(_log_sums(model, x1, x2, key, jnp.asarray(n, jnp.int32), chunk, proposal))
    return _finish(sums, n)
