"""Evaluation protocols of the GenSim paper as pure functions on embeddings (numpy/scipy/sklearn).

* :mod:`~gensim_jax.evaluation.oddball` -- quadrilateral oddball (Sec. 3.1, Appendices J, L, Q),
  with the Sable-Meyer et al. (2021) behaviour readers in :mod:`~gensim_jax.evaluation.sable_meyer`;
* :mod:`~gensim_jax.evaluation.fewshot` -- Geoclidean few-shot prototype classification (Sec. 3.2);
* :mod:`~gensim_jax.evaluation.hierarchy_decoding` -- linear decoding per tree level (Sec. 3.3,
  Appendix N);
* :mod:`~gensim_jax.evaluation.odd_one_out` -- likelihood of human odd-one-out choices (Sec. 3.3);
* :mod:`~gensim_jax.evaluation.embed` -- batched, jitted embedding of images with a model, and
  trained encoders read from exports (:func:`~gensim_jax.evaluation.embed.load_encoder`);
* :mod:`~gensim_jax.evaluation.figures` -- the papers' figures drawn from the protocols' results.

The Gaussian-mixture replication (Appendices F-H) lives in ``eval/gaussian_mixture.py``.
Nothing here imports TensorFlow; the command-line drivers are ``python -m eval PROTOCOL``.
"""

from gensim_jax.evaluation.embed import embed_images, load_encoder, prepare_images
from gensim_jax.evaluation.fewshot import fewshot_evaluate, load_geoclidean, pixel_embedding, prototype_scores, roc_auc
from gensim_jax.evaluation.hierarchy_decoding import aggregate_score, decode_levels, synthetic_hierarchy_images
from gensim_jax.evaluation.odd_one_out import fit_alpha, odd_one_out_likelihood, read_trials
from gensim_jax.evaluation.oddball import (
    compare_across_runs,
    error_rates_by_shape,
    oddball_choices,
    oddball_summary,
    regularity_correlation,
)
from gensim_jax.evaluation.sable_meyer import SHAPES, packaged_error_rates

__all__ = [
    "SHAPES",
    "aggregate_score",
    "compare_across_runs",
    "decode_levels",
    "embed_images",
    "error_rates_by_shape",
    "fewshot_evaluate",
    "fit_alpha",
    "load_encoder",
    "load_geoclidean",
    "odd_one_out_likelihood",
    "oddball_choices",
    "oddball_summary",
    "packaged_error_rates",
    "pixel_embedding",
    "prepare_images",
    "prototype_scores",
    "read_trials",
    "regularity_correlation",
    "roc_auc",
    "synthetic_hierarchy_images",
]
