"""Spurious digits: MNIST digits multiplied onto CIFAR-10 backgrounds (seed 003, Sec. 3.1).

The data set of the thesis on a class-centre similarity loss (seed 003, Section 3.1 and Fig. 1):
each 28 x 28 MNIST digit is zero-padded to 32 x 32 (2 pixels each side) and **multiplied** onto a
32 x 32 CIFAR-10 colour image, ``out[y, x, c] = round(digit[y, x] / 255 * background[y, x, c])``
(the digit acts as a grayscale mask broadcast over the colour channels, so the stroke shows the
background and the rest is black). Every digit class ``d`` has its own pool of backgrounds,
disjoint from the other digits' pools by default, so that the background is a spurious cue for
the label; ``overlap`` in ``[0, 1]`` makes that fraction of every pool common to all digits
(``overlap = 1``: one shared pool, no spurious cue).

Splits (:func:`load_spurious_digits`):

* ``"train"``: MNIST train digits on backgrounds of their own pool (in distribution);
* ``"test_id"``: MNIST test digits on backgrounds of their own pool;
* ``"test_ood"``: MNIST test digits on backgrounds outside their own pool -- ``ood="swapped"``:
  from the other digits' pools (the spurious cue now points to a wrong class), ``ood="unseen"``:
  CIFAR-10 test images that are in no pool.

Pools are drawn from the CIFAR-10 train split with a seeded permutation; the background of
digit image ``i`` is a function of ``(seed, split, i)`` (:class:`SpuriousDigits` is an indexed
source). Data come from tensorflow-datasets ``mnist`` and ``cifar10``
(``tfds.testing.mock_data`` works for tests).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional

import numpy as np

from gensim_jax._extras import require
from gensim_jax.data.indexing import derive_key, stateless_uniform

__all__ = [
    "labelled_batches",
    "NUM_CLASSES",
    "make_pools",
    "compose",
    "pad_digits",
    "SpuriousDigits",
    "load_spurious_digits",
    "load_tfds_arrays",
    "tfds_prepared",
    "DataConfig",
    "DATA_SOURCES",
    "OOD_MODES",
    "TFDS_DATASETS",
    "check_data_config",
    "data_config",
    "tfds_missing_message",
    "load_arrays",
    "make_splits",
    "preprocess",
    "evaluation_sets",
]

NUM_CLASSES = 10
_POOL_TAG, _BG_TAG = 31, 32


def pad_digits(digits) -> np.ndarray:
    """Zero-pad ``(N, 28, 28)`` or ``(N, 28, 28, 1)`` digits to ``(N, 32, 32)`` (2 pixels a side)."""
    digits = np.asarray(digits)
    if digits.ndim == 4 and digits.shape[-1] == 1:
        digits = digits[..., 0]
    if digits.ndim != 3 or digits.shape[1:] != (28, 28):
        raise ValueError(f"digits must have shape (N, 28, 28[, 1]), got {digits.shape}")
    return np.pad(digits, ((0, 0), (2, 2), (2, 2)))


def compose(digits, backgrounds) -> np.ndarray:
    """Multiply padded digits onto backgrounds (seed 003 Sec. 3.1).

    Args:
      digits: ``(N, 32, 32)`` uint8 padded digits (see :func:`pad_digits`).
      backgrounds: ``(N, 32, 32, 3)`` uint8 colour backgrounds.

    Returns:
      ``(N, 32, 32, 3)`` uint8 ``round(digit / 255 * background)``.

    Example:
      >>> d = np.full((1, 32, 32), 255, np.uint8); b = np.full((1, 32, 32, 3), 7, np.uint8)
      >>> int(compose(d, b)[0, 0, 0, 0])
      7
    """
    digits = np.asarray(digits)
    backgrounds = np.asarray(backgrounds)
    if digits.ndim != 3 or backgrounds.ndim != 4 or backgrounds.shape[:3] != digits.shape or backgrounds.shape[-1] != 3:
        raise ValueError(
            f"digits (N, H, W) and backgrounds (N, H, W, 3) must agree, got {digits.shape} and {backgrounds.shape}"
        )
    out = digits[..., None].astype(np.float32) / 255.0 * backgrounds.astype(np.float32)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def make_pools(
    num_backgrounds: int, per_class: int, overlap: float = 0.0, *, seed: int, num_classes: int = NUM_CLASSES
) -> np.ndarray:
    """Background pools of the digit classes: ``(num_classes, per_class)`` background indices.

    ``S = round(overlap * per_class)`` backgrounds are common to every pool; the other
    ``per_class - S`` of each pool are its own, so pools of different classes intersect in
    exactly those ``S`` (``overlap = 0``: disjoint, the thesis default). Indices are drawn
    without replacement by a permutation seeded by ``seed``.

    Args:
      num_backgrounds: number of candidate backgrounds ``M``.
      per_class: pool size ``P`` (> 0).
      overlap: fraction in ``[0, 1]`` of each pool shared by all classes.
      seed: integer seed.
      num_classes: number of digit classes.

    Returns:
      int64 ``(num_classes, per_class)``.
    """
    if int(per_class) <= 0:
        raise ValueError(f"per_class must be positive, got {per_class}")
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    shared = int(round(overlap * per_class))
    own = per_class - shared
    need = shared + num_classes * own
    if need > num_backgrounds:
        raise ValueError(
            f"pools of {per_class} backgrounds with overlap {overlap} need {need} "
            f"distinct backgrounds, but only {num_backgrounds} are available"
        )
    perm = np.random.default_rng([int(seed), _POOL_TAG]).permutation(num_backgrounds)
    common = perm[:shared]
    pools = [np.concatenate([common, perm[shared + c * own : shared + (c + 1) * own]]) for c in range(num_classes)]
    return np.stack(pools).astype(np.int64)


class SpuriousDigits:
    """Indexed source of composed digit-on-background images (see module docstring).

    Args:
      digits: ``(N, 28, 28[, 1])`` uint8 MNIST images.
      labels: ``(N,)`` digit labels in ``[0, 10)``.
      backgrounds: ``(M, 32, 32, 3)`` uint8 candidate backgrounds (CIFAR-10 train images).
      background_labels: ``(M,)`` CIFAR-10 labels of the backgrounds.
      pools: ``(10, P)`` indices into ``backgrounds`` (:func:`make_pools`).
      mode: ``"id"`` (own pool), ``"swapped"`` (other digits' pools, never the own pool), or
        ``"unseen"`` (uniform over ``ood_backgrounds``).
      seed: integer seed of the background choice.
      ood_backgrounds, ood_background_labels: backgrounds for ``mode="unseen"``.

    Examples have ``image (32, 32, 3)`` uint8, ``label`` (digit), ``background`` (index into the
    background array used: ``ood_backgrounds`` in mode ``"unseen"``), ``background_label`` (CIFAR class) and ``in_pool``
    (whether the background belongs to the digit's pool).
    """

    def __init__(
        self,
        digits,
        labels,
        backgrounds,
        background_labels,
        pools,
        *,
        mode: str = "id",
        seed: int = 0,
        ood_backgrounds=None,
        ood_background_labels=None,
    ):
        self.digits = pad_digits(digits)
        self.labels = np.asarray(labels, dtype=np.int64)
        if self.labels.shape != (self.digits.shape[0],):
            raise ValueError(f"labels must have shape ({self.digits.shape[0]},), got {self.labels.shape}")
        if self.labels.size == 0:
            raise ValueError("digits must not be empty")
        self.pools = np.asarray(pools, dtype=np.int64)
        if self.pools.ndim != 2 or self.labels.max() >= self.pools.shape[0] or self.labels.min() < 0:
            raise ValueError(
                f"pools must be (num_classes, P) covering labels in "
                f"[0, {self.pools.shape[0] if self.pools.ndim == 2 else '?'}), got "
                f"pools {self.pools.shape} and labels in [{self.labels.min()}, "
                f"{self.labels.max()}]"
            )
        if mode not in ("id", "swapped", "unseen"):
            raise ValueError(f"mode must be 'id', 'swapped' or 'unseen', got {mode!r}")
        self.mode, self.seed = mode, int(seed)
        self.backgrounds = np.asarray(backgrounds)
        self.background_labels = np.asarray(background_labels, dtype=np.int64)
        if self.backgrounds.ndim != 4 or self.backgrounds.shape[1:] != (32, 32, 3):
            raise ValueError(f"backgrounds must have shape (M, 32, 32, 3), got {self.backgrounds.shape}")
        if self.background_labels.shape != (self.backgrounds.shape[0],):
            raise ValueError(
                f"background_labels must have shape ({self.backgrounds.shape[0]},), got {self.background_labels.shape}"
            )
        if self.pools.size and (self.pools.min() < 0 or self.pools.max() >= len(self.backgrounds)):
            raise ValueError(f"pools index backgrounds outside [0, {len(self.backgrounds)})")
        member = np.zeros((self.pools.shape[0], len(self.backgrounds)), bool)
        member[np.arange(self.pools.shape[0])[:, None], self.pools] = True
        self._member = member
        if mode == "swapped":
            # For each class, the backgrounds of the other pools that are not in its own pool.
            self._others = [np.flatnonzero(member.any(0) & ~member[c]) for c in range(len(member))]
            empty = [c for c, o in enumerate(self._others) if o.size == 0]
            if empty:
                raise ValueError(
                    f"mode 'swapped' needs backgrounds outside each pool; classes {empty} have none (overlap = 1?)"
                )
        if mode == "unseen":
            if ood_backgrounds is None or ood_background_labels is None:
                raise ValueError("mode 'unseen' needs ood_backgrounds and ood_background_labels")
            self.ood_backgrounds = np.asarray(ood_backgrounds)
            self.ood_background_labels = np.asarray(ood_background_labels, dtype=np.int64)
            if (
                self.ood_backgrounds.ndim != 4
                or self.ood_backgrounds.shape[1:] != (32, 32, 3)
                or len(self.ood_backgrounds) == 0
            ):
                raise ValueError(
                    f"ood_backgrounds must have shape (K > 0, 32, 32, 3), got {self.ood_backgrounds.shape}"
                )
        self._key = derive_key(self.seed, _BG_TAG, ["id", "swapped", "unseen"].index(mode))

    def __len__(self) -> int:
        return int(self.labels.size)

    def background_indices(self, indices) -> np.ndarray:
        """Background of each digit image: index into ``backgrounds`` (or ``ood_backgrounds``)."""
        indices = np.asarray(indices, dtype=np.int64)
        u = stateless_uniform(self._key, 0, indices)
        labels = self.labels[indices]
        if self.mode == "id":
            p = self.pools.shape[1]
            return self.pools[labels, np.minimum((u * p).astype(np.int64), p - 1)]
        if self.mode == "unseen":
            k = len(self.ood_backgrounds)
            return np.minimum((u * k).astype(np.int64), k - 1)
        out = np.empty_like(indices)
        for c in np.unique(labels):
            sel = labels == c
            o = self._others[c]
            out[sel] = o[np.minimum((u[sel] * o.size).astype(np.int64), o.size - 1)]
        return out

    def examples(self, indices) -> dict[str, np.ndarray]:
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= len(self)):
            raise ValueError(f"indices must lie in [0, {len(self)})")
        bg = self.background_indices(indices)
        labels = self.labels[indices]
        if self.mode == "unseen":
            images, bg_labels = self.ood_backgrounds[bg], self.ood_background_labels[bg]
            in_pool = np.zeros(indices.shape, bool)
        else:
            images, bg_labels = self.backgrounds[bg], self.background_labels[bg]
            in_pool = self._member[labels, bg]
        return {
            "image": compose(self.digits[indices], images),
            "label": labels,
            "background": bg,
            "background_label": bg_labels,
            "in_pool": in_pool,
        }

    def example(self, index: int) -> dict[str, np.ndarray]:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"index must be an integer, got {type(index).__name__}")
        return {k: v[0] for k, v in self.examples(np.array([index])).items()}

    def metadata(self, key: str) -> np.ndarray:
        """All examples' metadata ``key`` without composing images (for group indexes)."""
        if key == "label":
            return self.labels
        return self.examples(np.arange(len(self)))[key]


def tfds_prepared(name: str, data_dir: str | None = None) -> bool:
    """Whether tfds data set ``name`` is downloaded and prepared under ``data_dir`` (no download)."""
    from gensim_jax.data._tf import tf  # noqa: F401  (hides GPUs before tfds touches TF)

    tfds = require("tensorflow_datasets", "data")

    return bool(tfds.builder(name, data_dir=data_dir).is_prepared())


def load_tfds_arrays(
    name: str, split: str, data_dir: str | None = None, download: bool = True
) -> dict[str, np.ndarray]:
    """A whole tfds split as numpy arrays (``image``, ``label``), in the stored order."""
    from gensim_jax.data._tf import tf  # noqa: F401  (hides GPUs before tfds touches TF)

    tfds = require("tensorflow_datasets", "data")

    builder = tfds.builder(name, data_dir=data_dir)
    if download:
        builder.download_and_prepare()
    ds = builder.as_dataset(split=split, shuffle_files=False)
    ds = ds.map(lambda ex: {"image": ex["image"], "label": ex["label"]})
    parts: dict[str, list] = {"image": [], "label": []}
    for batch in tfds.as_numpy(ds.batch(8192)):
        for k in parts:
            parts[k].append(batch[k])
    if not parts["image"]:
        raise ValueError(f"tfds {name}:{split} is empty")
    return {k: np.concatenate(v) for k, v in parts.items()}


def load_spurious_digits(
    split: str = "train",
    *,
    per_class: int = 10,
    overlap: float = 0.0,
    ood: str = "swapped",
    seed: int = 0,
    data_dir: str | None = None,
    download: bool = True,
    arrays: Mapping[str, Mapping[str, np.ndarray]] | None = None,
) -> SpuriousDigits:
    """Build a spurious-digits split from tfds ``mnist`` and ``cifar10`` (seed 003, Sec. 3.1).

    Args:
      split: ``"train"``, ``"test_id"`` or ``"test_ood"``.
      per_class: backgrounds per digit pool (the thesis's "class set size").
      overlap: fraction of each pool shared by all digits (0: disjoint pools).
      ood: for ``"test_ood"``: ``"swapped"`` (other digits' pools) or ``"unseen"`` (CIFAR-10 test
        images, in no pool).
      seed: seed of the pools and of the background choice (use the same for all splits so they
        share pools).
      data_dir: tfds data directory.
      download: let tfds download and prepare the data sets when missing.
      arrays: optional preloaded ``{"mnist_train"|"mnist_test"|"cifar10_train"|"cifar10_test":
        {"image", "label"}}`` (skips tfds).

    Returns:
      A :class:`SpuriousDigits` indexed source.

    Example (needs the data sets or ``tfds.testing.mock_data``)::

      train = load_spurious_digits("train", per_class=10)
      ds = labelled_batches(train, 128, seed=0)
    """
    if split not in ("train", "test_id", "test_ood"):
        raise ValueError(f"split must be 'train', 'test_id' or 'test_ood', got {split!r}")
    if ood not in ("swapped", "unseen"):
        raise ValueError(f"ood must be 'swapped' or 'unseen', got {ood!r}")
    arrays = dict(arrays or {})

    def get(name):
        if name not in arrays:
            ds_name, ds_split = name.split("_")
            arrays[name] = load_tfds_arrays(ds_name, ds_split, data_dir, download)
        return arrays[name]

    mnist = get("mnist_train" if split == "train" else "mnist_test")
    cifar = get("cifar10_train")
    pools = make_pools(len(cifar["image"]), per_class, overlap, seed=seed)
    kwargs = {}
    mode = "id" if split != "test_ood" else ood
    if mode == "unseen":
        test = get("cifar10_test")
        kwargs = {"ood_backgrounds": test["image"], "ood_background_labels": test["label"]}
    return SpuriousDigits(
        mnist["image"], mnist["label"], cifar["image"], cifar["label"], pools, mode=mode, seed=seed, **kwargs
    )


# --------------------------------------------------------------------------------------------
# The experiment's data, from config fields (shared by training and `python -m eval spurious_digits`)
# --------------------------------------------------------------------------------------------

DATA_SOURCES = ("tfds", "synthetic")
OOD_MODES = ("swapped", "unseen")
TFDS_DATASETS = ("mnist", "cifar10")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """The fields that define the spurious-digits data: the experiment config's ``data`` section.

    Attributes:
      source: ``"tfds"`` (MNIST on CIFAR-10) or ``"synthetic"`` (the offline stand-ins of
        :mod:`gensim_jax.data.synthetic_digits`).
      data_dir: tfds data directory (None: tfds's default).  download: let tfds download missing data.
      seed: seed of the pools, the background choice and the synthetic images.
      per_class: backgrounds per digit pool.  overlap: fraction of each pool shared by all digits.
      ood: ``"swapped"`` (other digits' pools) or ``"unseen"`` (CIFAR-10 test images).
      num_train_images, num_test_images: digits used (None: all of tfds's split).
      num_backgrounds, num_ood_backgrounds, digit_jitter: synthetic only.
    """

    source: str = "tfds"
    data_dir: Optional[str] = None
    download: bool = False
    seed: int = 0
    per_class: int = 10
    overlap: float = 0.0
    ood: str = "swapped"
    num_train_images: Optional[int] = None
    num_test_images: Optional[int] = None
    num_backgrounds: int = 1000
    num_ood_backgrounds: int = 200
    digit_jitter: float = 1.0


def data_config(config: Any) -> DataConfig:
    """The :class:`DataConfig` of an experiment config (its ``data`` section) or of a recorded one (``config.json``'s
    ``config``: a mapping whose ``"data"`` holds the fields; missing fields keep their defaults).

    ``ValueError`` naming a recorded field :class:`DataConfig` does not have.
    """
    if isinstance(config, DataConfig):
        return config
    if isinstance(config, Mapping):
        fields = config.get("data", {})
        if not isinstance(fields, Mapping):
            raise ValueError(f"the recorded config's data must be an object of DataConfig fields, got {fields!r}")
        known = {f.name for f in dataclasses.fields(DataConfig)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(
                f"the recorded config has data fields {['data.' + k for k in unknown]} that DataConfig lacks"
            )
        return DataConfig(**fields)
    return config.data


def check_data_config(config: DataConfig) -> None:
    """``ValueError`` naming the field (``data.NAME``) when a field of the ``data`` section is out of range."""
    if config.source not in DATA_SOURCES:
        raise ValueError(f"data.source must be one of {DATA_SOURCES}, got {config.source!r}")
    if config.ood not in OOD_MODES:
        raise ValueError(f"data.ood must be one of {OOD_MODES}, got {config.ood!r}")
    if config.per_class < 1:
        raise ValueError(f"data.per_class must be >= 1, got {config.per_class}")
    if not 0.0 <= config.overlap < 1.0:
        raise ValueError(
            f"data.overlap must lie in [0, 1) (1 leaves no spurious cue and no swapped OOD), got {config.overlap}"
        )
    for name in ("num_train_images", "num_test_images"):
        value = getattr(config, name)
        if value is not None and value < 10:
            raise ValueError(f"data.{name} must be None (all) or >= 10, got {value}")
    if config.source == "synthetic":
        if config.num_train_images is None or config.num_test_images is None:
            raise ValueError("data.num_train_images and data.num_test_images must be set with data.source='synthetic'")
        own = config.per_class - int(round(config.overlap * config.per_class))
        need = config.per_class - own + NUM_CLASSES * own
        if config.num_backgrounds < need:
            raise ValueError(
                f"data.num_backgrounds must be >= {need} for 10 pools of data.per_class={config.per_class} "
                f"with data.overlap={config.overlap}, got {config.num_backgrounds}"
            )
        if config.ood == "unseen" and config.num_ood_backgrounds < 1:
            raise ValueError(
                f"data.num_ood_backgrounds must be >= 1 with data.ood='unseen', got {config.num_ood_backgrounds}"
            )
        if not (math.isfinite(config.digit_jitter) and config.digit_jitter >= 0):
            raise ValueError(f"data.digit_jitter must be a finite number >= 0, got {config.digit_jitter}")


def tfds_missing_message(data_dir: Optional[str], missing) -> str:
    """How to prepare the tfds data sets the ``paper`` config reads (for the error it raises)."""
    where = data_dir or "~/tensorflow_datasets (tfds's default)"
    flag = f" --data_dir {data_dir}" if data_dir else ""
    return (
        f"tfds data sets {list(missing)} are not prepared under {where}. Prepare them once on a machine with "
        f'network access, e.g. `tfds build mnist cifar10{flag}` or `python -c "import tensorflow_datasets as '
        f"tfds; [tfds.builder(n, data_dir={data_dir!r}).download_and_prepare() for n in ('mnist', 'cifar10')]\"`, "
        f"copy the directory here and pass --set data.data_dir=DIR; or run with --set data.download=true; or use "
        f"--config cpu_small (offline procedural stand-ins)."
    )


def load_arrays(config: Any) -> dict:
    """``{"mnist_train", "mnist_test", "cifar10_train"[, "cifar10_test"]}`` arrays of ``config``'s data.

    ``config``: a :class:`DataConfig` (the ``data`` section).  ``"synthetic"``:
    :func:`gensim_jax.data.synthetic_digits.synthetic_arrays`.  ``"tfds"``: the prepared tfds splits
    (``FileNotFoundError`` with preparation instructions when absent, unless ``download``), digits
    cut to the first ``num_train_images`` / ``num_test_images`` when set.
    """
    if config.source == "synthetic":
        from gensim_jax.data.synthetic_digits import synthetic_arrays

        return synthetic_arrays(
            num_train=config.num_train_images,
            num_test=config.num_test_images,
            num_backgrounds=config.num_backgrounds,
            num_ood_backgrounds=config.num_ood_backgrounds if config.ood == "unseen" else 0,
            seed=config.seed,
            jitter=config.digit_jitter,
        )
    if not config.download:
        missing = [n for n in TFDS_DATASETS if not tfds_prepared(n, config.data_dir)]
        if missing:
            raise FileNotFoundError(tfds_missing_message(config.data_dir, missing))
    names = ["mnist_train", "mnist_test", "cifar10_train"] + (["cifar10_test"] if config.ood == "unseen" else [])
    arrays = {}
    for name in names:
        ds, split = name.split("_")
        arrays[name] = load_tfds_arrays(ds, split, config.data_dir, download=config.download)
    for name, n in (("mnist_train", config.num_train_images), ("mnist_test", config.num_test_images)):
        if n is not None:
            arrays[name] = {k: v[:n] for k, v in arrays[name].items()}
    return arrays


def make_splits(config: Any, arrays: Mapping) -> dict:
    """``{"train", "test_id", "test_ood"}`` :class:`SpuriousDigits` sources of ``config`` (a :class:`DataConfig`) over ``arrays``."""
    return {
        split: load_spurious_digits(
            split,
            per_class=config.per_class,
            overlap=config.overlap,
            ood=config.ood,
            seed=config.seed,
            arrays=arrays,
        )
        for split in ("train", "test_id", "test_ood")
    }


def preprocess(images) -> np.ndarray:
    """``uint8`` ``(..., 32, 32, 3)`` -> float32 in ``[0, 1]`` (the thesis's tensors; no mean/std shift)."""
    return np.asarray(images, np.float32) / 255.0


def evaluation_sets(splits: Mapping) -> dict:
    """``{"id": (images float32 (N, 32, 32, 3), labels (N,)), "ood": (...)}``: every test example composed once."""
    out = {}
    for name, split in (("id", "test_id"), ("ood", "test_ood")):
        ex = splits[split].examples(np.arange(len(splits[split])))
        out[name] = (preprocess(ex["image"]), ex["label"])
    return out


def labelled_batches(source, seed: int, shard):
    """``position -> iterator`` of this process's rows (``shard``, a :class:`~gensim_jax.parallel.HostShard`) of the
    training batches of ``source`` (``image`` uint8, ``label`` int32, ``mask``); the training step scales the
    images to ``[0, 1]`` (``preprocess="unit"``)."""
    from gensim_jax.data.streams import stream

    labelled = stream("labelled", source, seed=seed, shard=shard, keys=("label",))
    return lambda position: ({**b, "label": b["label"].astype(np.int32)} for b in labelled(position))
