"""Indexed sources: the numpy-only protocol through which stimuli enter the input pipelines.

An *indexed source* is any object with

* ``__len__()`` -- the number of examples ``N`` (finite; a procedural generator picks a large
  ``N`` and indexes its infinite stream modulo nothing -- index ``i`` simply names example ``i``);
* ``example(index) -> dict[str, np.ndarray]`` -- one example: ``"image"`` (``H x W x C``,
  ``uint8`` in ``[0, 255]`` or float in ``[0, 1]``) plus metadata arrays (``"label"``,
  ``"features"``, ``"program_id"``, ``"component"``, ...), a **pure function of the index**
  (procedural sources seed their generator with ``np.random.default_rng([seed, index])``);
* optionally ``examples(indices) -> dict[str, np.ndarray]`` -- a batch of examples stacked on a
  leading axis, for sources that can do better than a Python loop (:func:`gather` falls back to
  stacking :meth:`example` calls).

The pipelines (:mod:`gensim_jax.data.pipelines`) only ever ask a source for examples by index, so
an order, a shard, a resume point and every sampled partner (positives and negatives of
triplets, the second element of pairs) are functions of ``(seed, step)`` alone.

This module imports numpy only (no TensorFlow), so generators in :mod:`gensim_jax.stimuli`
can be adapted without paying for TensorFlow.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = [
    "IndexedSource",
    "ArraySource",
    "GreyImageSource",
    "FunctionSource",
    "SyntheticImageSource",
    "gather",
    "group_index",
    "GroupIndex",
]


@runtime_checkable
class IndexedSource(Protocol):
    """Protocol of a random-access, deterministic example source (see module docstring)."""

    def __len__(self) -> int: ...

    def example(self, index: int) -> dict[str, np.ndarray]: ...


def _check_index(index, n: int) -> int:
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"index must be an integer, got {type(index).__name__}")
    index = int(index)
    if not 0 <= index < n:
        raise ValueError(f"index {index} is out of range for a source of {n} examples")
    return index


def gather(source: IndexedSource, indices) -> dict[str, np.ndarray]:
    """Examples ``indices`` of ``source`` stacked on a leading axis.

    Uses ``source.examples`` when the source has it, else stacks ``source.example(i)``.

    Args:
      source: an :class:`IndexedSource`.
      indices: ``(B,)`` integer indices in ``[0, len(source))``.

    Returns:
      ``dict`` of arrays with leading dimension ``B``.

    Example:
      >>> src = ArraySource({"image": np.zeros((4, 2, 2, 1), np.uint8), "label": np.arange(4)})
      >>> gather(src, [3, 1])["label"].tolist()
      [3, 1]
    """
    indices = np.asarray(indices)
    if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
        raise ValueError(f"indices must be a 1-D integer array, got shape {indices.shape} dtype {indices.dtype}")
    n = len(source)
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(f"indices must lie in [0, {n}), got range [{indices.min()}, {indices.max()}]")
    batched = getattr(source, "examples", None)
    if batched is not None:
        return {k: np.asarray(v) for k, v in batched(indices).items()}
    items = [source.example(int(i)) for i in indices]
    if not items:
        raise ValueError("indices must not be empty")
    keys = items[0].keys()
    return {k: np.stack([np.asarray(it[k]) for it in items]) for k in keys}


class ArraySource:
    """An in-memory source: example ``i`` is ``{key: array[i] for key, array in arrays}``.

    Args:
      arrays: mapping from key to an array whose leading axis is the example axis; must contain
        ``"image"`` (``(N, H, W, C)``); all arrays share ``N``.

    Example:
      >>> src = ArraySource({"image": np.zeros((3, 8, 8, 1), np.uint8), "label": np.array([0, 1, 1])})
      >>> len(src), int(src.example(2)["label"])
      (3, 1)
    """

    def __init__(self, arrays: Mapping[str, Any]):
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        if "image" not in arrays:
            raise ValueError(f"arrays must contain 'image', got keys {sorted(arrays)}")
        if arrays["image"].ndim != 4:
            raise ValueError(f"arrays['image'] must have shape (N, H, W, C), got {arrays['image'].shape}")
        n = arrays["image"].shape[0]
        for k, v in arrays.items():
            if v.ndim == 0 or v.shape[0] != n:
                raise ValueError(f"arrays[{k!r}] has leading size {v.shape[:1]} but arrays['image'] has {n} examples")
        if n == 0:
            raise ValueError("arrays must hold at least one example")
        self.arrays = arrays

    def __len__(self) -> int:
        return int(self.arrays["image"].shape[0])

    def example(self, index: int) -> dict[str, np.ndarray]:
        index = _check_index(index, len(self))
        return {k: v[index] for k, v in self.arrays.items()}

    def examples(self, indices) -> dict[str, np.ndarray]:
        indices = np.asarray(indices, dtype=np.int64)
        return {k: v[indices] for k, v in self.arrays.items()}


class GreyImageSource(ArraySource):
    """An in-memory source of grey images stored once ``(N, H, W)`` and served as ``(H, W, C)``.

    Line-drawing stimuli (quadrilaterals, Geoclidean figures) are grey, while ImageNet encoders
    take 3 channels: storing one channel and repeating it per batch keeps a third of the memory
    (the paper-size quadrilateral set, 11,000 images of 224 x 224, is 0.55 GB instead of 1.7 GB).

    Args:
      images: ``(N, H, W)`` (any dtype; ``uint8`` recommended).
      channels: channels of the served images (default 3).
      **metadata: arrays with leading axis ``N`` (labels, features, ids).

    Example:
      >>> src = GreyImageSource(np.zeros((2, 4, 4), np.uint8), label=np.array([3, 5]))
      >>> src.example(1)["image"].shape, int(src.example(1)["label"])
      ((4, 4, 3), 5)
    """

    def __init__(self, images, channels: int = 3, **metadata: Any):
        images = np.asarray(images)
        if images.ndim != 3:
            raise ValueError(f"images must have shape (N, H, W), got {images.shape}")
        if int(channels) < 1:
            raise ValueError(f"channels must be >= 1, got {channels}")
        super().__init__({"image": images[..., None], **metadata})
        self.channels = int(channels)

    def examples(self, indices) -> dict[str, np.ndarray]:
        out = super().examples(indices)
        out["image"] = np.repeat(out["image"], self.channels, axis=-1)
        return out

    def example(self, index: int) -> dict[str, np.ndarray]:
        out = super().example(index)
        out["image"] = np.repeat(out["image"], self.channels, axis=-1)
        return out


class FunctionSource:
    """Adapts a seeded generator function to an :class:`IndexedSource`.

    Example ``i`` is ``fn(np.random.default_rng([seed, i]), i)``, so it depends on ``(seed, i)``
    only (the adapter for any procedural stimulus generator, e.g. a quadrilateral or
    Geoclidean sampler that takes a ``numpy.random.Generator``).

    Args:
      fn: ``fn(rng, index) -> dict[str, np.ndarray]`` with an ``"image"`` entry.
      length: number of examples ``N`` (> 0).
      seed: non-negative integer seed.

    Example:
      >>> src = FunctionSource(lambda rng, i: {"image": rng.integers(0, 255, (4, 4, 1), np.uint8),
      ...                                       "label": np.int64(i % 2)}, length=10, seed=0)
      >>> bool((src.example(3)["image"] == src.example(3)["image"]).all())
      True
    """

    def __init__(self, fn: Callable[[np.random.Generator, int], Mapping[str, Any]], length: int, seed: int = 0):
        if int(length) <= 0:
            raise ValueError(f"length must be positive, got {length}")
        if int(seed) < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.fn, self.length, self.seed = fn, int(length), int(seed)

    def __len__(self) -> int:
        return self.length

    def example(self, index: int) -> dict[str, np.ndarray]:
        index = _check_index(index, self.length)
        out = {k: np.asarray(v) for k, v in self.fn(np.random.default_rng([self.seed, index]), index).items()}
        if "image" not in out:
            raise ValueError(f"fn must return an 'image' entry, got keys {sorted(out)}")
        return out


class SyntheticImageSource:
    """Random ``uint8`` images with a class label: a stand-in for benchmarks and tests.

    Example ``i`` has label ``i % num_classes`` and an image drawn from
    ``default_rng([seed, i])`` (8 x 8 pixel blocks plus noise, so that blur and crops are not no-ops).

    Args:
      length: number of examples.
      image_shape: ``(H, W, C)``.
      num_classes: number of labels (> 0).
      seed: non-negative integer seed.
    """

    def __init__(self, length: int, image_shape: Sequence[int] = (32, 32, 3), num_classes: int = 10, seed: int = 0):
        image_shape = tuple(int(s) for s in image_shape)
        if len(image_shape) != 3 or min(image_shape) <= 0:
            raise ValueError(f"image_shape must be (H, W, C) with positive sizes, got {image_shape}")
        if int(length) <= 0 or int(num_classes) <= 0:
            raise ValueError(f"length and num_classes must be positive, got {length}, {num_classes}")
        self.length, self.image_shape = int(length), image_shape
        self.num_classes, self.seed = int(num_classes), int(seed)

    def __len__(self) -> int:
        return self.length

    def _image(self, index: int) -> np.ndarray:
        h, w, c = self.image_shape
        rng = np.random.default_rng([self.seed, index])
        small = rng.integers(0, 256, size=(max(h // 8, 1), max(w // 8, 1), c)).astype(np.float32)
        big = np.repeat(np.repeat(small, -(-h // small.shape[0]), 0), -(-w // small.shape[1]), 1)
        img = big[:h, :w] + rng.normal(0.0, 8.0, size=(h, w, c))
        return np.clip(img, 0, 255).astype(np.uint8)

    def example(self, index: int) -> dict[str, np.ndarray]:
        index = _check_index(index, self.length)
        return {"image": self._image(index), "label": np.int64(index % self.num_classes)}


#: Up to this many groups :meth:`GroupIndex.sample_other_group` keeps every group's restricted CDF
#: (a ``(G, G)`` float64 table: 8 MB at 1,024 groups); above it, one ``searchsorted`` per distinct group.
CDF_TABLE_MAX_GROUPS = 1024


class GroupIndex:
    """Members of each group of a source, for sampling same-group and different-group partners.

    Attributes:
      ids: ``(G,)`` sorted distinct group ids.
      group_of: ``(N,)`` position in ``ids`` of each example's group.
      members: ``(N,)`` example indices sorted by group (stable).
      starts: ``(G + 1,)`` offsets of each group in ``members``.
      prior: ``(G,)`` probability of each group (empirical frequency unless given).
    """

    def __init__(self, group_ids, prior=None):
        group_ids = np.asarray(group_ids)
        if group_ids.ndim != 1 or group_ids.size == 0:
            raise ValueError(f"group_ids must be a non-empty 1-D array, got shape {group_ids.shape}")
        self.ids, self.group_of = np.unique(group_ids, return_inverse=True)
        self.group_of = self.group_of.astype(np.int64)
        self.members = np.argsort(self.group_of, kind="stable").astype(np.int64)
        counts = np.bincount(self.group_of, minlength=self.ids.size)
        self.starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.counts = counts.astype(np.int64)
        if prior is None:
            prior = counts / counts.sum()
        prior = np.asarray(prior, dtype=np.float64)
        if prior.shape != self.ids.shape:
            raise ValueError(f"prior must have one entry per group ({self.ids.size}), got shape {prior.shape}")
        if (prior < 0).any() or not np.isfinite(prior).all() or prior.sum() <= 0:
            raise ValueError("prior must be finite, non-negative and not all zero")
        self.prior = prior / prior.sum()

    @property
    def num_groups(self) -> int:
        return int(self.ids.size)

    def sample_member(self, u, groups, exclude=None) -> np.ndarray:
        """A uniformly drawn member of each group in ``groups``.

        Args:
          u: ``(B,)`` uniforms in ``[0, 1)`` (the randomness, see :func:`stateless_uniform`).
          groups: ``(B,)`` positions in ``ids``.
          exclude: optional ``(B,)`` example indices to avoid when the group has another member
            (the positive of a triplet is not the anchor itself).

        Returns:
          ``(B,)`` example indices.
        """
        groups = np.asarray(groups, dtype=np.int64)
        u = np.asarray(u, dtype=np.float64)
        counts = self.counts[groups]
        if exclude is None:
            offset = np.minimum(np.floor(u * counts).astype(np.int64), counts - 1)
            return self.members[self.starts[groups] + offset]
        exclude = np.asarray(exclude, dtype=np.int64)
        rank = self._rank[exclude]
        if (self.group_of[exclude] != groups).any():
            raise ValueError("exclude must hold examples of the given groups")
        others = np.maximum(counts - 1, 1)
        draw = np.minimum(np.floor(u * others).astype(np.int64), others - 1)
        offset = np.where(counts > 1, draw + (draw >= rank), rank)
        return self.members[self.starts[groups] + offset]

    @property
    def _rank(self) -> np.ndarray:
        if not hasattr(self, "_rank_cache"):
            rank = np.empty_like(self.members)
            rank[self.members] = np.arange(self.members.size) - self.starts[self.group_of[self.members]]
            self._rank_cache = rank
        return self._rank_cache

    def sample_group(self, u) -> np.ndarray:
        """Groups drawn from the prior by inversion of its CDF (``u``: uniforms in ``[0, 1)``)."""
        cdf = np.cumsum(self.prior)
        cdf[-1] = 1.0
        out = np.searchsorted(cdf, np.asarray(u, dtype=np.float64), side="right")
        return np.minimum(out, self.num_groups - 1).astype(np.int64)

    def sample_other_group(self, u, groups) -> np.ndarray:
        """For each of ``groups``, a different group drawn from the prior restricted to the others.

        Inverse-CDF sampling from ``q_g = prior`` with ``q_g[g] = 0``, renormalised.

        Args:
          u: ``(B,)`` uniforms in ``[0, 1)``.
          groups: ``(B,)`` positions in ``ids``.

        Returns:
          ``(B,)`` group positions, never equal to ``groups``.

        The restricted CDFs of all groups are computed once (a ``(G, G)`` table, for up to
        :data:`CDF_TABLE_MAX_GROUPS` groups) and each draw counts the entries of its row at or below
        ``u``: the index ``searchsorted(cdf, u, side="right")`` of a non-decreasing row, so the draws
        equal those of one ``searchsorted`` per distinct group, bit for bit, in a fixed number of array
        operations per batch instead of several per distinct group.
        """
        groups = np.asarray(groups, dtype=np.int64)
        u = np.asarray(u, dtype=np.float64)
        if self.num_groups > CDF_TABLE_MAX_GROUPS:
            return self._sample_other_group_loop(u, groups)
        table, last = self._other_cdf
        bad = last[groups] < 0
        if bad.any():
            g = int(groups[np.flatnonzero(bad)[0]])
            raise ValueError(f"cannot draw a group other than {self.ids[g]!r}: it holds all the prior mass")
        counts = np.count_nonzero(table[groups] <= u[:, None], axis=1)
        return np.minimum(counts, last[groups])

    @staticmethod
    def _other_cdf_row(prior: np.ndarray, g: int):
        """CDF of ``prior`` with group ``g`` removed, renormalised, and its last group of positive mass
        (``None`` when ``g`` holds all the mass)."""
        q = prior.copy()
        q[g] = 0.0
        total = q.sum()
        if total <= 0:
            return None, None
        return np.cumsum(q / total), int(np.flatnonzero(q > 0)[-1])

    @functools.cached_property
    def _other_cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """``(G, G)`` restricted CDFs (row ``g``: :meth:`_other_cdf_row`) and ``(G,)`` last groups (-1: none)."""
        table = np.full((self.num_groups, self.num_groups), np.inf)
        last = np.full(self.num_groups, -1, np.int64)
        for g in range(self.num_groups):
            cdf, end = self._other_cdf_row(self.prior, g)
            if cdf is not None:
                table[g], last[g] = cdf, end
        return table, last

    def _sample_other_group_loop(self, u: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """:meth:`sample_other_group` for many groups: one ``searchsorted`` per distinct group of the batch."""
        out = np.empty_like(groups)
        for g in np.unique(groups):
            cdf, last = self._other_cdf_row(self.prior, int(g))
            if cdf is None:
                raise ValueError(f"cannot draw a group other than {self.ids[g]!r}: it holds all the prior mass")
            sel = groups == g
            # side="right" never returns a zero-mass group; clip rounding past the end.
            out[sel] = np.minimum(np.searchsorted(cdf, u[sel], side="right"), last)
        return out


def group_index(source: IndexedSource, key: str, prior=None, group_ids=None) -> GroupIndex:
    """Build a :class:`GroupIndex` over ``source`` from metadata ``key`` (scalar per example).

    Args:
      source: an :class:`IndexedSource`.
      key: metadata key holding a scalar group id (class, program id, mixture component).
      prior: optional ``(G,)`` prior over the sorted distinct ids (defaults to their frequency).
      group_ids: optional precomputed ``(N,)`` ids (skips reading every example).

    Returns:
      A :class:`GroupIndex`.
    """
    if group_ids is None:
        arrays = getattr(source, "arrays", None)
        if arrays is not None and key in arrays:
            group_ids = arrays[key]
        elif hasattr(source, "metadata"):
            group_ids = source.metadata(key)
        else:
            group_ids = np.array([np.asarray(source.example(i)[key]) for i in range(len(source))])
    group_ids = np.asarray(group_ids)
    if group_ids.shape != (len(source),):
        raise ValueError(
            f"metadata {key!r} must be one scalar per example: expected shape ({len(source)},), got {group_ids.shape}"
        )
    return GroupIndex(group_ids, prior=prior)
