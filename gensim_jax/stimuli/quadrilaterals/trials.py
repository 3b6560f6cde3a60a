"""Oddball trials and training stimuli of the quadrilateral task, and the split between them.

A trial holds 5 views of a reference shape and 1 of a deviant at the human task's rotations and
scalings (:func:`sample_oddball_trials`; the fixed seeded test set :func:`oddball_test_set`); training
draws continuous rotations and scalings (:func:`sample_training_stimuli`, :func:`training_batches`)
that never come near a test combination (:func:`is_held_out`), so training sees the test's shapes,
never its images (paper Section 3.1 and Appendix L).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Iterator, Sequence

import numpy as np

from gensim_jax.stimuli._random import as_generator as _rng
from gensim_jax.stimuli.quadrilaterals.render import DEFAULT_IMAGE_SIZE, _check_size, render_quadrilaterals
from gensim_jax.stimuli.quadrilaterals.shapes import (
    SHAPE_NAMES,
    TRIAL_ROTATIONS_DEG,
    TRIAL_SCALES,
    TRIAL_SCALES_FRENCH_ADULTS_1,
    _variant_table,
    geometric_features,
    shape_index,
    variant_index,
)

__all__ = [
    "ROTATION_MARGIN_DEG",
    "SCALE_MARGIN",
    "OddballTrials",
    "TrainingStimuli",
    "is_held_out",
    "oddball_test_set",
    "sample_oddball_trials",
    "sample_training_stimuli",
    "training_batches",
]

#: Training rotations closer than this (degrees, modulo 90) to a trial rotation ...
ROTATION_MARGIN_DEG = 2.5
#: ... AND closer than this to a trial scaling are held out of training (see :func:`is_held_out`).
SCALE_MARGIN = 0.0125


# ----------------------------------------------------------------------------------------------
# Test/training split and samplers
# ----------------------------------------------------------------------------------------------


def _shape_indices(shapes) -> np.ndarray:
    if shapes is None:
        return np.arange(len(SHAPE_NAMES))
    idx = np.array([shape_index(s) for s in shapes], dtype=np.int64)
    if idx.size == 0:
        raise ValueError("shapes must not be empty")
    return idx


def is_held_out(
    rotation_deg,
    scale,
    rotation_margin_deg: float = ROTATION_MARGIN_DEG,
    scale_margin: float = SCALE_MARGIN,
    rotations_deg: Sequence[float] = TRIAL_ROTATIONS_DEG,
    scales: Sequence[float] = TRIAL_SCALES + TRIAL_SCALES_FRENCH_ADULTS_1,
) -> np.ndarray:
    """Whether a (rotation, scaling) lies in the guard box of a test-trial grid point.

    The held-out region is the union over the trial grid ``rotations_deg x scales`` of the boxes
    ``|rotation - r| < rotation_margin_deg (modulo 90 deg)`` and ``|scale - s| < scale_margin``.
    Rotations are compared modulo 90 degrees because the rotational symmetry group of any
    quadrilateral is a subgroup of C4: two rotations of the same polygon give the same image only
    if they differ by a multiple of 90 (square) or 180 degrees. :func:`sample_training_stimuli`
    rejects every draw for which this is True, and every test item lies at a grid point (inside
    its own box), so no training (shape, variant, rotation, scale) can equal a test one -- for any
    shape and variant -- and every training image differs from every test image by at least the
    margins in rotation or scale. By default the grid holds both published scale sets.

    Args:
      rotation_deg: degrees, any shape.
      scale: broadcastable with ``rotation_deg``.
      rotation_margin_deg, scale_margin: guard half-widths, >= 0.
      rotations_deg, scales: the trial grid.

    Returns:
      bool array of the broadcast shape.
    """
    if not rotation_margin_deg >= 0 or not scale_margin >= 0:
        raise ValueError(
            f"margins must be >= 0, got rotation_margin_deg={rotation_margin_deg}, scale_margin={scale_margin}"
        )
    rot = np.asarray(rotation_deg, dtype=np.float64)[..., None]
    sc = np.asarray(scale, dtype=np.float64)[..., None]
    grid_r = np.asarray(rotations_deg, dtype=np.float64)
    grid_s = np.asarray(scales, dtype=np.float64)
    dr = np.abs(np.mod(rot - grid_r + 45.0, 90.0) - 45.0)
    near_r = np.any(dr < rotation_margin_deg, axis=-1)
    near_s = np.any(np.abs(sc - grid_s) < scale_margin, axis=-1)
    return near_r & near_s


@dataclasses.dataclass(frozen=True)
class OddballTrials:
    """A set of oddball trials: 6 items each, one of them a deviant (Sable-Meyer et al., 2021).

    Attributes:
      shape: ``(T,)`` int shape index (:data:`SHAPE_NAMES`).
      deviant: ``(T,)`` int in 1..4, which deviant is the oddball.
      deviant_position: ``(T,)`` int in 0..5, the oddball's item position.
      variant: ``(T, 6)`` int, 0 for reference items and ``deviant`` at the oddball's position.
      rotation_deg: ``(T, 6)`` float rotations (a permutation of the 6 trial values per trial).
      scale: ``(T, 6)`` float scalings (a permutation of the 6 trial values per trial).
    """

    shape: np.ndarray
    deviant: np.ndarray
    deviant_position: np.ndarray
    variant: np.ndarray
    rotation_deg: np.ndarray
    scale: np.ndarray

    def __len__(self) -> int:
        return int(self.shape.shape[0])

    def vertices(self) -> np.ndarray:
        """``(T, 6, 4, 2)`` shape-unit vertices of every item."""
        return _variant_table()[self.shape[:, None], self.variant]

    def features(self) -> np.ndarray:
        """``(T, 6, 22)`` uint8 geometric features of every item (:func:`geometric_features`)."""
        return geometric_features(self.vertices())

    def images(self, size: int = DEFAULT_IMAGE_SIZE) -> np.ndarray:
        """``(T, 6, size, size)`` float32 renders of every item (:func:`render_quadrilaterals`)."""
        size = _check_size(size)
        t = len(self)
        flat = render_quadrilaterals(
            self.vertices().reshape(t * 6, 4, 2), self.rotation_deg.reshape(-1), self.scale.reshape(-1), size
        )
        return flat.reshape(t, 6, size, size)

    def combinations(self) -> np.ndarray:
        """``(T * 6, 4)`` float array of the items' (shape, variant, rotation_deg, scale)."""
        return np.stack(
            [
                np.repeat(self.shape, 6).astype(np.float64),
                self.variant.reshape(-1).astype(np.float64),
                self.rotation_deg.reshape(-1),
                self.scale.reshape(-1),
            ],
            axis=-1,
        )


