"""Quadrilateral stimuli of the geometric oddball task (Sable-Meyer et al., 2021).

This package rebuilds the stimuli of the GenSim paper's shape-regularity experiment (paper
Section 3.1 and Appendix L, which reuse the oddball task of Sable-Meyer et al., 2021):

* the 11 reference quadrilaterals (square ... random), with vertex coordinates shipped as package
  data in ``gensim_jax/assets/sable_meyer_2021_quadrilaterals.json`` (source: Sable-Meyer et al.,
  2021, PNAS 118(16) e2023123118, transcribed from the authors' materials), and their 4 deviants
  made by moving the vertex diagonal to the origin (:func:`deviant_vertices`);
* the 22 binary geometric features of Appendix L (4 right angles, 6 parallel pairs of sides,
  6 equal-length pairs, 6 equal-angle pairs) computed from the vertices
  (:func:`geometric_features`);
* an exact-area anti-aliased polygon rasteriser in pure numpy (:func:`rasterize_polygons`) and the
  stimulus renderer (:func:`render_quadrilaterals`) that reproduces the authors' 224 x 224 PNGs;
* oddball trials (5 references + 1 deviant, rotations/scalings of the human task) with a fixed
  seeded test set (:func:`oddball_test_set`), and a training sampler with continuous rotations and
  scalings that provably never produces a held-out test combination
  (:func:`sample_training_stimuli`, :func:`is_held_out`).

Coordinate conventions
    Shape coordinates are in "shape units" with x to the right and **y down**, exactly as the
    original stimuli draw them (so a plot with y up shows the shapes mirrored). A shape is
    rendered centred on the canvas at its vertex mean; at scale 1 the canvas spans
    :data:`CANVAS_UNITS` = 3 shape units (224 / 3 pixels per unit at the default size). A positive
    rotation angle turns the shape **clockwise on screen** (the standard rotation matrix applied in
    y-down coordinates); this is the convention of the reference files
    ``geom_<shape>_reference_<i>_<j>.png``, whose ``i = 1..6`` indexes the scalings
    :data:`TRIAL_SCALES` and ``j = 1..6`` the rotations :data:`TRIAL_ROTATIONS_DEG`.

Everything random takes an explicit ``numpy.random.Generator`` (or an int seed), so that every
trial set and training stream is reproducible.

The package has three modules, every name importable from here: :mod:`~gensim_jax.stimuli.quadrilaterals.shapes`
(the shapes, their deviants and features), :mod:`~gensim_jax.stimuli.quadrilaterals.render` (the
rasteriser and the renderer) and :mod:`~gensim_jax.stimuli.quadrilaterals.trials` (trials, training
stimuli and the split between them).
"""

from gensim_jax.stimuli.quadrilaterals.render import (
    CANVAS_UNITS,
    DEFAULT_IMAGE_SIZE,
    MIN_IMAGE_SIZE,
    rasterize_polygons,
    render_quadrilaterals,
    render_shape,
    transform_vertices,
)
from gensim_jax.stimuli.quadrilaterals.shapes import (
    ANGLE_TOLERANCE_RAD,
    FEATURE_NAMES,
    FEATURE_PAIRS,
    LENGTH_TOLERANCE,
    SHAPE_NAMES,
    TABLE1_COLUMNS,
    TRIAL_ROTATIONS_DEG,
    TRIAL_SCALES,
    TRIAL_SCALES_FRENCH_ADULTS_1,
    VARIANT_NAMES,
    deviant_vertices,
    geometric_features,
    reference_vertices,
    regularities,
    shape_index,
    variant_index,
    variant_vertices,
)
from gensim_jax.stimuli.quadrilaterals.trials import (
    ROTATION_MARGIN_DEG,
    SCALE_MARGIN,
    OddballTrials,
    TrainingStimuli,
    is_held_out,
    oddball_test_set,
    sample_oddball_trials,
    sample_training_stimuli,
    training_batches,
)

__all__ = [
    "ANGLE_TOLERANCE_RAD",
    "CANVAS_UNITS",
    "DEFAULT_IMAGE_SIZE",
    "FEATURE_NAMES",
    "FEATURE_PAIRS",
    "LENGTH_TOLERANCE",
    "MIN_IMAGE_SIZE",
    "ROTATION_MARGIN_DEG",
    "SCALE_MARGIN",
    "SHAPE_NAMES",
    "TABLE1_COLUMNS",
    "TRIAL_ROTATIONS_DEG",
    "TRIAL_SCALES",
    "TRIAL_SCALES_FRENCH_ADULTS_1",
    "VARIANT_NAMES",
    "OddballTrials",
    "TrainingStimuli",
    "deviant_vertices",
    "geometric_features",
    "is_held_out",
    "oddball_test_set",
    "rasterize_polygons",
    "reference_vertices",
    "regularities",
    "render_quadrilaterals",
    "render_shape",
    "sample_oddball_trials",
    "sample_training_stimuli",
    "shape_index",
    "training_batches",
    "transform_vertices",
    "variant_index",
    "variant_vertices",
]
