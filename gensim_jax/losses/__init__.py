"""Pure, jittable losses of GenSim and of the contrastive baselines.

Each loss takes arrays, returns arrays, validates shapes at the boundary and supports
``reduction`` in {"mean", "sum", "none"} and a ``mask`` for padded examples.  See docs/API.md.
"""

from gensim_jax.losses.center import (
    center_objective,
    center_objective_terms,
    center_similarity_loss,
    class_center_loss,
    class_pair_loss,
)
from gensim_jax.losses.nce import infonce_cross_entropy, local_nce_loss, nce_loss
from gensim_jax.losses.pairs import margin_contrastive_loss, pairwise_margin_contrastive_loss
from gensim_jax.losses.regression import distance_regression_loss, gensim_loss, gensim_regression_loss
from gensim_jax.losses.softmax import (
    cross_view_infonce_loss,
    infonce_loss,
    ntxent_loss,
    sincere_loss,
    supcon_loss,
)
from gensim_jax.losses.triplet import batch_hard_triplet_loss, lifted_structured_loss, triplet_loss

__all__ = [
    "batch_hard_triplet_loss",
    "center_objective",
    "center_objective_terms",
    "center_similarity_loss",
    "class_center_loss",
    "class_pair_loss",
    "cross_view_infonce_loss",
    "distance_regression_loss",
    "gensim_loss",
    "gensim_regression_loss",
    "infonce_cross_entropy",
    "infonce_loss",
    "lifted_structured_loss",
    "local_nce_loss",
    "margin_contrastive_loss",
    "nce_loss",
    "ntxent_loss",
    "pairwise_margin_contrastive_loss",
    "sincere_loss",
    "supcon_loss",
    "triplet_loss",
]
