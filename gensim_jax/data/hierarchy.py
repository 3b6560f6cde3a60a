"""The hierarchy experiment's data: synthetic images of a class tree, or ImageNet-1k, as each arm's batches.

:class:`HierarchySource` holds the images of :func:`gensim_jax.stimuli.hierarchy.hierarchy_images`
in memory; :func:`arm_batches` streams this process's rows of every global batch of an arm, from
that source (:func:`gensim_jax.data.streams.stream`) or from tfds ImageNet
(:func:`gensim_jax.data.imagenet.imagenet_stream`: each process reads and decodes its own shard);
:func:`heldout_images` is the held-out evaluation set. ``data`` arguments are the experiment
config's ``data`` section (``dataset``, ``data_dir``, ``train_split``, ``eval_split``,
``image_size``, ``shuffle_buffer``, ``synthetic_noise``), ``simclr`` its ``objectives.simclr``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from gensim_jax.data.sources import ArraySource
from gensim_jax.stimuli.hierarchy import hierarchy_images

__all__ = [
    "HierarchySource",
    "ImageNetNotPrepared",
    "STREAMS",
    "arm_batches",
    "DATASETS",
    "IMAGENET_TRAIN_IMAGES",
    "check_data_config",
    "check_imagenet_prepared",
    "class_tree",
    "heldout_images",
    "num_train_images",
]

#: The stream of each arm (:data:`gensim_jax.data.streams.STREAM_KINDS`).
STREAMS = {"gensim": "labelled", "class_triplet": "triplets", "simclr": "views"}


class ImageNetNotPrepared(FileNotFoundError, ValueError):
    """tfds ``imagenet2012`` is not prepared in ``data_dir`` (a ``ValueError`` too: the CLI prints one line)."""


def check_imagenet_prepared(data_dir: Optional[str]) -> None:
    """Raise :class:`ImageNetNotPrepared` with the preparation steps unless ``data_dir`` holds a prepared imagenet2012."""
    import tensorflow_datasets as tfds

    builder = tfds.builder("imagenet2012", data_dir=data_dir)
    if not builder.is_prepared():
        raise ImageNetNotPrepared(
            f"tfds imagenet2012 is not prepared in data.data_dir={data_dir!r} (looked in {builder.data_dir}). "
            "ImageNet cannot be downloaded automatically: put ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar "
            "in MANUAL_DIR, run gensim_jax.data.imagenet.prepare_imagenet(DATA_DIR, MANUAL_DIR) once, then pass "
            "--set data.data_dir=DATA_DIR (see docs/api/experiment_imagenet_hierarchy.md), or use --config cpu_small."
        )


class HierarchySource(ArraySource):
    """In-memory source of :func:`~gensim_jax.stimuli.hierarchy.hierarchy_images` of the classes ``nodes`` of ``tree``.

    Example ``i``: ``image`` uint8 ``(S, S, 3)`` and ``label``. The class attributes come from
    ``attribute_seed`` (shared by the training and held-out sets), the images from ``image_seed``.
    """

    def __init__(
        self, tree, nodes, per_class: int, image_size: int, *, attribute_seed: int, image_seed: int, noise: float
    ):
        images, labels = hierarchy_images(
            tree, nodes, per_class, image_size, attribute_seed=attribute_seed, image_seed=image_seed, noise=noise
        )
        super().__init__({"image": images, "label": labels})

    @property
    def images(self) -> np.ndarray:
        return self.arrays["image"]

    @property
    def label(self) -> np.ndarray:
        return self.arrays["label"]

    def metadata(self, key: str) -> np.ndarray:
        if key != "label":
            raise ValueError(f"HierarchySource has metadata 'label' only, got {key!r}")
        return self.label


def arm_batches(
    arm: str,
    seed: int,
    shard,
    *,
    data: Any,
    simclr: Any,
    source: Optional[HierarchySource] = None,
    augment: str = "host",
):
    """``position -> iterator`` of this process's rows (``shard``) of the batches of ``arm`` (images ``uint8``,
    normalised in the step): ImageNet when ``data.dataset == "imagenet2012"``, else ``source``.
    ``augment="device"`` (synthetic source): the SimCLR images once with their ``augment_seed``, the views
    drawn in the step (:func:`gensim_jax.data.device_augment.simclr_preset` ``("imagenet", ...)``)."""
    if arm not in STREAMS:
        raise ValueError(f"arm must be one of {tuple(STREAMS)}, got {arm!r}")
    if data.dataset == "imagenet2012":
        from gensim_jax.data.imagenet import imagenet_stream

        return imagenet_stream(
            STREAMS[arm],
            data.train_split,
            seed=seed,
            shard=shard,
            data_dir=data.data_dir,
            image_size=data.image_size,
            shuffle_buffer=data.shuffle_buffer,
            grayscale_p=simclr.grayscale_p,
            blur_p=simclr.blur_p,
        )
    if source is None:
        raise ValueError("the synthetic dataset needs its HierarchySource (source=...)")
    from gensim_jax.data.streams import stream

    if arm == "simclr" and augment == "device":
        return stream("views", source, seed=seed, shard=shard, keys=("label",), device_augment=True)
    aug = None
    if arm == "simclr":  # TensorFlow: imported by the SimCLR arm only
        from gensim_jax.data.augment import simclr_augment

        s = data.image_size
        aug = simclr_augment(
            (s, s), crop_scale=tuple(simclr.crop_scale), blur_p=simclr.blur_p, grayscale_p=simclr.grayscale_p
        )
    return stream(STREAMS[arm], source, seed=seed, shard=shard, keys=("label",), group_key="label", augment=aug)


def heldout_images(data: Any, ev: Any, tree=None, nodes=None, attribute_seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` of the held-out evaluation set (``ev``: the config's ``eval`` section).

    Synthetic: ``ev.per_leaf`` fresh images per class of ``tree`` / ``nodes`` (``image_seed =
    ev.seed``), uint8. ImageNet: the first ``ev.num_images`` of ``data.eval_split`` with the central
    crop, normalised float16 (to halve host memory; 10,000 images at 224 take 3 GB).
    """
    if data.dataset == "synthetic":
        src = HierarchySource(
            tree,
            nodes,
            ev.per_leaf,
            data.image_size,
            attribute_seed=attribute_seed,
            image_seed=ev.seed,
            noise=data.synthetic_noise,
        )
        return src.images, src.label
    from gensim_jax.data.imagenet import imagenet_dataset
    from gensim_jax.data.pipelines import as_numpy

    b = min(ev.batch_size, ev.num_images)
    steps = -(-ev.num_images // b)
    images, labels = [], []
    for batch in as_numpy(
        imagenet_dataset(
            data.eval_split,
            b,
            seed=ev.seed,
            train=False,
            data_dir=data.data_dir,
            image_size=data.image_size,
            num_steps=steps,
        )
    ):
        keep = batch["mask"]
        images.append(batch["image"][keep].astype(np.float16))
        labels.append(batch["label"][keep])
    images, labels = np.concatenate(images)[: ev.num_images], np.concatenate(labels)[: ev.num_images]
    return images, labels.astype(np.int32)


#: The training sets: ImageNet-1k from a prepared tfds directory, or synthetic images of a balanced class tree.
DATASETS = ("imagenet2012", "synthetic")
IMAGENET_TRAIN_IMAGES = 1_281_167


def class_tree(data: Any) -> tuple:
    """``(tree, class_nodes)`` of the ``data`` section: the class tree and the node of each class label.

    ImageNet: the WordNet tree of :func:`~gensim_jax.kernels.hierarchy.imagenet1k_hierarchy` (label ``y``
    is node ``y``).  Synthetic: ``balanced_tree(data.branching)``, class ``c`` is leaf ``tree.leaves[c]``.
    """
    from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy
    from gensim_jax.stimuli.hierarchy import balanced_tree

    if data.dataset == "imagenet2012":
        h = imagenet1k_hierarchy()
        return h.tree, np.asarray(h.class_nodes)
    tree = balanced_tree(data.branching)
    return tree, tree.leaves


def num_train_images(data: Any) -> int:
    """Training-set size of the ``data`` section: ImageNet-1k's 1,281,167 or ``prod(branching) * train_per_leaf``."""
    if data.dataset == "imagenet2012":
        return IMAGENET_TRAIN_IMAGES
    return int(np.prod([int(b) for b in data.branching])) * int(data.train_per_leaf)


def check_data_config(data: Any) -> None:
    """``ValueError`` naming the ``data.`` field when the section is out of range (before anything is built)."""
    if data.dataset not in DATASETS:
        raise ValueError(f"data.dataset must be one of {DATASETS}, got {data.dataset!r}")
    if not data.branching or any(int(b) < 1 for b in data.branching):
        raise ValueError(f"data.branching must be a non-empty tuple of positive ints, got {data.branching}")
    if data.dataset == "synthetic" and np.prod([int(b) for b in data.branching]) < 2:
        raise ValueError(f"data.branching must give at least 2 classes, got {data.branching}")
    if data.train_per_leaf < 2:
        raise ValueError(
            f"data.train_per_leaf must be >= 2 (triplets need a positive partner), got {data.train_per_leaf}"
        )
    if data.synthetic_noise < 0:
        raise ValueError(f"data.synthetic_noise must be >= 0, got {data.synthetic_noise}")
