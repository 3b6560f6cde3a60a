"""Evaluation protocols of the GenSim paper: one module per protocol, chosen by name.

Each protocol is one module holding its stimuli, its evaluator (an embedding function -> a results
dict), its statistics over runs, its Markdown table and its figure; :mod:`~gensim_jax.evaluation.registry`
maps the names a config uses to them (:data:`PROTOCOLS`, :func:`get_protocol`) and documents the
face they share (``NAME``, ``make_stimuli``, ``evaluate``, ``summarize``, ``format_table``, ``plot``):

* :mod:`~gensim_jax.evaluation.oddball` -- quadrilateral oddball (Sec. 3.1, Appendices J, L, Q),
  with the Sable-Meyer et al. (2021) behaviour data in :mod:`~gensim_jax.evaluation.sable_meyer`;
* :mod:`~gensim_jax.evaluation.geoclidean` -- Geoclidean few-shot prototype classification (Sec. 3.2);
* :mod:`~gensim_jax.evaluation.hierarchy` -- linear decoding per tree level (Sec. 3.3, Appendix N);
* :mod:`~gensim_jax.evaluation.odd_one_out` -- likelihood of human odd-one-out choices (Sec. 3.3);
* :mod:`~gensim_jax.evaluation.spurious_digits` -- ID / OOD accuracy against lambda (seed 003);
* :mod:`~gensim_jax.evaluation.gaussian_mixture` -- the Gaussian-mixture replication (Appendices F-H).

Shared, protocol-free machinery: :mod:`~gensim_jax.evaluation.statistics` (every statistic over
runs), :mod:`~gensim_jax.evaluation.embed` (batched, jitted embedding of images with a model;
trained encoders read from exports), :mod:`~gensim_jax.evaluation.plotting` (figure helpers) and
:mod:`~gensim_jax.evaluation.scorecard` (``gensim-jax score``, the report card over the protocols).
Nothing here imports TensorFlow.
"""

from gensim_jax.evaluation.embed import embed_images, load_encoder, prepare_images
from gensim_jax.evaluation.geoclidean import (
    fewshot_evaluate,
    load_geoclidean,
    pixel_embedding,
    prototype_scores,
    roc_auc,
)
from gensim_jax.evaluation.hierarchy import aggregate_score, decode_levels, synthetic_stimuli
from gensim_jax.evaluation.odd_one_out import fit_alpha, odd_one_out_likelihood, read_trials
from gensim_jax.evaluation.oddball import (
    compare_across_runs,
    error_rates_by_shape,
    oddball_choices,
    oddball_summary,
    regularity_correlation,
)
from gensim_jax.evaluation.registry import PROTOCOLS
from gensim_jax.evaluation.registry import get as get_protocol
from gensim_jax.evaluation.sable_meyer import SHAPES, packaged_error_rates

__all__ = [
    "PROTOCOLS",
    "SHAPES",
    "aggregate_score",
    "compare_across_runs",
    "decode_levels",
    "embed_images",
    "error_rates_by_shape",
    "fewshot_evaluate",
    "fit_alpha",
    "get_protocol",
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
    "synthetic_stimuli",
]
