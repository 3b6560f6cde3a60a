"""Closed-form generative similarity, always in log space (paper Eq. 1).

Submodules (see docs/API.md):

* :mod:`~gensim_jax.kernels.beta_bernoulli`: binary features under a Beta-Bernoulli prior (Eq. 3, App. I);
* :mod:`~gensim_jax.kernels.hierarchy`: leaves of a sampling hierarchy (Eq. 4, App. K), ImageNet-1k tree;
* :mod:`~gensim_jax.kernels.gaussian_mixture`: Gaussian mixtures (Eq. H2, App. F-H);
* :mod:`~gensim_jax.kernels.categorical`: class identity (App. A);
* :mod:`~gensim_jax.kernels.trees`: Moschitti tree kernels over parse trees (App. M);
* :mod:`~gensim_jax.kernels.monte_carlo`: triplets sampled from any generative model (Eq. A3);
* :mod:`~gensim_jax.kernels.targets`: turning log s into a regression target.
"""

from gensim_jax.kernels import (  # noqa: F401
    beta_bernoulli,
    categorical,
    gaussian_mixture,
    hierarchy,
    monte_carlo,
    targets,
    trees,
)
