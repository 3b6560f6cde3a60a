"""Batch builders over indexed sources: labelled batches, pairs, Eq. A3 triplets, SimCLR views.

Every builder returns a ``tf.data.Dataset`` of per-host batches (dicts of tensors; iterate with
:func:`as_numpy` for dicts of numpy arrays). Batches carry the images and the generative
metadata of the source, so that similarity targets can be computed from metadata in the
training step. Shapes, with per-host batch ``B`` and images ``H x W x C``:

========================  ======================  ==========================================
builder                   ``image``               metadata ``key`` (and ``index``)
========================  ======================  ==========================================
:func:`labelled_batches`  ``(B, H, W, C)``        ``(B, ...)``
:func:`pair_batches`      ``(B, 2, H, W, C)``     ``(B, 2, ...)``
:func:`triplet_batches`   ``(B, 3, H, W, C)``     ``(B, 3, ...)``: anchor, positive, negative
:func:`view_batches`      ``(B, V, H, W, C)``     ``(B, ...)`` (the views share the example)
========================  ======================  ==========================================

Each batch also has ``position`` (``(B,)`` global stream positions) and ``mask`` (``(B,)``
bool; False only for padding past the end of a finite pass, see ``num_epochs``).

Determinism and resumption: the examples of step ``s`` and every random number used for them
(partners of pairs and triplets, augmentation seeds) are functions of ``(seed, s)`` and the
host's slice of the global batch (:class:`~gensim_jax.data.indexing.StreamIndex`), so the
stream is identical across runs and ``start_step=k`` yields exactly the batches ``k, k+1, ...``
of an uninterrupted run without replaying the first ``k``. Augmentations are TF stateless ops
keyed by ``(seed, position, member)``; ``tf.data`` runs with ``deterministic=True``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from gensim_jax.data.indexing import StreamIndex, derive_key, stateless_uniform, stateless_uniforms
from gensim_jax.data.sources import GroupIndex, IndexedSource, gather, group_index

__all__ = [
    "labelled_batches",
    "pair_batches",
    "triplet_batches",
    "view_batches",
    "as_numpy",
    "Augment",
    "HostBatches",
]

#: ``augment(image, seed) -> image``: a TF function of one ``(H, W, C)`` image and a ``(2,)``
#: int seed (see :mod:`gensim_jax.data.augment`).
Augment = Callable[..., Any]

_AUTOTUNE = -1  # tf.data.AUTOTUNE

# Streams of stateless_uniform draws (fixed forever: changing them changes every stream).
_PAIR_SAME, _PAIR_MEMBER, _PAIR_OTHER = 0, 1, 2
_TRI_POS, _TRI_NEGGROUP, _TRI_NEG = 3, 4, 5
_AUG_TAG = 7
_PAIR_TAG = 8
_TRIPLET_TAG = 9


def as_numpy(dataset) -> Iterator[dict[str, np.ndarray]]:
    """Iterate a builder's dataset as dicts of numpy arrays."""
    return dataset.as_numpy_iterator()


def _probe(source: IndexedSource, keys: Sequence[str] | None) -> dict[str, np.ndarray]:
    if len(source) <= 0:
        raise ValueError("source must hold at least one example")
    ex = gather(source, np.array([0]))
    if "image" not in ex:
        raise ValueError(f"source examples must have an 'image' entry, got keys {sorted(ex)}")
    if ex["image"].ndim != 4:
        raise ValueError(f"source images must have shape (H, W, C), got {ex['image'].shape[1:]}")
    if keys is not None:
        missing = [k for k in keys if k not in ex]
        if missing:
            raise ValueError(f"metadata keys {missing} are not in the source's examples (it has {sorted(ex)})")
        ex = {k: ex[k] for k in ["image", *keys] if k in ex}
    bad = [k for k, v in ex.items() if v.dtype == object or v.dtype.kind in "USO"]
    if bad:
        raise ValueError(f"metadata {bad} are not numeric arrays; pass keys= to select numeric ones")
    return ex


