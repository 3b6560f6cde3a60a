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
``bench/functions/mc_estimator.py``).
Sample ``i`` uses the key ``fold_in(key, i)``, so the estimate does not depend on the chunk size.

Cost. With draws from the prior (no proposal) the weights are 1, so ``A = B C``: the first chunk
fixes per-pair shifts (its maxima of ``l1``, ``l2`` and ``l1 + l2``) and every later chunk takes
two exponentials per sample and pair and no column maxima (``_product_log_sums``), falling back to
the general three-exponential form for a chunk whose sums overflow or, throughout, when the first
chunk leaves some pair without a joint term or with ``max l1 + max l2 - max(l1 + l2) > 20``.
The tables are mapped over pairs outside and draws inside. Together about 1.7x the throughput of
the general form at 1,000 pairs on XLA:CPU (``bench/functions/mc_estimator.py``, docs/PERFORMANCE.md).

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

__all__ = ["LogSimilarityEstimate", "estimate_log_similarity", "estimate_temp_bytes", "DEFAULT_MAX_CHUNK_ELEMENTS"]

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
    """Nine ``(P,)`` log-sums over a chunk of ``(c, P)`` log-likelihoods (``log_w``: ``(c, 1)`` or ``(c, P)``).

    The general form: three exponentials per sample and pair, each shifted by its own column maximum.
    """
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


#: Largest ``max(l1) + max(l2) - max(l1 + l2)`` (per pair, over the first chunk) for which the
#: joint term is formed as a product of the two marginal terms (see :func:`_prior_shifts`).
PRODUCT_FORM_MAX_GAP = 20.0


class _Shifts(NamedTuple):
    """Per-pair log shifts of the prior-sampling fast path, fixed after the first chunk."""

    m_a: jax.Array  # log of the largest joint term in the first chunk
    m_b: jax.Array
    m_c: jax.Array
    scale: jax.Array  # exp(m_b + m_c - m_a)
    ok: jax.Array  # scalar bool: the fast path may be used for the later chunks


def _prior_shifts(l1, l2) -> _Shifts:
    """Shifts from the first chunk's column maxima, and whether the product form is exact with them.

    The fast path needs every pair to have a positive joint term in the first chunk (so the shifts
    are attained values) and ``gap = m_b + m_c - m_a <= PRODUCT_FORM_MAX_GAP``.
    """
    raw_a = jnp.max(l1 + l2, axis=0)
    m_b = jnp.max(l1, axis=0)
    m_c = jnp.max(l2, axis=0)
    finite = jnp.isfinite(raw_a)
    m_a = jnp.where(finite, raw_a, 0.0)
    m_b = jnp.where(finite, m_b, 0.0)
    m_c = jnp.where(finite, m_c, 0.0)
    gap = m_b + m_c - m_a
    ok = jnp.all(finite & (gap <= PRODUCT_FORM_MAX_GAP))
    scale = jnp.exp(jnp.clip(gap, 0.0, PRODUCT_FORM_MAX_GAP))
    return _Shifts(m_a, m_b, m_c, scale, ok)


def _product_log_sums(l1, l2, sh: _Shifts):
    """The nine log-sums of a chunk drawn from the prior (weights 1) with two exponentials.

    ``B = exp(l1 - m_b)`` and ``C = exp(l2 - m_c)``; the joint term is their product rescaled,
    ``A = B C exp(m_b + m_c - m_a)`` (shift ``m_a``), and ``sum(B C) = sum(A)`` with shift ``m_a``
    (the weights are 1, so ``B C`` is ``A``). The shifts are fixed per pair (the first chunk's
    maxima, see :func:`_log_sums`), so no column maximum is taken here: a term far below its shift
    underflows to 0 but is below ``e^-67`` of a term already counted (``gap <= 20``, float32
    underflow at ``e^-87``), and one far above it overflows to ``inf`` in the squares, which the
    caller detects (non-finite sums) and recomputes with the general form.
    """
    e_b = jnp.exp(l1 - sh.m_b)
    e_c = jnp.exp(l2 - sh.m_c)
    e_a = e_b * e_c * sh.scale
    s_a = e_a.sum(0)
    sums = jnp.stack(
        [
            s_a,
            e_b.sum(0),
            e_c.sum(0),
            (e_a * e_a).sum(0),
            (e_b * e_b).sum(0),
            (e_c * e_c).sum(0),
            (e_a * e_b).sum(0),
            (e_a * e_c).sum(0),
            s_a,
        ]
    )
    m_a, m_b, m_c = sh.m_a, sh.m_b, sh.m_c
    shifts = jnp.stack([m_a, m_b, m_c, 2 * m_a, 2 * m_b, 2 * m_c, m_a + m_b, m_a + m_c, m_a])
    return sums, shifts


