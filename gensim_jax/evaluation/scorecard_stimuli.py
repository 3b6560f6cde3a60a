"""The report card's stimuli: every protocol's seeded images and what scoring them needs (issue 34).

:func:`stimuli` renders the selected protocols of :mod:`gensim_jax.evaluation.scorecard` at one image
size, as uint8 RGB arrays with stable ids, each a :class:`ProtocolStimuli`: the quadrilateral oddball
trials (paper Sec. 3.1, Fig. 2), the gratings of a 2 x 3 x 3 class tree (Sec. 3.3, Appendix N), the 37
Geoclidean concepts (Sec. 3.2; the official benchmark images or the product's renders) and the images
of an odd-one-out trials CSV (Sec. 3.3, Fig. 4D). The same stimuli are scored in Python
(:func:`gensim_jax.evaluation.scorecard.score`) and written for an encoder outside it
(:func:`gensim_jax.evaluation.scorecard.write_stimuli`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation.scorecard_report import ALL_PROTOCOLS, PROTOCOLS

__all__ = [
    "HIERARCHY_BRANCHING",
    "HIERARCHY_CONTENT_SIZE",
    "HIERARCHY_NOISE",
    "HIERARCHY_PER_CLASS",
    "ProtocolStimuli",
    "stimuli",
]


#: The synthetic class tree of the ``hierarchy`` protocol (children per level): 18 leaf classes.
HIERARCHY_BRANCHING = (2, 3, 3)
#: The hierarchy protocol's calibration (issue 42): the gratings are drawn at ``HIERARCHY_CONTENT_SIZE`` pixels with
#: pixel noise ``HIERARCHY_NOISE`` (the held-out set of an ``imagenet_hierarchy`` ``cpu_small`` run) and enlarged to
#: the model's input size by nearest-neighbour sampling, so every encoder sees the same information whatever its
#: input size; at 224 px drawn at 224 px an untrained CORnet-Z decoded every level at about 98% (docs/EVALUATION.md).
HIERARCHY_CONTENT_SIZE = 32
HIERARCHY_NOISE = 0.1
#: Hierarchy images per class (3-fold CV: the decoder trains on about 6.7 per class).
HIERARCHY_PER_CLASS = 10


@dataclass(frozen=True)
class ProtocolStimuli:
    """One protocol's stimuli: ``ids`` ``(N,)`` and ``images`` ``(N, S, S, 3)`` uint8, in the order scored.

    ``data`` is what the protocol needs besides the embeddings (the oddball trials, the class labels
    and tree), ``settings`` how they were made (recorded in the scorecard and the manifest).
    """

    protocol: str
    ids: tuple
    images: np.ndarray
    data: object
    settings: dict


def _oddball_stimuli(image_size: int, seed: int, trials_per_condition: int) -> ProtocolStimuli:
    trials = ob.test_trials(seed, trials_per_condition, image_size)
    t, n = trials.images.shape[:2]
    ids = tuple(f"oddball/{i:05d}_{j}" for i in range(t) for j in range(n))
    images = np.repeat(trials.images.reshape(t * n, image_size, image_size)[..., None], 3, axis=-1)
    settings = {"seed": seed, "trials_per_condition": trials_per_condition, "trials": t, "image_size": image_size}
    return ProtocolStimuli("oddball", ids, images, trials, settings)


def _enlarge(images: np.ndarray, size: int) -> np.ndarray:
    """``(N, s, s, C)`` -> ``(N, size, size, C)`` by nearest-neighbour sampling (pixel ``i`` reads ``floor(i s / size)``)."""
    s = images.shape[1]
    if s == size:
        return images
    idx = (np.arange(size) * s) // size
    return images[:, idx][:, :, idx]


def _hierarchy_stimuli(
    image_size: int, seed: int, per_class: int, content_size: Optional[int] = None, noise: float = HIERARCHY_NOISE
) -> ProtocolStimuli:
    from gensim_jax.evaluation.hierarchy import synthetic_stimuli

    content = min(int(content_size or HIERARCHY_CONTENT_SIZE), int(image_size))
    images, labels, tree, nodes = synthetic_stimuli(seed, per_class, content, HIERARCHY_BRANCHING, noise=float(noise))
    images = _enlarge(images, int(image_size))
    ids = tuple(f"hierarchy/{i:05d}" for i in range(len(labels)))
    settings = {
        "seed": seed,
        "per_class": per_class,
        "branching": list(HIERARCHY_BRANCHING),
        "images": len(labels),
        "image_size": image_size,
        "content_size": content,
        "noise": float(noise),
        "folds": 3,
    }
    return ProtocolStimuli("hierarchy", ids, images, (labels, tree, nodes), settings)


def _geoclidean_stimuli(image_size: int, seed: int, geoclidean_dir=None) -> ProtocolStimuli:
    from gensim_jax.evaluation.geoclidean import load_geoclidean, sampler_episodes
    from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES

    episodes = {}
    if geoclidean_dir is not None:
        if not Path(geoclidean_dir).is_dir():
            raise FileNotFoundError(f"--geoclidean-dir {geoclidean_dir}: no such directory (the official benchmark)")
        for name, c in load_geoclidean(geoclidean_dir, image_size=image_size).items():
            to_uint8 = lambda x: np.round(np.asarray(x) * 255.0).astype(np.uint8)  # noqa: E731 - PIL's values back
            episodes[name] = (to_uint8(c.train), to_uint8(c.test), np.asarray(c.test_kind))
        source = f"official benchmark images ({geoclidean_dir})"
    else:
        episodes = sampler_episodes(image_size, seed, CONCEPT_NAMES)
        source = "the product's own renders of the 37 concept programs (not the official images)"
    ids, images = [], []
    for name, (train, test, kind) in episodes.items():
        ids += [f"geoclidean/{name}/train_{k}" for k in range(len(train))]
        ids += [f"geoclidean/{name}/test_{kd}_{k}" for k, kd in enumerate(kind)]
        images += [train, test]
    layout = {n: (len(e[0]), np.asarray(e[2])) for n, e in episodes.items()}
    settings = {
        "seed": seed,
        "source": source,
        "concepts": len(episodes),
        "images": len(ids),
        "image_size": image_size,
        "threshold": "per_concept",
    }
    return ProtocolStimuli("geoclidean", tuple(ids), np.concatenate(images), layout, settings)


def _odd_one_out_stimuli(image_size: int, trials_csv, images_dir) -> ProtocolStimuli:
    import csv

    from gensim_jax.evaluation.odd_one_out import read_trials

    if trials_csv is None:
        raise ValueError(
            "the odd_one_out protocol needs a trials CSV (--odd-one-out-trials FILE: image_1, image_2, image_3, "
            "choice, rt, participant) and, to embed them, its images (--odd-one-out-images DIR)"
        )
    if not Path(trials_csv).is_file():
        raise FileNotFoundError(f"--odd-one-out-trials {trials_csv}: no such file")
    with open(trials_csv, newline="") as f:
        names = list(dict.fromkeys(r.get(k) for r in csv.DictReader(f) for k in ("image_1", "image_2", "image_3")))
    names = [n for n in names if n is not None]
    trials = read_trials(trials_csv, names)  # checks the columns and the choices, naming the line
    images = None
    if images_dir is not None:
        from PIL import Image

        root = Path(images_dir)
        if not root.is_dir():
            raise FileNotFoundError(f"--odd-one-out-images {images_dir}: no such directory")
        files = []
        for n in names:
            found = [c for c in (root / n, root / f"{n}.png", root / f"{n}.jpg") if c.is_file()]
            if not found:
                raise FileNotFoundError(f"--odd-one-out-images {images_dir}: no image {n!r} (nor {n}.png, {n}.jpg)")
            files.append(found[0])
        images = np.stack(
            [
                np.asarray(Image.open(f).convert("RGB").resize((image_size, image_size), Image.BILINEAR), np.uint8)
                for f in files
            ]
        )
    ids = tuple(f"odd_one_out/{n}" for n in names)
    settings = {
        "trials_csv": str(trials_csv),
        "images": None if images_dir is None else str(images_dir),
        "stimuli": len(names),
        "trials": len(trials.choice),
        "participants": len(np.unique(trials.participant)),
        "image_size": image_size,
        "objective": "mean_likelihood",
    }
    return ProtocolStimuli("odd_one_out", ids, images, trials, settings)


def stimuli(
    protocols: Sequence[str] = PROTOCOLS,
    image_size: int = 224,
    *,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = HIERARCHY_PER_CLASS,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    hierarchy_content_size: int = HIERARCHY_CONTENT_SIZE,
    hierarchy_noise: float = HIERARCHY_NOISE,
) -> dict[str, ProtocolStimuli]:
    """Every selected protocol's seeded stimuli rendered at ``image_size`` (uint8 RGB), with their ids.

    Oddball: 11 shapes x 4 deviant positions x ``trials_per_condition`` trials of 6 items (id
    ``oddball/TTTTT_I``: trial ``T``, item ``I``); hierarchy: ``per_class`` images of each of the 18
    classes (id ``hierarchy/NNNNN``); geoclidean: per concept 5 support and 15 test images (id
    ``geoclidean/CONCEPT/train_K`` and ``geoclidean/CONCEPT/test_KIND_K``), read from the official
    benchmark in ``geoclidean_dir`` (resized bilinearly) or rendered by the product's sampler. The hierarchy's
    gratings are drawn at ``hierarchy_content_size`` pixels (at most ``image_size``) with pixel noise
    ``hierarchy_noise`` and enlarged to ``image_size`` (nearest neighbour): the calibrated protocol
    (docs/EVALUATION.md; ``scripts/hierarchy_calibration.py`` compares settings).
    """
    _check_protocols(protocols)
    from gensim_jax.stimuli.quadrilaterals import MIN_IMAGE_SIZE

    if int(image_size) < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be >= {MIN_IMAGE_SIZE}, got {image_size}")
    s, seed = int(image_size), int(seed)
    build = {
        "oddball": lambda: _oddball_stimuli(s, seed, int(trials_per_condition)),
        "hierarchy": lambda: _hierarchy_stimuli(s, seed, int(per_class), hierarchy_content_size, hierarchy_noise),
        "geoclidean": lambda: _geoclidean_stimuli(s, seed, geoclidean_dir),
        "odd_one_out": lambda: _odd_one_out_stimuli(s, odd_one_out_trials, odd_one_out_images),
    }
    return {p: build[p]() for p in protocols}


def _check_protocols(protocols: Sequence[str]) -> None:
    if isinstance(protocols, str):
        raise TypeError(f"protocols must be a sequence of names, got the string {protocols!r}")
    unknown = [p for p in protocols if p not in ALL_PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"unknown protocols {unknown}; choose from {', '.join(ALL_PROTOCOLS)}")