def _steps_and_end(
    index: StreamIndex, start_step: int, num_steps: int | None, num_epochs: float | None
) -> tuple[int, int | None]:
    """Stop step (exclusive) and the number of valid positions (``None``: endless)."""
    if int(start_step) < 0:
        raise ValueError(f"start_step must be non-negative, got {start_step}")
    end_position = None
    stop = None
    if num_epochs is not None:
        if num_epochs <= 0:
            raise ValueError(f"num_epochs must be positive, got {num_epochs}")
        end_position = int(math.ceil(num_epochs * index.num_examples))
        stop = -(-end_position // index.global_batch_size)
    if num_steps is not None:
        if int(num_steps) < 0:
            raise ValueError(f"num_steps must be non-negative, got {num_steps}")
        s = int(start_step) + int(num_steps)
        stop = s if stop is None else min(stop, s)
    return stop, end_position


class HostBatches:
    """The batches of a builder without ``tf.data``: ``fetch(step)`` called in the consumer's thread.

    What ``engine="numpy"`` returns (streams without augmentation: gathering rows of an in-memory
    source costs less than ``tf.data``'s per-batch scheduling, and TensorFlow is not imported).
    The batches equal the ``tf.data`` ones entry for entry; :func:`as_numpy` iterates both.
    """

    def __init__(self, fetch, spec: dict, start_step: int, stop_step: int | None, squeeze: bool):
        self._fetch, self._spec, self._squeeze = fetch, spec, squeeze
        self._start, self._stop = int(start_step), stop_step

    def as_numpy_iterator(self) -> Iterator[dict[str, np.ndarray]]:
        step = self._start
        while self._stop is None or step < self._stop:
            out = self._fetch(step)
            batch = {k: np.ascontiguousarray(out[k], dtype=dtype) for k, (dtype, _) in self._spec.items()}
            if self._squeeze:
                batch["image"] = batch["image"][:, 0]
            yield batch
            step += 1


def _build(
    fetch: Callable[[int], dict[str, np.ndarray]],
    spec: dict[str, tuple[np.dtype, tuple]],
    members: int,
    augment: Augment | None,
    aug_key: int,
    start_step: int,
    stop_step: int | None,
    squeeze: bool,
    batch_size: int,
    engine: str = "tf.data",
):
    """Common plumbing: steps -> numpy fetch -> per-example augment -> batch, with ``tf.data`` or, for
    ``engine="numpy"`` (no augmentation), a plain iterator of the same batches (:class:`HostBatches`)."""
    if engine == "numpy":
        if augment is not None:
            raise ValueError("engine='numpy' builds batches without augmentation; augment needs engine='tf.data'")
        return HostBatches(fetch, spec, start_step, stop_step, squeeze)
    if engine != "tf.data":
        raise ValueError(f"engine must be 'tf.data' or 'numpy', got {engine!r}")
    from gensim_jax.data._tf import tf

    keys = list(spec)
    dtypes = [tf.as_dtype(spec[k][0]) for k in keys]

    def fetch_np(step):
        out = fetch(int(step))
        return [np.ascontiguousarray(out[k], dtype=spec[k][0]) for k in keys]

    def fetch_tf(step):
        vals = tf.numpy_function(fetch_np, [step], dtypes, stateful=False)
        return {k: tf.ensure_shape(v, (batch_size,) + spec[k][1]) for k, v in zip(keys, vals)}

    stop = stop_step if stop_step is not None else np.iinfo(np.int64).max
    ds = tf.data.Dataset.range(int(start_step), int(stop))
    ds = ds.map(fetch_tf, num_parallel_calls=_AUTOTUNE, deterministic=True)

    if augment is not None:
        key = tf.constant(aug_key, tf.int64)

        def aug_one(ex):
            seed = tf.stack([key, ex["position"]])
            seeds = tf.random.experimental.stateless_split(seed, num=members)
            views = [augment(ex["image"][m], seeds[m]) for m in range(members)]
            ex = dict(ex)
            ex["image"] = tf.stack(views)
            return ex

        ds = ds.unbatch().map(aug_one, num_parallel_calls=_AUTOTUNE, deterministic=True)
        ds = ds.batch(batch_size, drop_remainder=True)
    if squeeze:

        def sq(ex):
            ex = dict(ex)
            ex["image"] = tf.squeeze(ex["image"], axis=1)
            return ex

        ds = ds.map(sq, num_parallel_calls=_AUTOTUNE, deterministic=True)
    options = tf.data.Options()
    options.deterministic = True
    return ds.with_options(options).prefetch(_AUTOTUNE)


def _mask(positions: np.ndarray, end_position: int | None) -> np.ndarray:
    if end_position is None:
        return np.ones(positions.shape, bool)
    return positions < end_position


def labelled_batches(
    source: IndexedSource,
    batch_size: int,
    *,
    seed: int,
    keys: Sequence[str] | None = None,
    augment: Augment | None = None,
    shuffle: bool = True,
    start_step: int = 0,
    num_steps: int | None = None,
    num_epochs: float | None = None,
    process_index: int = 0,
    process_count: int = 1,
    engine: str = "tf.data",
):
    """Plain batches of examples with their metadata (supervised training and evaluation).

    Args:
      source: an :class:`~gensim_jax.data.sources.IndexedSource`.
      batch_size: per-host batch ``B``.
      seed: non-negative integer seed of order and augmentation.
      keys: metadata keys to keep (default: all numeric ones of the source).
      augment: optional ``augment(image, seed)`` (e.g. :func:`~gensim_jax.data.augment.simclr_augment`);
        without it images keep the source's dtype.
      shuffle: seeded permutation per epoch (False: sequential order, for evaluation).
      start_step: first step to produce (resume point).
      num_steps: number of steps (None: endless unless ``num_epochs``).
      num_epochs: stop after this many passes; the last batch is padded by wrapping into the
        next epoch and ``mask`` marks the padding False (``shuffle=False, num_epochs=1`` is an
        exact evaluation pass).
      process_index, process_count: this host's slice of the global batch.
      engine: ``"tf.data"``, or ``"numpy"`` (no ``augment``): the same batches from a plain iterator
        (:class:`HostBatches`) built in the consumer's thread, without TensorFlow.

    Returns:
      ``tf.data.Dataset`` (or :class:`HostBatches`) of dicts: ``image (B, H, W, C)``, metadata ``(B, ...)``,
      ``index (B,)``, ``position (B,)``, ``mask (B,)``.

    Example:
      >>> from gensim_jax.data.sources import SyntheticImageSource
      >>> ds = labelled_batches(SyntheticImageSource(10, (8, 8, 1)), 4, seed=0, num_steps=2)
      >>> [b["image"].shape for b in as_numpy(ds)]
      [(4, 8, 8, 1), (4, 8, 8, 1)]
    """
    first = _probe(source, keys)
    keys = [k for k in first if k != "image"]
    index = StreamIndex(
        len(source), batch_size, seed=seed, shuffle=shuffle, process_index=process_index, process_count=process_count
    )
    stop, end_position = _steps_and_end(index, start_step, num_steps, num_epochs)
    spec = {"image": (first["image"].dtype, (1,) + first["image"].shape[1:])}
    spec.update({k: (first[k].dtype, first[k].shape[1:]) for k in keys})
    spec.update({"index": (np.int64, ()), "position": (np.int64, ()), "mask": (np.bool_, ())})

    def fetch(step):
        pos = index.positions(step)
        idx = index.indices(pos)
        ex = gather(source, idx)
        out = {"image": ex["image"][:, None]}
        out.update({k: ex[k] for k in keys})
        out.update(index=idx, position=pos, mask=_mask(pos, end_position))
        return out

    return _build(
        fetch,
        spec,
        1,
        augment,
        derive_key(seed, _AUG_TAG),
        start_step,
        stop,
        squeeze=True,
        batch_size=index.batch_size,
        engine=engine,
    )


def view_batches(
    source: IndexedSource,
    batch_size: int,
    augment: Augment,
    *,
    seed: int,
    num_views: int = 2,
    keys: Sequence[str] | None = None,
    start_step: int = 0,
    num_steps: int | None = None,
    process_index: int = 0,
    process_count: int = 1,
):
    """SimCLR batches: ``num_views`` independent augmentations of each example (Chen et al. 2020).

    Args:
      source: an indexed source.
      batch_size: per-host batch ``B`` (examples; the batch holds ``B * num_views`` images).
      augment: ``augment(image, seed)``, e.g. ``simclr_augment((224, 224), grayscale_p=0.2)``.
      seed: integer seed.
      num_views: views per example (>= 1).
      keys, start_step, num_steps, process_index, process_count: as in :func:`labelled_batches`.

    Returns:
      Dataset of dicts: ``image (B, V, h, w, C)`` float32, metadata ``(B, ...)``, ``index``,
      ``position``, ``mask``.
    """
    if augment is None:
        raise ValueError("view_batches needs an augment function")
    if int(num_views) < 1:
        raise ValueError(f"num_views must be >= 1, got {num_views}")
    first = _probe(source, keys)
    keys = [k for k in first if k != "image"]
    index = StreamIndex(len(source), batch_size, seed=seed, process_index=process_index, process_count=process_count)
    stop, _ = _steps_and_end(index, start_step, num_steps, None)
    spec = {"image": (first["image"].dtype, (num_views,) + first["image"].shape[1:])}
    spec.update({k: (first[k].dtype, first[k].shape[1:]) for k in keys})
    spec.update({"index": (np.int64, ()), "position": (np.int64, ()), "mask": (np.bool_, ())})

    def fetch(step):
        pos = index.positions(step)
        idx = index.indices(pos)
        ex = gather(source, idx)
        img = np.broadcast_to(ex["image"][:, None], (len(idx), num_views) + ex["image"].shape[1:])
        out = {"image": img}
        out.update({k: ex[k] for k in keys})
        out.update(index=idx, position=pos, mask=np.ones(pos.shape, bool))
        return out

    return _build(
        fetch,
        spec,
        int(num_views),
        augment,
        derive_key(seed, _AUG_TAG),
        start_step,
        stop,
        squeeze=False,
        batch_size=index.batch_size,
    )


def _member_batches(
    source,
    batch_size,
    seed,
    keys,
    augment,
    start_step,
    num_steps,
    process_index,
    process_count,
    members: int,
    choose,
    engine: str = "tf.data",
):
    first = _probe(source, keys)
    keys = [k for k in first if k != "image"]
    index = StreamIndex(len(source), batch_size, seed=seed, process_index=process_index, process_count=process_count)
    stop, _ = _steps_and_end(index, start_step, num_steps, None)
    spec = {"image": (first["image"].dtype, (members,) + first["image"].shape[1:])}
    spec.update({k: (first[k].dtype, (members,) + first[k].shape[1:]) for k in keys})
    spec.update({"index": (np.int64, (members,)), "position": (np.int64, ()), "mask": (np.bool_, ())})

    def fetch(step):
        pos = index.positions(step)
        idx = choose(pos, index.indices(pos))  # (B, members)
        ex = gather(source, idx.reshape(-1))
        b = len(pos)
        out = {k: ex[k].reshape((b, members) + ex[k].shape[1:]) for k in ["image", *keys]}
        out.update(index=idx, position=pos, mask=np.ones(pos.shape, bool))
        return out

    return _build(
        fetch,
        spec,
        members,
        augment,
        derive_key(seed, _AUG_TAG),
        start_step,
        stop,
        squeeze=False,
        batch_size=index.batch_size,
        engine=engine,
    )


def pair_batches(
    source: IndexedSource,
    batch_size: int,
    *,
    seed: int,
    group_key: str | None = None,
    same_fraction: float = 0.0,
    keys: Sequence[str] | None = None,
    augment: Augment | None = None,
    start_step: int = 0,
    num_steps: int | None = None,
    process_index: int = 0,
    process_count: int = 1,
    groups: GroupIndex | None = None,
):
    """Pairs ``(x_1, x_2)`` with both examples' metadata, for pairwise GenSim targets (paper Eq. 2).

    ``x_1`` follows the seeded epoch order; ``x_2`` is, with probability ``same_fraction``, another
    member of ``x_1``'s group (metadata ``group_key``), otherwise an example drawn uniformly from
    the whole source. Pairs with a known closed-form similarity are then regressed on (Eq. 2);
    ``same_fraction > 0`` over-represents the rare high-similarity pairs.

    Args:
      source: an indexed source.
      batch_size: per-host number of pairs ``B``.
      seed: integer seed.
      group_key: metadata key of the group id (needed when ``same_fraction > 0``).
      same_fraction: probability in ``[0, 1]`` that the partner shares the group.
      keys, augment, start_step, num_steps, process_index, process_count: as in
        :func:`labelled_batches`.
      groups: a prebuilt :class:`~gensim_jax.data.sources.GroupIndex` (else built from ``group_key``).

    Returns:
      Dataset of dicts: ``image (B, 2, H, W, C)``, metadata ``(B, 2, ...)``, ``index (B, 2)``,
      ``position``, ``mask``.
    """
    if not 0.0 <= same_fraction <= 1.0:
        raise ValueError(f"same_fraction must be in [0, 1], got {same_fraction}")
    if same_fraction > 0 and groups is None:
        if group_key is None:
            raise ValueError("same_fraction > 0 needs group_key (or groups)")
        groups = group_index(source, group_key)
    n = len(source)
    key = derive_key(seed, _PAIR_TAG)

    def choose(pos, first):
        u_other = stateless_uniform(key, _PAIR_OTHER, pos)
        second = np.minimum(np.floor(u_other * n).astype(np.int64), n - 1)
        if same_fraction > 0:
            same = stateless_uniform(key, _PAIR_SAME, pos) < same_fraction
            mate = groups.sample_member(
                stateless_uniform(key, _PAIR_MEMBER, pos), groups.group_of[first], exclude=first
            )
            second = np.where(same, mate, second)
        return np.stack([first, second], axis=1)

    return _member_batches(
        source, batch_size, seed, keys, augment, start_step, num_steps, process_index, process_count, 2, choose
    )


def triplet_batches(
    source: IndexedSource,
    batch_size: int,
    *,
    seed: int,
    group_key: str,
    prior=None,
    distinct_negative: bool = True,
    keys: Sequence[str] | None = None,
    augment: Augment | None = None,
    start_step: int = 0,
    num_steps: int | None = None,
    process_index: int = 0,
    process_count: int = 1,
    groups: GroupIndex | None = None,
    engine: str = "tf.data",
):
    """Triplets ``(x, x+, x-)`` sampled from generative metadata (paper Eq. A3).

    Eq. A3: ``theta+, theta- ~ p(theta)``; ``x, x+ ~ p(x | theta+)``; ``x- ~ p(x | theta-)``. Here
    ``theta`` is the group id in metadata ``group_key`` (class, program id, mixture component).
    The anchor ``x`` follows the seeded epoch order (so ``theta+`` has the source's empirical
    distribution), ``x+`` is a uniformly drawn *other* member of its group (the anchor itself
    only for singleton groups), ``theta-`` is drawn from ``prior`` -- restricted to groups other
    than ``theta+`` when ``distinct_negative`` (the usual "different distribution"), or the
    literal i.i.d. draw of Eq. A3 otherwise -- and ``x-`` uniformly from that group.

    Args:
      source: an indexed source.
      batch_size: per-host number of triplets ``B``.
      seed: integer seed.
      group_key: metadata key of the group id (one scalar per example).
      prior: ``(G,)`` prior over the sorted distinct group ids (default: their frequencies).
      distinct_negative: draw ``theta- != theta+``.
      keys, augment, start_step, num_steps, process_index, process_count, engine: as in
        :func:`labelled_batches`.
      groups: a prebuilt :class:`~gensim_jax.data.sources.GroupIndex` (overrides ``prior``).

    Returns:
      Dataset of dicts: ``image (B, 3, H, W, C)`` (anchor, positive, negative), metadata
      ``(B, 3, ...)``, ``index (B, 3)``, ``position``, ``mask``.
    """
    if groups is None:
        groups = group_index(source, group_key, prior=prior)
    if groups.members.size != len(source):
        raise ValueError(f"groups index {groups.members.size} examples but the source has {len(source)}")
    if distinct_negative and np.count_nonzero(groups.prior) < 2:
        raise ValueError(
            "distinct_negative needs at least two groups with positive prior mass, "
            f"got {np.count_nonzero(groups.prior)}"
        )
    key = derive_key(seed, _TRIPLET_TAG)

    def choose(pos, anchor):
        g = groups.group_of[anchor]
        u_pos, u, u_neg = stateless_uniforms(key, (_TRI_POS, _TRI_NEGGROUP, _TRI_NEG), pos)  # only this host's rows
        positive = groups.sample_member(u_pos, g, exclude=anchor)
        neg_group = groups.sample_other_group(u, g) if distinct_negative else groups.sample_group(u)
        negative = groups.sample_member(u_neg, neg_group)
        return np.stack([anchor, positive, negative], axis=1)

    return _member_batches(
        source, batch_size, seed, keys, augment, start_step, num_steps, process_index, process_count, 3, choose, engine
    )
