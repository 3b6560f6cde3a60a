"""Pieces shared by the experiments of ``train/``: config selection, run length, input normalisation, initialisation."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Callable, Optional

import jax
import numpy as np

from gensim_jax.models import torch_import

#: ImageNet channel statistics (the library's, :mod:`gensim_jax.models.torch_import`): the encoders
#: are ImageNet architectures (and may be fine-tuned from ImageNet checkpoints), so every image
#: experiment normalises its inputs with them.
IMAGENET_MEAN = np.asarray(torch_import.IMAGENET_MEAN, np.float32)
IMAGENET_STD = np.asarray(torch_import.IMAGENET_STD, np.float32)


def preprocess(images: np.ndarray) -> np.ndarray:
    """``uint8`` in ``[0, 255]`` or float in ``[0, 1]``, ``(..., H, W, 3)`` -> ImageNet-normalised float32."""
    x = np.asarray(images)
    x = x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x.astype(np.float32)
    return (x - IMAGENET_MEAN) / IMAGENET_STD


def init_variables(model, image_size: int, seed: int) -> dict:
    """Freshly initialised variables of an image encoder, drawn with JAX's ``rbg`` generator keyed by ``seed``.

    Deterministic like the default threefry key, and its initialiser compiles about 4x faster on
    a CPU (measured 1.6 s against 6 s for LeNet-5), which dominates short runs.
    """
    example = np.zeros((1, image_size, image_size, 3), np.float32)
    return jax.jit(model.init)(jax.random.key(seed, impl="rbg"), example)


def select_config(configs: dict, name: str, overrides: dict, validate: Optional[Callable] = None):
    """``configs[name]`` with ``overrides`` applied, then ``validate``-d: the body of every ``get_config``.

    JSON lists become tuples (configs are frozen dataclasses); an unknown config name or field is a
    ``ValueError`` naming it and the known ones.
    """
    if name not in configs:
        raise ValueError(f"unknown config {name!r}; known: {sorted(configs)}")
    base = configs[name]
    fields = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown config fields {unknown}; known: {sorted(fields)}")
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    config = dataclasses.replace(base, **overrides)
    return validate(config) if validate is not None else config


def steps_per_run(config, num_train_images: int) -> int:
    """Optimizer steps of one run: ``config.num_steps`` if set, else ``ceil(epochs * N / batch_size)``."""
    if config.num_steps is not None:
        return int(config.num_steps)
    return int(math.ceil(config.epochs * num_train_images / config.batch_size))


def train_and_export(state, objective, batches, *, experiment: str, name: str, run: int, seed: int, steps: int,
                     run_dir, config, model_name: str, model_kwargs: dict, image_size: int,
                     progress: bool = True, **train_kwargs):
    """Train one run of one objective, export it for evaluation, and describe it.

    Calls :func:`gensim_jax.training.train` in ``run_dir`` (config + objective and seed recorded,
    checkpoints: an interrupted run resumes), exports the trained variables to ``run_dir/export``
    (:func:`gensim_jax.training.export_variables`, with ImageNet preprocessing recorded), and
    returns ``(result, record)`` with ``record = {"seed", "seconds", "losses", "final_loss"}``.
    ``train_kwargs`` go to ``train`` (``checkpoint_every``, ``mesh``, ...).
    """
    import time

    from gensim_jax.training import export_variables, read_metrics, train

    if progress:
        print(f"[{experiment}] {name} run {run} (seed {seed}): {steps} steps -> {run_dir}", flush=True)
    t0 = time.perf_counter()
    result = train(state, objective, batches, num_steps=steps, workdir=run_dir,
                   config={**dataclasses.asdict(config), "objective": name}, seed=seed, progress=progress,
                   **train_kwargs)
    seconds = time.perf_counter() - t0
    export_variables(Path(run_dir) / "export", result.state.variables, model=model_name, model_kwargs=model_kwargs,
                     image_size=image_size, preprocess="imagenet", seed=seed, objective=name, experiment=experiment)
    losses = [m["loss"] for m in read_metrics(run_dir) if "loss" in m]
    return result, {"seed": seed, "seconds": seconds, "losses": losses, "final_loss": losses[-1] if losses else None}


def simclr_view_batches(source, batch_size: int, augment, *, seed: int, position: int):
    """Host batches ``{"view1", "view2", "mask"}`` of two augmented, ImageNet-normalised views per image.

    The SimCLR stream of the image experiments (:func:`gensim_jax.data.pipelines.view_batches`
    from stream ``position``), ready for :class:`gensim_jax.training.NTXent`.
    """
    from gensim_jax.data import pipelines

    ds = pipelines.view_batches(source, batch_size, augment, seed=seed, keys=[], start_step=position)
    for batch in pipelines.as_numpy(ds):
        x = preprocess(batch["image"])
        yield {"view1": x[:, 0], "view2": x[:, 1], "mask": batch["mask"]}


def check_run_config(config, objectives: tuple, num_train_images: int) -> None:
    """The checks every image experiment shares: ``objectives`` a non-empty subset of the known ones,
    ``num_runs >= 1``, ``2 <= batch_size <= num_train_images``, ``image_size >= 32``; ``ValueError`` naming the field."""
    bad = [o for o in config.objectives if o not in objectives]
    if bad or not config.objectives:
        raise ValueError(f"objectives must be a non-empty subset of {objectives}, got {config.objectives}")
    if config.num_runs < 1:
        raise ValueError(f"num_runs must be >= 1, got {config.num_runs}")
    if config.batch_size < 2 or config.batch_size > num_train_images:
        raise ValueError(f"batch_size must lie in [2, num_train_images={num_train_images}], got {config.batch_size}")
    if config.image_size < 32:
        raise ValueError(f"image_size must be >= 32 (the encoders' input), got {config.image_size}")


# --------------------------------------------------------------------------------------------
# Shared by geoclidean and imagenet_hierarchy (added with their conversion to the runner):
# a ResNet-style encoder trained with a table-gathered GenSim target, class triplets or SimCLR.
# --------------------------------------------------------------------------------------------

#: The objectives of the two experiments whose GenSim target is a table gathered by an integer id.
TABLE_OBJECTIVES = ("gensim", "class_triplet", "simclr")


def encoder_kwargs(objective: Optional[str], config) -> dict:
    """Registry keyword arguments of the encoder for ``objective`` (None: the bare encoder).

    No classifier; a projection head ``config.projection_dims`` for ``simclr``; ``stage_sizes``
    (blocks per ResNet stage) when the config sets it.
    """
    kw: dict = {"num_classes": None}
    if objective == "simclr":
        kw["projection_dims"] = tuple(config.projection_dims)
    if config.stage_sizes is not None:
        kw["stage_sizes"] = tuple(config.stage_sizes)
    return kw


def table_objective(objective: str, config, gensim_target: Callable[[], object]):
    """The :mod:`gensim_jax.training` objective of ``objective`` in :data:`TABLE_OBJECTIVES`.

    ``gensim``: :class:`~gensim_jax.training.GenSimRegression` of the cosine of the pooled
    embeddings onto ``gensim_target()`` (a :class:`~gensim_jax.training.TableTarget`; paper Eq. 2)
    over all ``B (B - 1)`` pairs; ``class_triplet``: :class:`~gensim_jax.training.TripletObjective`
    (``config.triplet_form``, ``config.triplet_distance``) on the embeddings; ``simclr``:
    :class:`~gensim_jax.training.NTXent` (``config.simclr_temperature``, ``config.simclr_variant``)
    on the projection head.
    """
    from gensim_jax.training import GenSimRegression, NTXent, TripletObjective

    if objective == "gensim":
        return GenSimRegression(target=gensim_target(), input_key="image", output="embedding", similarity="cosine")
    if objective == "class_triplet":
        return TripletObjective(form=config.triplet_form, distance=config.triplet_distance, output="embedding")
    if objective == "simclr":
        return NTXent(temperature=config.simclr_temperature, variant=config.simclr_variant, output="projection")
    raise ValueError(f"objective must be one of {TABLE_OBJECTIVES}, got {objective!r}")
