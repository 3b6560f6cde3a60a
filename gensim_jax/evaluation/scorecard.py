"""The human-alignment report card of any vision encoder (``gensim-jax score``; issue 34).

One call runs the paper's behavioural protocols on an embedding function and puts the model beside
reference rows, every number with a bootstrap interval:

* ``oddball`` -- the quadrilateral oddball test (paper Sec. 3.1, Fig. 2B/2C) on the seeded test set
  of :func:`gensim_jax.evaluation.oddball.test_trials`, read out by
  :func:`~gensim_jax.evaluation.oddball.readout` (graded, the headline, and the paper's
  argmax rule) and summarised by :func:`~gensim_jax.evaluation.oddball.oddball_summary`: Spearman
  ``rho9`` with the irregularity rank, Pearson ``r_human`` (pooled five groups) and ``r_baboon``,
  ``r`` per population. Interval: percentile bootstrap over trials, resampled within each shape,
  the graded read-out's temperature held at its full-data value.
* ``hierarchy`` -- linear decoding of every level of a 2 x 3 x 3 class tree (paper Sec. 3.3, Fig. 4B,
  Appendix N) by :func:`~gensim_jax.evaluation.hierarchy.decode_levels` on the synthetic
  grating images of :func:`gensim_jax.stimuli.hierarchy.hierarchy_images`; ``score`` is
  ``sum_l log(a_l / c_l)`` with uniform chance. Interval: percentile bootstrap over the held-out
  images' cross-validated predictions (the classifiers fixed).
* ``geoclidean`` -- few-shot concept learning (paper Sec. 3.2, Fig. 3C) by
  :func:`~gensim_jax.evaluation.geoclidean.fewshot_evaluate` (prototype scores, per-concept thresholds):
  accuracy and ROC AUC against close and far negatives, on all 37 concepts of the official benchmark
  images (Hsu et al. 2022) when a directory is given, else on the product's own renders of the 37
  programs (:func:`gensim_jax.stimuli.geoclidean.dataset.benchmark_images`, labelled as such).
  Interval: percentile bootstrap over concepts.
* ``odd_one_out`` -- only with a trials CSV (and, to embed them, the images it names): the model's
  likelihood of human odd-one-out choices (paper Sec. 3.3, Fig. 4D) by
  :func:`~gensim_jax.evaluation.odd_one_out.odd_one_out_likelihood` (softmax over cosine
  similarities, ``alpha`` fitted per participant). Interval: percentile bootstrap over participants.

Entry points: :func:`score` (an embedding function ``uint8 images (N, S, S, 3) -> (N, D)``, e.g. in
a notebook), :func:`score_embeddings` (vectors by stimulus id, as :func:`write_stimuli` names them),
:func:`model_embedder` (a registry model, untrained or from a PyTorch checkpoint, read at a layer)
and :func:`~gensim_jax.evaluation.scorecard_exports.score_export` (in
:mod:`~gensim_jax.evaluation.scorecard_exports`, with :func:`~gensim_jax.evaluation.scorecard_exports.score_exports`
for several exports of one model) (an export of ``gensim-jax train``: the protocol its run evaluated is the
call ``gensim-jax eval export`` makes, :func:`gensim_jax.training.runner.evaluate_export`, so its
numbers are the run's exactly). :func:`format_markdown` and :func:`plot_scorecard` present a result.
The protocols' stimuli are built in :mod:`~gensim_jax.evaluation.scorecard_stimuli` (:func:`stimuli` and
:class:`ProtocolStimuli`, importable from here); each protocol's entry (the scorers on embeddings, their
intervals, the separation test, the noise ceilings, the human and documented rows) in
:mod:`~gensim_jax.evaluation.scorecard_protocols`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from gensim_jax.evaluation.scorecard_models import file_sha256, model_embedder, model_layers
from gensim_jax.evaluation.scorecard_protocols import (
    DOCUMENTED_ODDBALL,
    _protocol_entry,
    _strip_draws,
    oddball_from_evaluation,
)
from gensim_jax.evaluation.scorecard_report import (
    ALL_PROTOCOLS,
    GEOCLIDEAN_METRICS,
    OPTIONAL_PROTOCOLS,
    PROTOCOLS,
    format_markdown,
    plot_scorecard,
    scorecard_figure,
)
from gensim_jax.evaluation.scorecard_stimuli import (
    HIERARCHY_CONTENT_SIZE,
    HIERARCHY_NOISE,
    HIERARCHY_PER_CLASS,
    ProtocolStimuli,
    stimuli,
)

__all__ = [
    "ALL_PROTOCOLS",
    "DOCUMENTED_ODDBALL",
    "GEOCLIDEAN_METRICS",
    "OPTIONAL_PROTOCOLS",
    "PROTOCOLS",
    "ProtocolStimuli",
    "file_sha256",
    "format_markdown",
    "model_embedder",
    "model_layers",
    "oddball_from_evaluation",
    "plot_scorecard",
    "scorecard_figure",
    "read_embeddings",
    "score",
    "score_embeddings",
    "stimuli",
    "write_stimuli",
]

# ------------------------------------------------------------------------------------------------
# embedding the stimuli
# ------------------------------------------------------------------------------------------------


def _pixels(images: np.ndarray, size: int = 32) -> np.ndarray:
    """The model-free reference: images area-averaged to ``size x size``, ImageNet-normalised, flattened."""
    from gensim_jax.evaluation.hierarchy import pixel_embedding

    return pixel_embedding(images, min(int(size), images.shape[1]))


def _check_vectors(z, n: int, where: str) -> np.ndarray:
    z = np.asarray(z)
    if z.ndim != 2 or len(z) != n:
        raise ValueError(f"{where}: expected ({n}, D) embeddings, got shape {z.shape}")
    if not np.issubdtype(z.dtype, np.number):
        raise ValueError(f"{where}: embeddings must be numbers, got dtype {z.dtype}")
    bad = ~np.all(np.isfinite(z), axis=1)
    if bad.any():
        raise ValueError(f"{where}: {int(bad.sum())} embedding(s) contain NaN or inf (first row {int(np.argmax(bad))})")
    return z.astype(np.float32)


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # the 'train' extra brings tqdm; without it no bar
        return None
    return tqdm(total=total, desc=desc, unit="img", leave=False)


def _embed_all(embed_fn: Callable, images: np.ndarray, desc: str, chunk: int, progress: bool) -> np.ndarray:
    bar = _progress(len(images), desc, progress)
    out = []
    try:
        for start in range(0, len(images), chunk):
            out.append(np.asarray(embed_fn(images[start : start + chunk])))
            if bar is not None:
                bar.update(len(out[-1]))
    finally:
        if bar is not None:
            bar.close()
    return np.concatenate(out)


def score(
    embed_fn: Callable,
    protocols: Sequence[str] = PROTOCOLS,
    *,
    name: str = "model",
    image_size: int = 224,
    references: Optional[Mapping[str, Optional[Callable]]] = None,
    resamples: int = 1000,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = HIERARCHY_PER_CLASS,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    chunk: int = 256,
    progress: bool = False,
    info: Optional[Mapping] = None,
    keep_draws: bool = False,
    hierarchy_content_size: int = HIERARCHY_CONTENT_SIZE,
    hierarchy_noise: float = HIERARCHY_NOISE,
) -> dict:
    """The scorecard of ``embed_fn`` on every protocol of ``protocols`` (see the module docstring).

    Args:
      embed_fn: ``uint8 images (N, image_size, image_size, 3) -> (N, D)`` embeddings (called in
        chunks of ``chunk`` images).
      protocols: names from :data:`PROTOCOLS`.
      name: the model's row name.
      image_size: the side the stimuli are rendered at (the model's input size).
      references: more rows, ``{name: embed_fn}``; ``None`` (default) gives ``{"pixels": ...}``
        (:func:`_pixels`); pass ``{}`` for none. A value ``None`` means the pixels.
      resamples: bootstrap resamples of every interval (0: no intervals).
      seed: seeds the stimuli, the decoders' folds and the bootstrap.
      trials_per_condition, per_class: stimulus counts (440 oddball trials, 180 hierarchy images).
      geoclidean_dir: the official Geoclidean benchmark (default: the product's renders, labelled).
      progress: a progress bar on stderr while embedding.
      info: provenance of the model (``model``, ``weights``, ``layer``, ...), stored under ``"inputs"``.
      keep_draws: keep each row's bootstrap draws under ``_draws`` (for :func:`score_exports`).
      hierarchy_content_size, hierarchy_noise: the hierarchy protocol's calibration (see :func:`stimuli`).

    Returns:
      ``{"model", "inputs", "provenance", "protocols", PROTOCOL: {...metrics..., "interval",
      "interval_method", "stimuli", "references": {row: {...}}}}`` (docs/EVALUATION.md lists the keys).
    """
    refs = {"pixels": None} if references is None else dict(references)
    stims = stimuli(
        protocols,
        image_size,
        seed=seed,
        trials_per_condition=trials_per_condition,
        per_class=per_class,
        geoclidean_dir=geoclidean_dir,
        odd_one_out_trials=odd_one_out_trials,
        odd_one_out_images=odd_one_out_images,
        hierarchy_content_size=hierarchy_content_size,
        hierarchy_noise=hierarchy_noise,
    )
    out = _head(name, info, protocols)
    for p, stim in stims.items():
        if stim.images is None:
            raise ValueError(f"{p}: embedding a model needs the images (--odd-one-out-images DIR)")
        rows = {
            name: _check_vectors(
                _embed_all(embed_fn, stim.images, f"{p}: {name}", chunk, progress), len(stim.ids), f"{name} on {p}"
            )
        }
        for ref, fn in refs.items():
            z = _pixels(stim.images) if fn is None else _embed_all(fn, stim.images, f"{p}: {ref}", chunk, progress)
            rows[ref] = _check_vectors(z, len(stim.ids), f"{ref} on {p}")
        out[p] = _protocol_entry(p, stim, rows, resamples, seed)
    return out if keep_draws else _strip_draws(out)


def _head(name: str, info: Optional[Mapping], protocols: Sequence[str]) -> dict:
    from gensim_jax.provenance import command_line, git_state, library_versions, package_version

    return {
        "model": name,
        "inputs": dict(info or {}),
        "provenance": {
            "gensim_jax": package_version(),
            "git": git_state(),
            "versions": library_versions(),
            "command": command_line(),
        },
        "protocols": list(protocols),
    }


# ------------------------------------------------------------------------------------------------
# embeddings by id (other frameworks)
# ------------------------------------------------------------------------------------------------


def read_embeddings(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """An embeddings file: ``.npz`` with ``ids`` ``(N,)`` (str) and ``embeddings`` ``(N, D)`` -> ``{id: (D,)}``.

    Errors (``ValueError``/``FileNotFoundError`` naming the file): not an npz of those arrays,
    lengths that differ, repeated ids, NaN or inf vectors.
    """
    from gensim_jax.evaluation.embed import load_npz

    z = load_npz(str(path), ("ids", "embeddings"))
    ids, emb = z["ids"], z["embeddings"]
    if ids.ndim != 1 or emb.ndim != 2 or len(ids) != len(emb):
        raise ValueError(f"{path}: ids must be (N,) and embeddings (N, D), got {ids.shape} and {emb.shape}")
    keys = [i.decode() if isinstance(i, bytes) else str(i) for i in ids.tolist()]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: ids repeat (each stimulus id once)")
    emb = _check_vectors(emb, len(keys), str(path))
    return dict(zip(keys, emb))


def score_embeddings(
    vectors: Mapping[str, np.ndarray],
    protocols: Sequence[str] = PROTOCOLS,
    *,
    name: str = "embeddings",
    image_size: int = 224,
    resamples: int = 1000,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = HIERARCHY_PER_CLASS,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    info: Optional[Mapping] = None,
) -> dict:
    """The scorecard of precomputed vectors ``{stimulus id: (D,)}`` (ids as :func:`write_stimuli` names them).

    The stimuli are made again with the same settings (ids must match, all of one dimensionality);
    the reference row is the pixels at ``image_size``. Scores equal :func:`score` of the function
    that made the vectors.
    """
    stims = stimuli(
        protocols,
        image_size,
        seed=seed,
        trials_per_condition=trials_per_condition,
        per_class=per_class,
        geoclidean_dir=geoclidean_dir,
        odd_one_out_trials=odd_one_out_trials,
        odd_one_out_images=odd_one_out_images,
    )
    dims = {np.shape(v) for v in vectors.values()}
    if len(dims) > 1:
        raise ValueError(f"embeddings have different dimensionalities {sorted(dims)}; every vector must be (D,)")
    out = _head(name, info, protocols)
    for p, stim in stims.items():
        missing = [i for i in stim.ids if i not in vectors]
        if missing:
            raise ValueError(
                f"the embeddings lack {len(missing)} of the {len(stim.ids)} {p} stimuli (e.g. {missing[0]}); embed "
                "every PNG of gensim-jax score stimuli made with the same --seed, --trials-per-condition and --per-class"
            )
        z = np.stack([np.asarray(vectors[i]) for i in stim.ids])
        rows = {name: _check_vectors(z, len(stim.ids), f"{name} on {p}")}
        if stim.images is not None:
            rows["pixels"] = _pixels(stim.images)
        out[p] = _protocol_entry(p, stim, rows, resamples, seed)
    return _strip_draws(out)


def write_stimuli(directory: str | os.PathLike, stims: Mapping[str, ProtocolStimuli], progress: bool = False) -> Path:
    """Every stimulus as ``DIR/<id>.png`` (RGB, lossless) and ``DIR/manifest.json``.

    The manifest: ``{"format": "gensim-jax score stimuli", "protocols": {protocol: settings},
    "stimuli": [{"id", "protocol", "file"}]}``; embed every file and save ``ids`` and ``embeddings``
    in an ``.npz`` for :func:`score_embeddings` (``gensim-jax score --embeddings FILE``).
    """
    from PIL import Image

    root = Path(directory)
    entries = []
    total = sum(len(s.ids) for s in stims.values())
    bar = _progress(total, "writing stimuli", progress)
    for p, stim in stims.items():
        if stim.images is None:
            raise ValueError(f"{p}: writing its stimuli needs the images (--odd-one-out-images DIR)")
        for i, img in zip(stim.ids, stim.images):
            rel = f"{i}.png"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img, "RGB").save(root / rel)
            entries.append({"id": i, "protocol": p, "file": rel})
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    manifest = {
        "format": "gensim-jax score stimuli",
        "protocols": {p: s.settings for p, s in stims.items()},
        "stimuli": entries,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return root / "manifest.json"