def _pair_log_likelihoods(model, x1, x2, thetas):
    """``(c, P)`` tables ``log p(x1[p] | theta_s)`` and ``log p(x2[p] | theta_s)``.

    Mapped over pairs outside and draws inside (the layout XLA:CPU runs fastest here), written to
    a ``(c, P)`` table.
    """
    per_x = lambda x: jax.vmap(lambda th: model.log_likelihood(x, th))(thetas)  # noqa: E731
    return jax.vmap(per_x, out_axes=1)(x1), jax.vmap(per_x, out_axes=1)(x2)


@functools.partial(jax.jit, static_argnums=(0, 5, 6))
def _log_sums(model: GenerativeModel, x1, x2, key, num_samples, chunk: int, proposal: Optional[Proposal]):
    # num_samples is traced (a while loop over chunks): one compile per (model, shapes, chunk, proposal)
    num_chunks = (num_samples + chunk - 1) // chunk
    num_pairs = jax.tree_util.tree_leaves(x1)[0].shape[0]

    def tables(c):
        """``valid`` ``(chunk, 1)`` and the ``(chunk, P)`` tables ``log_w``, ``l1``, ``l2`` of chunk ``c``."""
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
        else:  # a pair-conditional proposal: draws per pair

            def per_pair(a, b):
                th = jax.vmap(lambda k: proposal.sampler(k, a, b))(keys)
                lw = jax.vmap(model.log_prior)(th) - jax.vmap(lambda t: proposal.log_prob(t, a, b))(th)
                return (
                    lw,
                    jax.vmap(lambda t: model.log_likelihood(a, t))(th),
                    jax.vmap(lambda t: model.log_likelihood(b, t))(th),
                )

            log_w, l1, l2 = (v.T for v in jax.vmap(per_pair)(x1, x2))
        return valid, jnp.where(valid, log_w.astype(l1.dtype), -jnp.inf), l1, l2

    dtype = jnp.result_type(float)
    acc0 = jnp.full((9, num_pairs), -jnp.inf, dtype)
    if proposal is not None:

        def body(c, acc):
            _, log_w, l1, l2 = tables(c)
            return jnp.logaddexp(acc, _chunk_log_sums(log_w, l1, l2))

        return jax.lax.fori_loop(0, num_chunks, body, acc0)

    # Prior sampling (weights 1): the first chunk takes the general form and fixes per-pair shifts;
    # the later chunks use them with two exponentials and no column maxima (_product_log_sums),
    # falling back to the general form for a chunk whose sums overflow.
    valid, log_w, l1, l2 = tables(0)
    acc = jnp.logaddexp(acc0, _chunk_log_sums(log_w, l1, l2))
    shifts = _prior_shifts(l1 + log_w, l2 + log_w)

    def body_prior(c, acc):
        valid, log_w, l1, l2 = tables(c)

        def general(_):
            return _chunk_log_sums(log_w, l1, l2)

        def fast(_):
            sums, sh = _product_log_sums(jnp.where(valid, l1, -jnp.inf), jnp.where(valid, l2, -jnp.inf), shifts)
            return jax.lax.cond(jnp.all(jnp.isfinite(sums)), lambda _: jnp.log(sums) + sh, general, None)

        return jnp.logaddexp(acc, jax.lax.cond(shifts.ok, fast, general, None))

    return jax.lax.fori_loop(1, num_chunks, body_prior, acc)


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


def _checked_arguments(model, x1, x2, num_samples, proposal, chunk_size, max_chunk_elements):
    """``(S, chunk, x1, x2)`` of :func:`estimate_log_similarity` after its argument checks (see there)."""
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
    return n, chunk, x1, x2


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
    n, chunk, x1, x2 = _checked_arguments(model, x1, x2, num_samples, proposal, chunk_size, max_chunk_elements)
    sums = np.asarray(_log_sums(model, x1, x2, key, jnp.asarray(n, jnp.int32), chunk, proposal))
    return _finish(sums, n)


def estimate_temp_bytes(
    model: GenerativeModel,
    x1: Any,
    x2: Any,
    num_samples: int,
    *,
    proposal: Optional[Proposal] = None,
    chunk_size: Optional[int] = None,
    max_chunk_elements: int = DEFAULT_MAX_CHUNK_ELEMENTS,
) -> int:
    """Bytes of temporary buffers the compiled :func:`estimate_log_similarity` program needs (XLA ``memory_analysis``).

    Takes the arguments of :func:`estimate_log_similarity` (without the key) and compiles the same
    program without running it. The samples are drawn in chunks of ``chunk`` with running sums, so
    the memory is set by the ``(chunk, P)`` log-likelihood tables, not by ``num_samples``: 10^6
    samples need what one chunk needs.

    Returns:
      ``temp_size_in_bytes`` of the compiled program (int).

    Raises:
      the errors of :func:`estimate_log_similarity` for the same arguments.
    """
    n, chunk, x1, x2 = _checked_arguments(model, x1, x2, num_samples, proposal, chunk_size, max_chunk_elements)
    lowered = _log_sums.lower(model, x1, x2, jax.random.key(0), jnp.asarray(n, jnp.int32), chunk, proposal)
    return int(lowered.compile().memory_analysis().temp_size_in_bytes)