def sample_oddball_trials(
    rng,
    trials_per_condition: int = 1,
    shapes: Sequence[str | int] | None = None,
    rotations_deg: Sequence[float] = TRIAL_ROTATIONS_DEG,
    scales: Sequence[float] = TRIAL_SCALES,
) -> OddballTrials:
    """Sample oddball trials as in the human task (paper Section 3.1; Sable-Meyer et al., 2021).

    For every (shape, deviant 1..4) condition, ``trials_per_condition`` trials. Each trial shows 6
    items: 5 references of the shape and 1 deviant at a uniformly drawn position; the 6 items get a
    random permutation of the 6 rotations and an independent random permutation of the 6
    scalings, as in the behavioural files. Trials are ordered by shape, then deviant.

    Args:
      rng: numpy ``Generator`` or int seed.
      trials_per_condition: >= 1.
      shapes: subset of shapes (names or indices); default all 11.
      rotations_deg, scales: the 6 values each (the trial grid).

    Returns:
      :class:`OddballTrials` with ``T = len(shapes) * 4 * trials_per_condition``.
    """
    gen = _rng(rng)
    if (
        isinstance(trials_per_condition, bool)
        or not isinstance(trials_per_condition, (int, np.integer))
        or trials_per_condition < 1
    ):
        raise ValueError(f"trials_per_condition must be a positive integer, got {trials_per_condition!r}")
    rots = np.asarray(rotations_deg, dtype=np.float64)
    scs = np.asarray(scales, dtype=np.float64)
    if rots.shape != (6,) or scs.shape != (6,):
        raise ValueError(f"rotations_deg and scales need 6 values each, got {rots.shape} and {scs.shape}")
    if not np.all(scs > 0) or not np.all(np.isfinite(rots)):
        raise ValueError("scales must be > 0 and rotations finite")
    idx = _shape_indices(shapes)
    shape = np.repeat(idx, 4 * trials_per_condition)
    deviant = np.tile(np.repeat(np.arange(1, 5), trials_per_condition), idx.size)
    t = shape.size
    position = gen.integers(0, 6, size=t)
    rot = rots[gen.permuted(np.tile(np.arange(6), (t, 1)), axis=1)]
    sc = scs[gen.permuted(np.tile(np.arange(6), (t, 1)), axis=1)]
    variant = np.zeros((t, 6), dtype=np.int64)
    variant[np.arange(t), position] = deviant
    return OddballTrials(shape, deviant, position, variant, rot, sc)


