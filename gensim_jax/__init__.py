"""gensim-jax: generative similarity for human-aligned representations, in JAX/Flax."""

__version__ = "0.1.0"
