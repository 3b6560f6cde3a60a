"""A toolkit to derive and test closed-form generative-similarity kernels (paper Eq. 1) by Monte Carlo.

* :mod:`~gensim_jax.testing.models`: :class:`GenerativeModel` (the samplers of
  ``kernels.monte_carlo.sample_triplets`` plus ``log_likelihood``), :class:`Proposal`,
  :func:`path_prior` for hierarchical (level-by-level) processes, and ready models of the shipped
  kernels' processes;
* :mod:`~gensim_jax.testing.estimate`: :func:`estimate_log_similarity`, the log-mean-exp estimate
  of Eq. 1 with its delta-method standard error, batched over pairs and chunked over samples;
* :mod:`~gensim_jax.testing.asserts`: :func:`assert_log_similarity_close` and
  :func:`compare_log_similarity` (closed form vs estimate, pair by pair, worst pair reported);
* :mod:`~gensim_jax.testing.strategies`: hypothesis strategies for kernel inputs (import it
  explicitly; it needs ``hypothesis``).

Pure JAX; imports only jax, numpy, scipy and :mod:`gensim_jax.kernels`. Guide: docs/ADD_A_GENERATIVE_MODEL.md.
"""

from gensim_jax.testing.asserts import (
    KernelCheckReport,
    KernelMismatchError,
    assert_log_similarity_close,
    compare_log_similarity,
)
from gensim_jax.testing.estimate import LogSimilarityEstimate, estimate_log_similarity, estimate_temp_bytes
from gensim_jax.testing.models import (
    GenerativeModel,
    Proposal,
    beta_bernoulli_model,
    beta_bernoulli_posterior_proposal,
    categorical_model,
    gaussian_mixture_model,
    hierarchy_eq4_model,
    hierarchy_model,
    path_prior,
    sample_pairs,
)

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
    "LogSimilarityEstimate",
    "estimate_log_similarity",
    "estimate_temp_bytes",
    "KernelCheckReport",
    "KernelMismatchError",
    "assert_log_similarity_close",
    "compare_log_similarity",
]