def oddball_test_set(
    seed: int = 0,
    trials_per_condition: int = 10,
    scales: Sequence[float] = TRIAL_SCALES,
) -> OddballTrials:
    """The fixed, seeded oddball test set (all 11 shapes x 4 deviants x ``trials_per_condition``).

    Every item sits on the trial grid ``TRIAL_ROTATIONS_DEG x scales``, which
    :func:`sample_training_stimuli` never produces (see :func:`is_held_out`).

    Args:
      seed: int seed of ``numpy.random.default_rng``.
      trials_per_condition: trials per (shape, deviant); default 10 (440 trials, 2640 images).
      scales: :data:`TRIAL_SCALES` (default) or :data:`TRIAL_SCALES_FRENCH_ADULTS_1`.

    Returns:
      :class:`OddballTrials`.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    return sample_oddball_trials(
        np.random.default_rng(int(seed)), trials_per_condition, None, TRIAL_ROTATIONS_DEG, scales
    )


@dataclasses.dataclass(frozen=True)
class TrainingStimuli:
    """Training stimuli with their generative metadata.

    Attributes:
      shape: ``(N,)`` int shape index (the 11-way class label).
      variant: ``(N,)`` int, 0 = reference, 1..4 = deviant.
      rotation_deg: ``(N,)`` float.
      scale: ``(N,)`` float.
      features: ``(N, 22)`` uint8 geometric features (:func:`geometric_features`).
    """

    shape: np.ndarray
    variant: np.ndarray
    rotation_deg: np.ndarray
    scale: np.ndarray
    features: np.ndarray

    def __len__(self) -> int:
        return int(self.shape.shape[0])

    def vertices(self) -> np.ndarray:
        """``(N, 4, 2)`` shape-unit vertices."""
        return _variant_table()[self.shape, self.variant]

    def images(self, size: int = DEFAULT_IMAGE_SIZE) -> np.ndarray:
        """``(N, size, size)`` float32 renders (:func:`render_quadrilaterals`)."""
        return render_quadrilaterals(self.vertices(), self.rotation_deg, self.scale, size)


def sample_training_stimuli(
    rng,
    n: int,
    shapes: Sequence[str | int] | None = None,
    variants: Sequence[str | int] = ("reference",),
    rotation_range_deg: tuple[float, float] = (-30.0, 30.0),
    scale_range: tuple[float, float] = (0.85, 1.15),
    rotation_margin_deg: float = ROTATION_MARGIN_DEG,
    scale_margin: float = SCALE_MARGIN,
) -> TrainingStimuli:
    """Sample training quadrilaterals with continuous rotations/scalings, test grid held out.

    Shape and variant are uniform over ``shapes`` x ``variants``; rotation and scale are uniform
    over the ranges, redrawn (rejection sampling) while :func:`is_held_out` is True, so the
    sampler never yields a (rotation, scale) within the margins of a trial-grid point -- the
    images of :func:`oddball_test_set` are held out of training (paper Appendix L). The paper
    trained on the 11 reference categories, hence the default ``variants``.

    Args:
      rng: numpy ``Generator`` or int seed.
      n: number of stimuli, >= 0.
      shapes: subset of shapes; default all 11.
      variants: subset of ``0..4`` / :data:`VARIANT_NAMES`.
      rotation_range_deg: ``(low, high)`` degrees, low < high.
      scale_range: ``(low, high)``, 0 < low < high.
      rotation_margin_deg, scale_margin: guard half-widths of :func:`is_held_out`.

    Returns:
      :class:`TrainingStimuli` of length ``n`` (features included).

    Raises:
      ValueError: bad ranges, unknown shapes/variants, or a range entirely held out.
    """
    gen = _rng(rng)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    idx = _shape_indices(shapes)
    var = np.array([variant_index(v) for v in variants], dtype=np.int64)
    if var.size == 0:
        raise ValueError("variants must not be empty")
    r_lo, r_hi = (float(x) for x in rotation_range_deg)
    s_lo, s_hi = (float(x) for x in scale_range)
    if not (np.isfinite(r_lo) and np.isfinite(r_hi) and r_lo < r_hi):
        raise ValueError(f"rotation_range_deg must be finite with low < high, got {rotation_range_deg}")
    if not (0 < s_lo < s_hi and np.isfinite(s_hi)):
        raise ValueError(f"scale_range must satisfy 0 < low < high, got {scale_range}")
    shape = idx[gen.integers(0, idx.size, size=n)]
    variant = var[gen.integers(0, var.size, size=n)]
    rot = np.empty(n)
    sc = np.empty(n)
    filled = 0
    draws = 0
    while filled < n:
        m = max(2 * (n - filled), 64)
        r = gen.uniform(r_lo, r_hi, size=m)
        s = gen.uniform(s_lo, s_hi, size=m)
        ok = ~is_held_out(r, s, rotation_margin_deg, scale_margin)
        k = min(int(ok.sum()), n - filled)
        rot[filled : filled + k] = r[ok][:k]
        sc[filled : filled + k] = s[ok][:k]
        filled += k
        draws += m
        if filled == 0 and draws >= 100_000:
            raise ValueError(
                f"rotation_range_deg={rotation_range_deg} x scale_range={scale_range} lies (almost) "
                "entirely in the held-out test region; widen the ranges or reduce the margins"
            )
    feats = _variant_features()[shape, variant]
    return TrainingStimuli(shape, variant, rot, sc, feats)


@functools.lru_cache(maxsize=1)
def _variant_features() -> np.ndarray:
    f = geometric_features(_variant_table())
    f.setflags(write=False)
    return f


def training_batches(
    seed: int,
    batch_size: int,
    size: int = DEFAULT_IMAGE_SIZE,
    **sampler_kwargs,
) -> Iterator[dict[str, np.ndarray]]:
    """Endless stream of rendered training batches with their generative metadata.

    Each batch is ``{"image": (B, size, size) float32, "features": (B, 22) uint8,
    "shape": (B,), "variant": (B,), "rotation_deg": (B,), "scale": (B,)}``, drawn by
    :func:`sample_training_stimuli` from ``numpy.random.default_rng(seed)``; the stream is a
    deterministic function of the arguments.

    Args:
      seed: int seed.
      batch_size: >= 1.
      size: image side.
      **sampler_kwargs: forwarded to :func:`sample_training_stimuli`.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    size = _check_size(size)
    gen = _rng(seed)
    while True:
        s = sample_training_stimuli(gen, batch_size, **sampler_kwargs)
        yield {
            "image": s.images(size),
            "features": s.features,
            "shape": s.shape,
            "variant": s.variant,
            "rotation_deg": s.rotation_deg,
            "scale": s.scale,
        }
