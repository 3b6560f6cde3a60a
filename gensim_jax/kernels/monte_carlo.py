r"""Monte Carlo triplets from any hierarchical generative model (paper Appendix A, Eq. A3).

When the generative similarity has no closed form, the triplet objective of paper Eq. A2 is
estimated with triplets drawn from the contrastive process of Eq. A3::

    theta+, theta- ~ p(theta)          (two independent draws from the prior)
    x, x+          ~ p(x | theta+)     ("same" examples)
    x-             ~ p(x | theta-)     ("different" example)

:func:`sample_triplets` implements this for any model given as two functions,
``prior_sampler(key) -> theta`` and ``likelihood_sampler(key, theta) -> x`` (``theta`` and ``x`` may
be arbitrary pytrees). All ``num`` triplets are drawn with ``jax.vmap`` (no Python loop over
samples), so the sampler is itself jit-able (``num`` and the samplers static) and vmappable over
keys (e.g. one key per device).

``theta+`` and ``theta-`` are independent, exactly as in Eq. A3: for a discrete prior they coincide
with probability ``sum_c pi_c^2`` and the "negative" then comes from the same distribution as the
anchor. That is the paper's process (the objective stays unbiased). A generic black-box prior
cannot be conditioned on ``theta- != theta+`` without rejection sampling, which is not done here;
for categorical priors :func:`sample_class_triplets` offers ``distinct=True``, which draws
``theta-`` exactly from ``pi`` restricted to the other classes (the usual class-triplet baseline).

:func:`sample_gaussian_mixture_triplets` is the Gaussian-mixture instance (paper Appendices F-H;
default: the Appendix H mixture with means ``(5, 5)`` and ``(1, 1)`` and unit variance).

Example:
    >>> import jax
    >>> from gensim_jax.kernels import monte_carlo
    >>> t = monte_carlo.sample_gaussian_mixture_triplets(jax.random.key(0), 8)
    >>> t.anchor.shape, t.theta_positive.shape
    ((8, 2), (8,))
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from gensim_jax.kernels import gaussian_mixture as _gm
from gensim_jax.kernels.categorical import check_class_probs

__all__ = [
    "Triplets",
    "sample_triplets",
    "categorical_prior",
    "sample_class_triplets",
    "gaussian_mixture_likelihood",
    "sample_gaussian_mixture_triplets",
]

PriorSampler = Callable[[jax.Array], Any]
LikelihoodSampler = Callable[[jax.Array, Any], Any]


class Triplets(NamedTuple):
    """A batch of ``num`` triplets (paper Eq. A3); every leaf has leading axis ``num``.

    Attributes:
      anchor: ``x ~ p(x | theta+)``.
      positive: ``x+ ~ p(x | theta+)`` (independent of ``anchor`` given ``theta+``).
      negative: ``x- ~ p(x | theta-)``.
      theta_positive: the shared parameters ``theta+`` (generative metadata).
      theta_negative: the parameters ``theta-`` of the negative.
    """

    anchor: Any
    positive: Any
    negative: Any
    theta_positive: Any
    theta_negative: Any


def _check_num(num) -> int:
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"num must be a positive Python int (static under jit); got {num!r}")
    return num


def _draw_examples(key, likelihood_sampler, theta_pos, theta_neg, num) -> tuple[Any, Any, Any]:
    k_anchor, k_pos, k_neg = jax.random.split(key, 3)
    draw = jax.vmap(likelihood_sampler)
    anchor = draw(jax.random.split(k_anchor, num), theta_pos)
    positive = draw(jax.random.split(k_pos, num), theta_pos)
    negative = draw(jax.random.split(k_neg, num), theta_neg)
    return anchor, positive, negative


def sample_triplets(
    key: jax.Array,
    prior_sampler: PriorSampler,
    likelihood_sampler: LikelihoodSampler,
    num: int,
) -> Triplets:
    """Draw ``num`` triplets ``(x, x+, x-)`` from the contrastive process of paper Eq. A3.

    Args:
      key: a ``jax.random`` key (new-style typed or raw ``uint32[2]``).
      prior_sampler: ``key -> theta``, one draw from ``p(theta)``; ``theta`` any pytree.
      likelihood_sampler: ``(key, theta) -> x``, one draw from ``p(x | theta)``; ``x`` any pytree.
        Both samplers must be traceable (they are ``vmap``-ed).
      num: number of triplets, a positive Python int.

    Returns:
      :class:`Triplets` whose leaves have leading axis ``num``. ``theta+`` and ``theta-`` are
      independent prior draws and may coincide for discrete priors (module docstring).

    Raises:
      ValueError: ``num`` is not a positive int. TypeError: a sampler is not callable.

    Hashable samplers (plain functions, closures) are static arguments of an internal ``jax.jit``:
    one compile per ``(prior_sampler, likelihood_sampler, num)``. Create samplers once and reuse
    them; a new closure on every call recompiles every time. Unhashable callables run un-jitted.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> prior = lambda k: jax.random.normal(k, (2,))                 # theta = a mean
      >>> lik = lambda k, mu: mu + 0.1 * jax.random.normal(k, (2,))    # x ~ N(mu, 0.01 I)
      >>> t = sample_triplets(jax.random.key(1), prior, lik, 5)
      >>> t.anchor.shape, t.theta_negative.shape
      ((5, 2), (5, 2))
    """
    num = _check_num(num)
    if not callable(prior_sampler):
        raise TypeError(f"prior_sampler must be callable key -> theta; got {type(prior_sampler).__name__}")
    if not callable(likelihood_sampler):
        raise TypeError(
            f"likelihood_sampler must be callable (key, theta) -> x; got {type(likelihood_sampler).__name__}"
        )
    try:
        hash(prior_sampler)
        hash(likelihood_sampler)
    except TypeError:  # unhashable callables cannot be static jit arguments: trace eagerly instead
        return _sample_triplets(key, prior_sampler, likelihood_sampler, num)
    return _sample_triplets_jit(key, prior_sampler, likelihood_sampler, num)


def _sample_triplets(key, prior_sampler, likelihood_sampler, num: int) -> Triplets:
    k_theta_pos, k_theta_neg, k_x = jax.random.split(key, 3)
    prior = jax.vmap(prior_sampler)
    theta_pos = prior(jax.random.split(k_theta_pos, num))
    theta_neg = prior(jax.random.split(k_theta_neg, num))
    anchor, positive, negative = _draw_examples(k_x, likelihood_sampler, theta_pos, theta_neg, num)
    return Triplets(anchor, positive, negative, theta_pos, theta_neg)


# One compiled program per (samplers, num, key type) instead of one dispatch per primitive.
_sample_triplets_jit = jax.jit(_sample_triplets, static_argnums=(1, 2, 3))


def categorical_prior(class_probs) -> PriorSampler:
    """Prior sampler ``key -> c`` with ``c ~ Categorical(class_probs)`` (an ``int32`` scalar).

    Args:
      class_probs: ``(C,)`` probabilities in ``(0, 1]`` summing to one.

    Returns:
      A function usable as ``prior_sampler`` in :func:`sample_triplets`.
    """
    check_class_probs(class_probs)
    logits = jnp.log(jnp.asarray(class_probs))

    def sample(key):
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return sample


def sample_class_triplets(
    key: jax.Array,
    class_probs,
    likelihood_sampler: LikelihoodSampler,
    num: int,
    *,
    distinct: bool = False,
) -> Triplets:
    """Triplets from the class-identity model (paper Appendix A, the SupCon / class-triplet process).

    ``c+ ~ pi``; ``c- ~ pi`` independently (``distinct=False``, exactly Eq. A3) or ``c- ~ pi``
    restricted to ``c- != c+`` and renormalised (``distinct=True``: the class-triplet baselines of
    Appendices M and N, which always take the negative from another class). The restricted draw is
    exact: a categorical draw with the logit of ``c+`` set to ``-inf`` -- no rejection loop.

    Args:
      key: ``jax.random`` key.
      class_probs: ``(C,)`` class prior (``C >= 2`` when ``distinct``).
      likelihood_sampler: ``(key, c) -> x`` draws an example of class ``c`` (``c`` an int32 scalar).
      num: number of triplets (positive Python int).
      distinct: force different classes for the negative.

    Returns:
      :class:`Triplets` with ``theta_positive``/``theta_negative`` the ``(num,)`` class labels.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> lik = lambda k, c: c.astype(jnp.float32) + 0.1 * jax.random.normal(k, ())
      >>> t = sample_class_triplets(jax.random.key(0), jnp.full(3, 1 / 3), lik, 100, distinct=True)
      >>> bool(jnp.all(t.theta_positive != t.theta_negative))
      True
    """
    num = _check_num(num)
    check_class_probs(class_probs)
    if not callable(likelihood_sampler):
        raise TypeError(
            f"likelihood_sampler must be callable (key, class) -> x; got {type(likelihood_sampler).__name__}"
        )
    logits = jnp.log(jnp.asarray(class_probs))
    num_classes = logits.shape[0]
    if distinct and num_classes < 2:
        raise ValueError(f"distinct=True needs at least 2 classes; class_probs has {num_classes}")
    try:
        hash(likelihood_sampler)
    except TypeError:
        return _sample_class_triplets(key, logits, likelihood_sampler, num, bool(distinct))
    return _sample_class_triplets_jit(key, logits, likelihood_sampler, num, bool(distinct))


def _sample_class_triplets(key, logits, likelihood_sampler, num: int, distinct: bool) -> Triplets:
    num_classes = logits.shape[0]
    k_pos, k_neg, k_x = jax.random.split(key, 3)
    theta_pos = jax.random.categorical(k_pos, logits, shape=(num,)).astype(jnp.int32)
    if distinct:
        masked = jnp.where(jnp.arange(num_classes)[None, :] == theta_pos[:, None], -jnp.inf, logits[None, :])
        theta_neg = jax.random.categorical(k_neg, masked, axis=-1).astype(jnp.int32)
    else:
        theta_neg = jax.random.categorical(k_neg, logits, shape=(num,)).astype(jnp.int32)
    anchor, positive, negative = _draw_examples(k_x, likelihood_sampler, theta_pos, theta_neg, num)
    return Triplets(anchor, positive, negative, theta_pos, theta_neg)


_sample_class_triplets_jit = jax.jit(_sample_class_triplets, static_argnums=(2, 3, 4))


def gaussian_mixture_likelihood(mixture: _gm.GaussianMixture) -> LikelihoodSampler:
    """Likelihood sampler ``(key, k) -> x ~ N(mu_k, Sigma_k)`` for a Gaussian mixture.

    ``mixture`` is a :class:`~gensim_jax.kernels.gaussian_mixture.GaussianMixture`.

    Uses the stored scale: ``x = mu_k + s_k * z`` (diagonal) or ``x = mu_k + L_k z`` (full), ``z ~ N(0, I)``.
    """
    means = mixture.means
    scale = mixture.scale

    def sample(key, k):
        z = jax.random.normal(key, means.shape[-1:], means.dtype)
        if scale.ndim == 2:
            return means[k] + scale[k] * z
        return means[k] + scale[k] @ z

    return sample


def sample_gaussian_mixture_triplets(key: jax.Array, num: int, mixture: _gm.GaussianMixture | None = None) -> Triplets:
    """Eq. A3 triplets from a Gaussian mixture (paper Appendices F-H); default: the Appendix H mixture.

    ``theta`` is the component index (prior = mixture weights), ``p(x | theta)`` the component
    Gaussian. Built on :func:`sample_triplets`.

    Args:
      key: ``jax.random`` key.
      num: number of triplets (positive Python int).
      mixture: a :class:`~gensim_jax.kernels.gaussian_mixture.GaussianMixture`; ``None`` gives
        :func:`~gensim_jax.kernels.gaussian_mixture.appendix_h_mixture` (means ``(5, 5)``,
        ``(1, 1)``, unit variance, equal weights).

    Returns:
      :class:`Triplets` with ``(num, D)`` points and ``(num,)`` component indices.
    """
    num = _check_num(num)
    if mixture is None:
        mixture = _gm.appendix_h_mixture()
    if not isinstance(mixture, _gm.GaussianMixture):
        raise TypeError(
            f"mixture must be a GaussianMixture (see gaussian_mixture.make_mixture); got {type(mixture).__name__}"
        )
    return _gaussian_mixture_triplets(key, mixture, num)


@functools.partial(jax.jit, static_argnums=(2,))
def _gaussian_mixture_triplets(key, mixture: _gm.GaussianMixture, num: int) -> Triplets:
    # The mixture is a traced pytree argument: one compile per (shapes, num), whatever the values.
    logits = mixture.log_weights

    def prior(k):
        return jax.random.categorical(k, logits).astype(jnp.int32)

    return _sample_triplets(key, prior, gaussian_mixture_likelihood(mixture), num)
