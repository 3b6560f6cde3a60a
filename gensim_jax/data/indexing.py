"""Stateless stream indexing: which example (and which random numbers) a step sees.

The global stream is a sequence of *positions* ``p = 0, 1, 2, ...``. With ``P`` hosts and a
per-host batch of ``b``, step ``s`` covers the global positions ``[s P b, (s + 1) P b)`` and host
``h`` reads ``s P b + h b + [0, b)``. Position ``p`` lies in epoch ``e = p // N`` and maps to
example ``perm_e[p % N]``, where ``perm_e`` is a permutation seeded by ``(seed, e)``. Every
random number a pipeline draws for position ``p`` comes from :func:`stateless_uniform` keyed by
``(seed, stream, p)``. Hence the batch of step ``s`` is a pure function of
``(seed, s, b, P, h)``: resuming at step ``k`` costs one permutation of ``N`` indices, not a
replay of ``k`` steps, and the global stream does not depend on how it is sharded (for a fixed
global batch ``P b``). The per-host row arithmetic is :class:`gensim_jax.parallel.HostShard`'s.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from gensim_jax.parallel import HostShard

__all__ = ["derive_key", "stateless_uniform", "stateless_uniforms", "StreamIndex"]

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mixer."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


def derive_key(seed: int, *tags: int) -> int:
    """A 31-bit key derived from ``seed`` and integer ``tags`` (for TF stateless seeds).

    Example:
      >>> derive_key(0, 1) != derive_key(0, 2)
      True
    """
    if int(seed) < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    state = np.random.SeedSequence([int(seed), *[int(t) for t in tags]]).generate_state(1, np.uint32)
    return int(state[0] >> np.uint32(1))


def stateless_uniform(key: int, stream: int, positions) -> np.ndarray:
    """Uniforms in ``[0, 1)`` that depend only on ``(key, stream, position)``.

    Args:
      key: non-negative integer key (e.g. from :func:`derive_key`).
      stream: small non-negative integer naming what the number is for.
      positions: integer array of stream positions (any shape).

    Returns:
      float64 array of the shape of ``positions``; 53 random bits each.

    Example:
      >>> u = stateless_uniform(3, 0, np.arange(4))
      >>> bool((u == stateless_uniform(3, 0, np.arange(4))).all()), bool(((u >= 0) & (u < 1)).all())
      (True, True)
    """
    return stateless_uniforms(key, (stream,), positions)[0]


def stateless_uniforms(key: int, streams, positions) -> np.ndarray:
    """:func:`stateless_uniform` of several ``streams`` at once: ``(len(streams),) + positions.shape``.

    Row ``i`` equals ``stateless_uniform(key, streams[i], positions)`` bit for bit (the same elementwise
    operations, broadcast over the streams); one call costs a fixed number of array operations
    however many streams a batch draws from.

    Example:
      >>> u = stateless_uniforms(3, (0, 1), np.arange(4))
      >>> u.shape, bool((u[1] == stateless_uniform(3, 1, np.arange(4))).all())
      ((2, 4), True)
    """
    positions = np.asarray(positions)
    if not np.issubdtype(positions.dtype, np.integer):
        raise ValueError(f"positions must be integers, got dtype {positions.dtype}")
    streams = tuple(int(t) for t in streams)
    if int(key) < 0 or any(t < 0 for t in streams):
        raise ValueError(
            f"key and stream must be non-negative, got {key}, {streams if len(streams) > 1 else streams[0]}"
        )
    k = _stream_keys(int(key), streams).reshape((len(streams),) + (1,) * positions.ndim)
    x = _splitmix64(positions.astype(np.uint64)[None] ^ k)
    x = _splitmix64(x + k)
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / 2.0**53)


@functools.lru_cache(maxsize=256)
def _stream_keys(key: int, streams: tuple) -> np.ndarray:
    """``(S,)`` uint64: the mixed ``(key, stream)`` constant of each stream (the same every batch: cached)."""
    k = np.array([_splitmix64(np.uint64(key) * np.uint64(1_000_003) + np.uint64(t)) for t in streams], np.uint64)
    k.flags.writeable = False
    return k


class StreamIndex:
    """Maps steps to stream positions and positions to example indices (see module docstring).

    Args:
      num_examples: dataset size ``N`` (> 0).
      batch_size: per-host batch ``b`` (> 0).
      seed: non-negative integer seed.
      shuffle: if False, ``perm_e`` is the identity (evaluation order).
      process_index, process_count: this host and the number of hosts.

    Example:
      >>> idx = StreamIndex(10, 4, seed=0, process_index=1, process_count=2)
      >>> idx.positions(0).tolist(), idx.positions(1).tolist()
      ([4, 5, 6, 7], [12, 13, 14, 15])
    """

    def __init__(
        self,
        num_examples: int,
        batch_size: int,
        *,
        seed: int,
        shuffle: bool = True,
        process_index: int = 0,
        process_count: int = 1,
    ):
        if int(num_examples) <= 0:
            raise ValueError(f"num_examples must be positive, got {num_examples}")
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if int(process_count) <= 0 or not 0 <= int(process_index) < int(process_count):
            raise ValueError(
                f"need 0 <= process_index < process_count, got process_index="
                f"{process_index}, process_count={process_count}"
            )
        if int(seed) < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.num_examples, self.batch_size = int(num_examples), int(batch_size)
        self.seed, self.shuffle = int(seed), bool(shuffle)
        self.process_index, self.process_count = int(process_index), int(process_count)
        self.shard = HostShard(self.process_index, self.process_count, self.batch_size * self.process_count)
        self._perms: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()  # tf.data calls indices() from several threads

    @property
    def global_batch_size(self) -> int:
        return self.shard.global_batch

    def positions(self, step: int) -> np.ndarray:
        """``(b,)`` int64 global stream positions this host reads at ``step`` (:meth:`HostShard.positions`)."""
        return self.shard.positions(step)

    def permutation(self, epoch: int) -> np.ndarray:
        """``perm_e``: the order of epoch ``epoch`` (cached for the two latest epochs)."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError(f"epoch must be non-negative, got {epoch}")
        with self._lock:
            perm = self._perms.get(epoch)
        if perm is None:
            if self.shuffle:
                perm = np.random.default_rng([self.seed, epoch]).permutation(self.num_examples)
            else:
                perm = np.arange(self.num_examples, dtype=np.int64)
            with self._lock:
                while len(self._perms) >= 2:
                    self._perms.pop(min(self._perms))
                self._perms[epoch] = perm
        return perm

    def indices(self, positions) -> np.ndarray:
        """Example index of each position: ``perm_{p // N}[p % N]``."""
        positions = np.asarray(positions, dtype=np.int64)
        epochs, offsets = np.divmod(positions, self.num_examples)
        if positions.size and epochs.min() == epochs.max():  # a batch within one epoch (most): one gather
            return self.permutation(int(epochs.flat[0]))[offsets]
        out = np.empty_like(positions)
        for e in np.unique(epochs):
            sel = epochs == e
            out[sel] = self.permutation(int(e))[offsets[sel]]
        return out
