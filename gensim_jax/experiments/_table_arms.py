"""The arms of the two experiments whose GenSim target is a table gathered by an integer id (geoclidean,
imagenet_hierarchy): a ResNet-style encoder trained with that target, class triplets or SimCLR --
their ``objectives.<arm>`` sections, encoder keyword arguments and objectives."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from gensim_jax.config import ArmConfig

#: The objectives of the two experiments whose GenSim target is a table gathered by an integer id.
TABLE_OBJECTIVES = ("gensim", "class_triplet", "simclr")


@dataclasses.dataclass(frozen=True)
class TripletArm(ArmConfig):
    """``objectives.class_triplet``: the triplet loss on class triplets (:data:`~gensim_jax.losses.triplet.TRIPLET_FORMS`)."""

    form: str = "linear"
    distance: str = "euclidean"


@dataclasses.dataclass(frozen=True)
class SimCLRArm(ArmConfig):
    """``objectives.simclr``: NT-Xent on a projection head of ``projection_dims``, views by random resized crop
    (``crop_scale``), flip and blur (``blur_p``)."""

    temperature: float = 0.5
    variant: str = "cross_view"
    projection_dims: tuple[int, ...] = (2048, 128)
    crop_scale: tuple[float, float] = (0.08, 1.0)
    blur_p: float = 0.5


def encoder_kwargs(objective: Optional[str], config) -> dict:
    """Registry keyword arguments of the encoder for ``objective`` (None: the bare encoder).

    No classifier; a projection head ``objectives.simclr.projection_dims`` for ``simclr``;
    ``model.stage_sizes`` (blocks per ResNet stage) when the config sets it.
    """
    kw: dict = {"num_classes": None}
    if objective == "simclr":
        kw["projection_dims"] = tuple(config.objectives.simclr.projection_dims)
    if config.model.stage_sizes is not None:
        kw["stage_sizes"] = tuple(config.model.stage_sizes)
    return kw


def table_objective(objective: str, config, gensim_target: Callable[[], object]):
    """The :mod:`gensim_jax.training` objective of ``objective`` in :data:`TABLE_OBJECTIVES`.

    ``gensim``: :class:`~gensim_jax.training.GenSimRegression` of the cosine of the pooled
    embeddings onto ``gensim_target()`` (a :class:`~gensim_jax.training.TableTarget`; paper Eq. 2)
    over all ``B (B - 1)`` pairs; ``class_triplet``: :class:`~gensim_jax.training.TripletObjective`
    (``objectives.class_triplet.form`` / ``.distance``) on the embeddings; ``simclr``:
    :class:`~gensim_jax.training.NTXent` (``objectives.simclr.temperature`` / ``.variant``) on the
    projection head.
    """
    from gensim_jax.training import GenSimRegression, NTXent, TripletObjective

    arms = config.objectives
    if objective == "gensim":
        return GenSimRegression(target=gensim_target(), input_key="image", output="embedding", similarity="cosine")
    if objective == "class_triplet":
        return TripletObjective(form=arms.class_triplet.form, distance=arms.class_triplet.distance, output="embedding")
    if objective == "simclr":
        return NTXent(temperature=arms.simclr.temperature, variant=arms.simclr.variant, output="projection")
    raise ValueError(f"objective must be one of {TABLE_OBJECTIVES}, got {objective!r}")
