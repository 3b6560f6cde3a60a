"""Geoclidean datasets: benchmark programs with close/far negatives, and the paper's training set.

Benchmark programs
  The official benchmark (Hsu et al. 2022) pairs each of its 37 concepts with a *close* program
  (one constraint changed) and a *far* program (several changed); the test images of a concept
  are 5 in-concept, 5 close and 5 far renders. The 3 x 37 program texts ship with the package
  (``gensim_jax/assets/geoclidean_benchmark_programs.json``, copied verbatim from the benchmark's
  ``concept.txt``, ``close_concept.txt`` and ``far_concept.txt``; the source is named in the file),
  so nothing here needs the benchmark directory at run time.

Ids
  ``program_id`` is the concept's id (position in
  :data:`~gensim_jax.stimuli.geoclidean.concepts.CONCEPT_NAMES`, 0..36); ``variant`` is 0 for
  the concept program, 1 for its close and 2 for its far program; ``tree_id = 37 * variant +
  program_id`` indexes :func:`benchmark_parse_trees` (111 parse trees). For concept programs the
  tree id equals the program id, so a kernel table over
  :func:`~gensim_jax.stimuli.geoclidean.concepts.concept_parse_trees` is indexed the same way.

Training set (paper Sec. 3.2, Appendix M)
  100,000 images from the 30 training concepts. Image ``i`` of a stream with seed ``s`` comes
  from concept ``concepts[i % len(concepts)]`` (balanced: 3,333 or 3,334 per concept at 100,000)
  and its geometry from ``np.random.default_rng([s, i])`` only, so any image can be regenerated
  alone, a stream can resume at any index, and shards can be generated in parallel.
  :func:`generate` streams dicts of numpy arrays; :func:`write_shards` caches a stream to disk as
  ``.npz`` shards (resumable; the TFRecord writer is
  :mod:`gensim_jax.data.geoclidean_records`, because TensorFlow may only be imported under
  ``gensim_jax.data``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from gensim_jax._extras import require
from gensim_jax.kernels.trees import Tree
from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_IDS, CONCEPT_NAMES, split_ids
from gensim_jax.stimuli.geoclidean.grammar import Program, parse_program
from gensim_jax.stimuli.geoclidean.render import render
from gensim_jax.stimuli.geoclidean.sampler import sample_scene

__all__ = [
    "VARIANTS",
    "N_CONCEPTS",
    "PAPER_TRAIN_SIZE",
    "benchmark_source",
    "benchmark_program",
    "benchmark_parse_trees",
    "tree_id",
    "program_ids",
    "variant_index",
    "sample_image",
    "example",
    "generate",
    "benchmark_images",
    "write_shards",
    "read_shards",
]

#: Program variants of each benchmark concept, in ``variant`` id order.
VARIANTS: tuple[str, ...] = ("concept", "close", "far")
#: Number of benchmark concepts.
N_CONCEPTS = len(CONCEPT_NAMES)
#: Size of the paper's Geoclidean training set (Appendix M).
PAPER_TRAIN_SIZE = 100_000

_ASSET = "geoclidean_benchmark_programs.json"


@lru_cache(maxsize=1)
def _assets() -> dict:
    text = resources.files("gensim_jax").joinpath("assets", _ASSET).read_text()
    return json.loads(text)["concepts"]


def variant_index(variant: str | int) -> int:
    """The id (``0..2``) of a program variant given by name (``"concept"``, ``"close"``, ``"far"``) or id.

    Raises:
      ValueError: any other value, naming the accepted ones.

    Example:
      >>> variant_index("far"), variant_index(1)
      (2, 1)
    """
    if isinstance(variant, (int, np.integer)) and not isinstance(variant, bool):
        if 0 <= int(variant) < len(VARIANTS):
            return int(variant)
    elif variant in VARIANTS:
        return VARIANTS.index(variant)
    raise ValueError(f"variant must be one of {VARIANTS} or 0..2, got {variant!r}")


def _concept_name(concept: str | int) -> str:
    if isinstance(concept, (int, np.integer)) and not isinstance(concept, bool):
        if 0 <= int(concept) < N_CONCEPTS:
            return CONCEPT_NAMES[int(concept)]
        raise ValueError(f"program id must be in [0, {N_CONCEPTS}), got {concept}")
    if concept not in CONCEPT_IDS:
        raise ValueError(f"unknown Geoclidean concept {concept!r}; known: {', '.join(CONCEPT_NAMES)}")
    return str(concept)


def benchmark_source(concept: str | int, variant: str | int = "concept") -> str:
    """Verbatim text of a benchmark program file (``concept.txt``, ``close_concept.txt``,
    ``far_concept.txt``) from the package data.

    Args:
      concept: concept name (``"square"``) or program id (0..36).
      variant: ``"concept"``, ``"close"``, ``"far"`` or 0, 1, 2.

    Returns:
      The program text.

    Example:
      >>> benchmark_source("angle").splitlines()[0]
      "'l1 = line(p1(), p2())',"
    """
    return _assets()[_concept_name(concept)][VARIANTS[variant_index(variant)]]


@lru_cache(maxsize=None)
def _program(name: str, v: int) -> Program:
    return parse_program(_assets()[name][VARIANTS[v]])


def benchmark_program(concept: str | int, variant: str | int = "concept") -> Program:
    """A parsed benchmark program: the concept, or its close or far negative.

    The concept variant equals
    :func:`~gensim_jax.stimuli.geoclidean.concepts.concept_program` (Appendix O).

    Args:
      concept: concept name or program id.
      variant: ``"concept"``, ``"close"``, ``"far"`` (or 0, 1, 2).

    Returns:
      :class:`~gensim_jax.stimuli.geoclidean.grammar.Program`.

    Example:
      >>> benchmark_program("square", "far").visible_objects
      ('l3', 'l4', 'l5', 'l6')
    """
    return _program(_concept_name(concept), variant_index(variant))


def tree_id(program_id: int | np.ndarray, variant: str | int = "concept") -> int | np.ndarray:
    """Index of a program's parse tree in :func:`benchmark_parse_trees`: ``37 * variant + id``.

    Args:
      program_id: concept id(s), int or integer array.
      variant: variant name or index.

    Returns:
      Same type and shape as ``program_id``.

    Example:
      >>> tree_id(5), tree_id(5, "far")
      (5, 79)
    """
    return variant_index(variant) * N_CONCEPTS + program_id


def benchmark_parse_trees() -> tuple[Tree, ...]:
    """Parse trees (Appendix P grammar) of all 3 x 37 benchmark programs, in ``tree_id`` order.

    Use with :func:`gensim_jax.kernels.trees.gram_log_table` to get GenSim targets between any
    two benchmark programs (paper Appendix M).

    Returns:
      Tuple of 111 :class:`~gensim_jax.kernels.trees.Tree`.

    Example:
      >>> trees = benchmark_parse_trees()
      >>> len(trees), trees[tree_id(3)] == benchmark_program(3).parse_tree()
      (111, True)
    """
    return tuple(_program(CONCEPT_NAMES[i], v).parse_tree() for v in range(len(VARIANTS)) for i in range(N_CONCEPTS))


def _check_seed_index(seed: int, index: int) -> None:
    for nm, v in (("seed", seed), ("index", index)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{nm} must be a non-negative int, got {v!r}")


def sample_image(
    concept: str | int,
    seed: int,
    index: int,
    *,
    variant: str | int = "concept",
    size: int = 224,
    max_tries: int = 1000,
) -> np.ndarray:
    """One rendered image of a benchmark program, a function of ``(seed, index)`` only.

    Args:
      concept: concept name or program id.
      seed, index: non-negative ints; the generator is ``np.random.default_rng([seed, index])``.
      variant: ``"concept"``, ``"close"`` or ``"far"``.
      size: image side in pixels.
      max_tries: rejection-sampling budget (see :func:`~.sampler.sample_scene`).

    Returns:
      uint8 ``(size, size)`` grayscale, black strokes on white.

    Example:
      >>> sample_image("square", 0, 0, size=64).shape
      (64, 64)
    """
    _check_seed_index(seed, index)
    name = _concept_name(concept)
    v = variant_index(variant)
    scene = sample_scene(
        _program(name, v), np.random.default_rng([seed, index]), max_tries=max_tries, name=f"{name} ({VARIANTS[v]})"
    )
    return render(scene, size)


def program_ids(concepts: str | Sequence[str | int]) -> tuple[int, ...]:
    """The program ids a ``concepts`` argument names, in order (as :func:`example` and :func:`generate` read it).

    Args:
      concepts: ``"train"`` (the paper's 30), ``"test"`` (7), ``"all"`` (37), one concept name, or a
        sequence of concept names / ids.

    Raises:
      ValueError: an unknown name, an id out of range, or an empty sequence.

    Example:
      >>> len(program_ids("train")), program_ids(["square", 0]) == (program_ids("square")[0], 0)
      (30, True)
    """
    if isinstance(concepts, str) and concepts in ("train", "test", "all"):
        return split_ids(concepts)
    if isinstance(concepts, str):
        concepts = [concepts]
    ids = tuple(CONCEPT_IDS[_concept_name(c)] for c in concepts)
    if not ids:
        raise ValueError("concepts must name at least one concept")
    return ids


def example(
    index: int,
    seed: int = 0,
    *,
    concepts: str | Sequence[str | int] = "train",
    variant: str | int = "concept",
    size: int = 224,
    max_tries: int = 1000,
) -> dict[str, np.ndarray]:
    """Example ``index`` of a stream (see module docstring): image plus generative metadata.

    Args:
      index: position in the stream (>= 0).
      seed: stream seed (>= 0).
      concepts: ``"train"`` (the paper's 30), ``"test"`` (7), ``"all"`` (37), or a list of
        concept names / ids; example ``i`` uses ``concepts[i % len(concepts)]``.
      variant: program variant of every example.
      size: image side in pixels.
      max_tries: rejection-sampling budget.

    Returns:
      dict with ``image`` uint8 ``(size, size)``, ``program_id`` int32 ``()``, ``tree_id``
      int32 ``()``, ``variant`` int32 ``()``, ``index`` int64 ``()``.

    Example:
      >>> ex = example(7, seed=1, size=64)
      >>> int(ex["program_id"]) in split_ids("train"), ex["image"].shape
      (True, (64, 64))
    """
    _check_seed_index(seed, index)
    ids = program_ids(concepts)
    v = variant_index(variant)
    pid = ids[index % len(ids)]
    img = sample_image(pid, seed, index, variant=v, size=size, max_tries=max_tries)
    return {
        "image": img,
        "program_id": np.int32(pid),
        "tree_id": np.int32(tree_id(pid, v)),
        "variant": np.int32(v),
        "index": np.int64(index),
    }


def generate(
    n: int = PAPER_TRAIN_SIZE,
    seed: int = 0,
    *,
    start: int = 0,
    concepts: str | Sequence[str | int] = "train",
    variant: str | int = "concept",
    size: int = 224,
    max_tries: int = 1000,
    progress: bool = False,
) -> Iterator[dict[str, np.ndarray]]:
    """Stream examples ``start, ..., start + n - 1`` (paper Appendix M training set by default).

    Resuming at ``start = k`` yields exactly the examples a full stream yields from position
    ``k`` on.

    Args:
      n: number of examples (default 100,000, the paper's training set).
      seed: stream seed.
      start: first index.
      concepts, variant, size, max_tries: as in :func:`example`.
      progress: show a tqdm progress bar.

    Yields:
      dicts as returned by :func:`example`.

    Example:
      >>> [int(ex["index"]) for ex in generate(3, seed=0, start=10, size=32)]
      [10, 11, 12]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    _check_seed_index(seed, start)
    program_ids(concepts)
    variant_index(variant)
    it = range(start, start + n)
    if progress:
        tqdm = require("tqdm.auto", "train").tqdm

        it = tqdm(it, desc="geoclidean", unit="img")
    for i in it:
        yield example(i, seed, concepts=concepts, variant=variant, size=size, max_tries=max_tries)


def benchmark_images(
    concept: str | int,
    variant: str | int = "concept",
    n: int = 5,
    seed: int = 0,
    *,
    size: int = 224,
) -> np.ndarray:
    """``n`` renders of a benchmark program (e.g. the 5 close or far negatives of a test episode).

    Image ``k`` uses the generator ``default_rng([seed, 1_000_003 * (37 * variant + id) + k])``
    so different programs never share streams.

    Args:
      concept: concept name or program id.
      variant: ``"concept"``, ``"close"`` or ``"far"``.
      n: number of images.
      seed: seed.
      size: image side.

    Returns:
      uint8 ``(n, size, size)``.

    Example:
      >>> benchmark_images("ccl", "close", 2, size=32).shape
      (2, 32, 32)
    """
    name = _concept_name(concept)
    v = variant_index(variant)
    base = 1_000_003 * int(tree_id(CONCEPT_IDS[name], v))
    imgs = [sample_image(name, seed, base + k, variant=v, size=size) for k in range(int(n))]
    return np.stack(imgs) if imgs else np.zeros((0, size, size), np.uint8)


# --------------------------------------------------------------------------------------------
# .npz shards
# --------------------------------------------------------------------------------------------

_FIELDS = ("image", "program_id", "tree_id", "variant", "index")


def _shard_name(k: int, num: int) -> str:
    return f"geoclidean-{k:05d}-of-{num:05d}.npz"


def write_shards(
    directory: str | os.PathLike,
    n: int = PAPER_TRAIN_SIZE,
    seed: int = 0,
    *,
    shard_size: int = 5000,
    concepts: str | Sequence[str | int] = "train",
    variant: str | int = "concept",
    size: int = 224,
    progress: bool = True,
) -> list[Path]:
    """Cache a stream of :func:`generate` to ``.npz`` shards (resumable).

    Shard ``k`` holds examples ``k * shard_size ...`` as stacked arrays (``image``
    ``(m, size, size)`` uint8 and int metadata ``(m,)``). A ``meta.json`` records the settings;
    re-running with the same settings skips complete shards (each is written to a temporary file
    and renamed), so an interrupted job resumes where it stopped. Different settings in an
    existing directory raise ``ValueError``.

    Args:
      directory: output directory (created).
      n, seed, concepts, variant, size: as in :func:`generate`.
      shard_size: examples per shard.
      progress: tqdm progress bar over examples.

    Returns:
      Paths of all shards, in order.

    Example:
      >>> import tempfile
      >>> paths = write_shards(tempfile.mkdtemp(), 4, shard_size=3, size=32, progress=False)
      >>> [p.name for p in paths]
      ['geoclidean-00000-of-00002.npz', 'geoclidean-00001-of-00002.npz']
    """
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ids = program_ids(concepts)
    meta = {
        "format": "gensim_jax.geoclidean.npz/1",
        "n": int(n),
        "seed": int(seed),
        "shard_size": int(shard_size),
        "program_ids": list(ids),
        "variant": variant_index(variant),
        "size": int(size),
    }
    mpath = d / "meta.json"
    if mpath.exists():
        old = json.loads(mpath.read_text())
        if old != meta:
            raise ValueError(f"{d} holds shards written with other settings: {old} != {meta}")
    else:
        mpath.write_text(json.dumps(meta, indent=1) + "\n")
    num = max(1, -(-int(n) // int(shard_size)))
    paths = [d / _shard_name(k, num) for k in range(num)]
    todo = [k for k in range(num) if not paths[k].exists()]
    bar = None
    if progress:
        tqdm = require("tqdm.auto", "train").tqdm

        done = int(n) - sum(min(shard_size, n - k * shard_size) for k in todo)
        bar = tqdm(total=int(n), initial=done, desc="geoclidean shards", unit="img")
    for k in todo:
        lo, hi = k * shard_size, min((k + 1) * shard_size, n)
        rows = {f: [] for f in _FIELDS}
        for ex in generate(hi - lo, seed, start=lo, concepts=ids, variant=variant, size=size):
            for f in _FIELDS:
                rows[f].append(ex[f])
            if bar is not None:
                bar.update(1)
        arrays = {f: np.stack(v) if v else np.zeros((0,), np.int64) for f, v in rows.items()}
        if not rows["image"]:
            arrays["image"] = np.zeros((0, size, size), np.uint8)
        tmp = paths[k].with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, paths[k])
    if bar is not None:
        bar.close()
    return paths


def read_shards(directory: str | os.PathLike) -> Iterator[dict[str, np.ndarray]]:
    """Stream the examples of :func:`write_shards` back, in index order.

    Args:
      directory: a directory written by :func:`write_shards`.

    Yields:
      dicts like :func:`example`'s.

    Raises:
      ValueError: no ``meta.json`` or missing shards (an unfinished write).
    """
    d = Path(directory)
    mpath = d / "meta.json"
    if not mpath.exists():
        raise ValueError(f"{d} has no meta.json; not a Geoclidean shard directory")
    meta = json.loads(mpath.read_text())
    n, shard_size = meta["n"], meta["shard_size"]
    num = max(1, -(-n // shard_size))
    paths = [d / _shard_name(k, num) for k in range(num)]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise ValueError(
            f"{d} is incomplete: {len(missing)} of {num} shards missing "
            f"(first: {missing[0]}); re-run write_shards to resume"
        )
    for p in paths:
        with np.load(p, allow_pickle=False) as z:
            arrays = {f: z[f] for f in _FIELDS}
        for j in range(len(arrays["index"])):
            yield {f: arrays[f][j] for f in _FIELDS}
