"""A user's folder of images and its metadata table: the table read and checked, the held-out split, the streams.

The table (CSV, or Parquet with pyarrow installed) has a ``file`` column (a path relative to the
folder) and the generative metadata of each image, in one of five forms, each naming a closed-form
kernel of :mod:`gensim_jax.kernels` (``data.kernel = "auto"`` picks it from the columns):

====================  ======================================================================
``beta_bernoulli``    binary feature columns (any names, values 0/1): paper Eq. I3
``hierarchy``         ``class_path`` (``animal/dog/terrier``, any depth, ragged): Eq. 4 over
                      the tree the paths define (each prefix a node, uniform edge probabilities)
``categorical``       ``label`` alone: the class-identity kernel (different classes floored)
``tree``              ``program``: a Geoclidean program (Appendix P grammar) or a bracketed
                      parse tree ``(S (A a))``; the normalised ST tree kernel (Appendix M)
``gaussian_mixture``  continuous columns with ``component``: Eq. H2 for the mixture whose
                      weights, means and diagonal variances are those of the components' rows
====================  ======================================================================

:func:`load_table` reads and checks the table before anything is trained; a bad table raises
:class:`TableError` (a ``ValueError``: the command line prints one line) naming the row (1-based,
the header not counted) and the column. Kernels over a discrete latent (and Beta-Bernoulli, over the
distinct feature vectors) become a ``(C, C)`` table of ``log s`` gathered by ``target_id``; the
Gaussian mixture is computed in the step from ``points``.

The held-out split is a hash of the ``file`` string (:func:`heldout_fraction_of`): a row stays on
its side when rows are added. Images are read from disk by ``tf.data`` (:func:`folder_stream`,
:func:`load_images`): PNG or JPEG of any size, decoded, resized to ``image_size`` and sent as
``uint8``; only the table is held in memory.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import os
from typing import Any, Optional, Sequence

import numpy as np

__all__ = [
    "COLORS",
    "KERNELS",
    "FolderTable",
    "TableError",
    "check_data_config",
    "data_directory",
    "folder_stream",
    "heldout_fraction_of",
    "load_images",
    "load_table",
    "metadata_path",
    "read_table",
    "table_of",
]

KERNELS = ("auto", "beta_bernoulli", "hierarchy", "categorical", "tree", "gaussian_mixture")
COLORS = ("rgb", "grayscale")
SPECIAL = ("file", "class_path", "label", "program", "component")
#: Beta-Bernoulli targets are gathered from a table of the distinct feature vectors up to this many.
MAX_TABLE = 4096
CATEGORICAL_FLOOR = -30.0  # log s of two different classes (exactly -inf), as the tree kernel's floor
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF8", b"BM")
_AUG_TAG = 7  # the key of the views, as gensim_jax.data.pipelines derives it


class TableError(ValueError):
    """A metadata table that cannot be trained on; the message names the row and the column."""


def read_table(path: str) -> tuple[list, list]:
    """``(columns, rows)`` of a CSV or Parquet table: column names and one list of strings per row."""
    if str(path).lower().endswith((".parquet", ".pq")):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(f"reading {path} needs pyarrow (pip install pyarrow), or save the table as CSV") from None
        data = pq.read_table(path).to_pydict()
        columns = list(data)
        n = len(data[columns[0]]) if columns else 0
        return columns, [["" if data[c][i] is None else str(data[c][i]) for c in columns] for i in range(n)]
    with open(path, newline="", encoding="utf-8-sig") as f:
        lines = [r for r in csv.reader(f) if any(cell.strip() for cell in r)]
    if not lines:
        return [], []
    columns = [c.strip() for c in lines[0]]
    return columns, [[cell.strip() for cell in r] + [""] * (len(columns) - len(r)) for r in lines[1:]]


def heldout_fraction_of(files: Sequence[str]) -> np.ndarray:
    """``(N,)`` float64 in ``[0, 1)``: the SHA-256 of each ``file`` string as a fraction; held out when ``< holdout``.

    A pure function of the string, so a row's side of the split does not change when rows are added."""
    return np.array([int.from_bytes(hashlib.sha256(f.encode("utf-8")).digest()[:8], "big") / 2.0**64 for f in files])


@dataclasses.dataclass(frozen=True, eq=False)
class FolderTable:
    """A checked table: ``files`` ``(N,)``, the kernel, the per-row metadata a step reads, the split.

    ``metadata``: ``target_id`` ``(N,)`` int32 (rows of ``log_table``) or ``points`` ``(N, D)`` float32
    (Gaussian mixture), and ``label`` ``(N,)`` int32 (the supervised classes) when there are classes.
    ``log_table``: ``(C, C)`` float64 ``log s``; ``mixture``: ``(weights, means, variances)``;
    ``levels``: ``(N, L)`` each row's class at each level of the ``class_path`` tree (its ancestor at depth
    ``1..L``, the path itself below its depth), or ``(N, 1)`` its ``label``; ``level_names`` names them.
    """

    directory: str
    files: np.ndarray
    kernel: str
    status: str
    metadata: dict
    heldout: np.ndarray
    log_table: Optional[np.ndarray] = None
    mixture: Optional[tuple] = None
    class_names: tuple = ()
    levels: Optional[np.ndarray] = None
    level_names: tuple = ()

    @property
    def target_key(self) -> str:
        return "points" if self.mixture is not None else "target_id"

    def rows(self, heldout: bool) -> np.ndarray:
        """Indices of the training (``False``) or held-out (``True``) rows, in table order."""
        return np.flatnonzero(self.heldout == heldout)

    def gaussian_mixture(self):
        """The :class:`~gensim_jax.kernels.gaussian_mixture.GaussianMixture` of the components (or None)."""
        from gensim_jax.kernels import gaussian_mixture as gm

        return None if self.mixture is None else gm.make_mixture(*self.mixture, normalize=True)

    def log_similarity(self, rows_a, rows_b=None) -> np.ndarray:
        """``(A, B)`` float64 ``log s`` of the generative model between the images of rows ``rows_a`` and ``rows_b``."""
        a = np.asarray(rows_a)
        b = a if rows_b is None else np.asarray(rows_b)
        if self.mixture is None:
            ids = self.metadata["target_id"]
            return self.log_table[np.ix_(ids[a], ids[b])]
        from gensim_jax.kernels import gaussian_mixture as gm

        x = self.metadata["points"]
        return np.asarray(gm.pairwise_log_similarity(x[a], x[b], self.gaussian_mixture()), np.float64)


def metadata_path(directory: str, metadata: str) -> str:
    """The table's path: ``metadata`` when absolute or an existing file (relative to the working directory),
    else ``metadata`` inside ``directory``."""
    if os.path.isabs(metadata) or (os.path.isfile(metadata) and not os.path.isfile(os.path.join(directory, metadata))):
        return metadata
    return os.path.join(directory, metadata)


def _where(path: str, row: int, column: str) -> str:
    return f"{os.path.basename(path)} row {row + 1}, column {column!r}"


def _check_file(directory: str, name: str, where: str) -> None:
    if not name:
        raise TableError(f"{where}: empty file name")
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise TableError(f"{where}: {name} does not exist in {directory}") from None
    except OSError as err:
        raise TableError(f"{where}: {name} cannot be read ({err.strerror or err})") from None
    if not head.startswith(_SIGNATURES):
        raise TableError(f"{where}: {name} is not a PNG, JPEG, GIF or BMP image (unreadable)")


def _number(value: str, where: str, what: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise TableError(f"{where}: {value!r} is not a number ({what})") from None
    if not np.isfinite(x):
        raise TableError(f"{where}: {value!r} is not a finite number ({what})")
    return x


def _kernel_of(columns: list, kernel: str) -> tuple:
    """``(kernel, reason)``: ``kernel``, or for ``auto`` the one the columns name (TableError when several do)."""
    others = [c for c in columns if c not in SPECIAL]
    named = [("hierarchy", "class_path") if "class_path" in columns else None]
    named += [("tree", "program") if "program" in columns else None]
    if "component" in columns:
        named += [("gaussian_mixture", f"component with {len(others)} continuous column(s)")]
    elif others:
        named += [("beta_bernoulli", f"{len(others)} binary feature column(s) {', '.join(others[:8])}")]
    named = [n for n in named if n]
    if "label" in columns and not named:
        named = [("categorical", "label")]
    if kernel != "auto":
        return kernel, "data.kernel"
    if not named:
        raise TableError(f"the table has no metadata columns besides file (columns: {', '.join(columns)})")
    if len(named) > 1:
        what = "; ".join(f"{why} -> {k}" for k, why in named)
        raise TableError(f"the table has the columns of several kernels ({what}): set data.kernel to one of them")
    return named[0][0], f"auto: {named[0][1]}"


def _ids(values: list) -> tuple:
    names = tuple(sorted(set(values)))
    lookup = {v: i for i, v in enumerate(names)}
    return names, np.array([lookup[v] for v in values], np.int32)


def _hierarchy(paths: list, path: str, col: list) -> tuple:
    """``(log_table (C, C), ancestors (C, L))`` of Eq. 4 over the tree of the distinct class paths ``paths``
    (``col``: the column, checked for empty segments first), and each path's node at depths ``1..L``."""
    from gensim_jax.kernels.hierarchy import Tree, level_ancestors, log_similarity_table

    names = sorted(set(paths))
    for r, p in enumerate(col):
        if any(not seg.strip() for seg in p.split("/")):
            raise TableError(f"{_where(path, r, 'class_path')}: {p!r} has an empty segment")
    node = {(): 0}
    parents = [-1]
    for p in names:
        parts = tuple(p.split("/"))
        for d in range(1, len(parts) + 1):
            if parts[:d] not in node:
                node[parts[:d]] = len(parents)
                parents.append(node[parts[: d - 1]])
    tree = Tree.from_parents(parents)
    nodes = np.array([node[tuple(p.split("/"))] for p in names])
    return log_similarity_table(tree, nodes), level_ancestors(tree, nodes, fill="self")[:, 1:]


def _programs(col: list, path: str, lookup: dict) -> np.ndarray:
    from gensim_jax.kernels.trees import Tree, gram_log_table
    from gensim_jax.stimuli.geoclidean.grammar import parse_tree

    trees = []
    for text, r in lookup.items():
        try:
            trees.append(Tree.from_bracket(text) if text.lstrip().startswith("(") else parse_tree(text))
        except (ValueError, TypeError) as err:
            raise TableError(f"{_where(path, r, 'program')}: {' '.join(str(err).split())}") from None
    return np.asarray(gram_log_table(trees, "st"), np.float64)


def load_table(
    directory: str,
    metadata: str,
    kernel: str = "auto",
    alpha: float = 1.0,
    beta: float = 1.0,
    holdout: float = 0.2,
    check_files: bool = True,
) -> FolderTable:
    """Read and check the table ``metadata`` of the folder ``directory`` (see the module docstring).

    Raises :class:`TableError` naming row and column: an empty table, no ``file`` column, a missing or
    unreadable image, a non-0/1 value in a feature column, a ``class_path`` with an empty segment, a
    program that does not parse, the columns of several kernels under ``kernel="auto"``, fewer than two
    distinct targets, or no training or no held-out row.
    """
    from gensim_jax.kernels import beta_bernoulli, categorical

    path = metadata_path(directory, metadata)
    if not os.path.isfile(path):
        raise TableError(f"data.metadata: {path} does not exist")
    columns, rows = read_table(path)
    if "file" not in columns:
        raise TableError(f"{os.path.basename(path)} has no 'file' column (columns: {', '.join(columns) or 'none'})")
    if not rows:
        raise TableError(f"{os.path.basename(path)} is empty: no rows under the header")
    col = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
    kernel, reason = _kernel_of(columns, kernel)
    need = {"hierarchy": "class_path", "categorical": "label", "tree": "program", "gaussian_mixture": "component"}
    if kernel in need and need[kernel] not in columns:
        raise TableError(f"data.kernel={kernel} needs a {need[kernel]!r} column (columns: {', '.join(columns)})")
    files = col["file"]
    if check_files:
        for r, name in enumerate(files):
            _check_file(directory, name, _where(path, r, "file"))
    meta: dict = {}
    log_table = mixture = levels = None
    others = [c for c in columns if c not in SPECIAL]
    if kernel in ("beta_bernoulli", "gaussian_mixture"):
        if not others:
            raise TableError(f"data.kernel={kernel} needs feature columns besides {', '.join(SPECIAL)}")
        what = "a binary feature: 0 or 1" if kernel == "beta_bernoulli" else "a continuous column"
        x = np.array([[_number(col[c][r], _where(path, r, c), what) for c in others] for r in range(len(rows))])
        if kernel == "beta_bernoulli":
            bad = np.argwhere((x != 0) & (x != 1))
            if bad.size:
                r, j = bad[0]
                raise TableError(f"{_where(path, r, others[j])}: {col[others[j]][r]!r} is not 0 or 1 (binary features)")
            patterns, inverse = np.unique(x, axis=0, return_inverse=True)
            if len(patterns) < 2:
                raise TableError(
                    f"every row has the same features ({', '.join(others)}): fewer than two distinct targets"
                )
            if len(patterns) > MAX_TABLE:
                raise TableError(f"{len(patterns)} distinct feature vectors: at most {MAX_TABLE} are supported")
            log_table = np.asarray(beta_bernoulli.pairwise_log_similarity(patterns, patterns, alpha, beta), np.float64)
            meta["target_id"] = inverse.reshape(-1).astype(np.int32)
        else:
            names, comp = _ids(col["component"])
            if len(names) < 2:
                raise TableError(f"column 'component' has one value {names[0]!r}: fewer than two distinct targets")
            w = np.bincount(comp) / len(comp)
            means = np.stack([x[comp == k].mean(0) for k in range(len(names))])
            floor = max(1e-6, 1e-3 * float(x.var(0).mean()))
            var = np.stack([x[comp == k].var(0) if np.sum(comp == k) > 1 else x.var(0) for k in range(len(names))])
            mixture = (w, means, np.maximum(var, floor))
            meta["points"] = x.astype(np.float32)
    else:
        source = need[kernel]
        names, ids = _ids(col[source])
        if any(not v for v in col[source]):
            r = col[source].index("")
            raise TableError(f"{_where(path, r, source)}: empty value")
        if len(names) < 2:
            raise TableError(f"column {source!r} has one value {names[0]!r}: fewer than two distinct targets")
        if kernel == "categorical":
            pi = np.bincount(ids) / len(ids)
            log_table = np.asarray(categorical.log_similarity_table(pi, log_floor=CATEGORICAL_FLOOR), np.float64)
        if kernel == "tree":
            first: dict = {}
            for r, v in enumerate(col[source]):
                first.setdefault(v, r)
            log_table = _programs(col[source], path, {v: first[v] for v in names})
        meta["target_id"] = ids
    level_names: tuple = ()
    if "class_path" in columns:  # k-NN per level; the kernel's table when it is the hierarchy's
        paths, path_ids = _ids(col["class_path"])
        path_table, ancestors = _hierarchy(list(paths), path, col["class_path"])
        log_table = path_table if kernel == "hierarchy" else log_table
        levels, level_names = ancestors[path_ids], tuple(f"level {d + 1}" for d in range(ancestors.shape[1]))
    label_col = "label" if "label" in columns else "class_path" if "class_path" in columns else None
    class_names: tuple = ()
    if label_col is not None:
        class_names, meta["label"] = _ids(col[label_col])
        if levels is None:
            levels, level_names = meta["label"][:, None], ("label",)
    held = heldout_fraction_of(files) < float(holdout)
    if held.all() or not held.any():
        raise TableError(
            f"data.holdout={holdout} leaves {'no training' if held.all() else 'no held-out'} row of {len(files)}"
        )
    status = (
        f"{len(files)} images ({int((~held).sum())} training, {int(held.sum())} held out), kernel {kernel} ({reason})"
    )
    if label_col is None:
        status += "; no label or class_path column: no supervised arm"
    return FolderTable(
        os.path.abspath(directory), np.array(files, dtype=object), kernel, status, meta, held,
        log_table, mixture, class_names, levels, level_names,
    )  # fmt: skip


_TABLES: dict = {}


def data_directory(data: Any) -> str:
    """The folder of a config's ``data`` section: ``data.dir``; else, with ``data.example`` (a kind of
    :mod:`gensim_jax.stimuli.folder_example`), that example folder, written once under
    ``$GENSIM_JAX_CACHE`` (default ``~/.cache/gensim_jax``); else a :class:`TableError` saying what to set."""
    if data.dir:
        return str(data.dir)
    if not getattr(data, "example", None):
        raise TableError(
            "data.dir is not set: --set data.dir=DIR data.metadata=DIR/metadata.csv (docs/FOLDER.md; "
            "python scripts/make_example_folder.py DIR writes an example folder)"
        )
    from gensim_jax.stimuli.folder_example import write_example_folder

    n, size = int(data.example_images), int(data.image_size)
    cache = os.environ.get("GENSIM_JAX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "gensim_jax")
    directory = os.path.join(cache, f"folder_example_{data.example}_n{n}_s{size}")
    if not os.path.isfile(os.path.join(directory, "metadata.csv")):
        write_example_folder(directory + ".tmp", data.example, n, size, seed=0)
        os.replace(directory + ".tmp", directory)
    return directory


def table_of(data: Any, check_files: bool = True) -> FolderTable:
    """:func:`load_table` of a config's ``data`` section (``dir``, ``metadata``, ``kernel``, ``alpha``, ``beta``,
    ``holdout``), read once while the table file is unchanged (same size and modification time)."""
    directory = data_directory(data)
    path = metadata_path(directory, data.metadata)
    try:
        st = os.stat(path)
    except OSError:
        raise TableError(f"data.metadata: {path} does not exist") from None
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, data.kernel, data.alpha, data.beta, data.holdout)
    if key not in _TABLES:
        kw = {"kernel": data.kernel, "alpha": data.alpha, "beta": data.beta, "holdout": data.holdout}
        _TABLES.clear()
        _TABLES[key] = load_table(directory, path, check_files=check_files, **kw)
    return _TABLES[key]


def check_data_config(data: Any) -> None:
    """``ValueError`` naming the ``data.`` field when the section is out of range (before the table is read)."""
    if data.kernel not in KERNELS:
        raise ValueError(f"data.kernel must be one of {KERNELS}, got {data.kernel!r}")
    if data.color not in COLORS:
        raise ValueError(f"data.color must be one of {COLORS}, got {data.color!r}")
    if not 0.0 < data.holdout < 1.0:
        raise ValueError(f"data.holdout must lie in (0, 1), got {data.holdout}")
    if not (data.alpha > 0 and data.beta > 0):
        raise ValueError(f"data.alpha and data.beta must be > 0, got {data.alpha}, {data.beta}")


def _decode(tf, data, size: int, color: str):
    """Encoded image bytes -> ``(size, size, 3)`` uint8: decoded (grey or RGB), resized bilinearly.

    A JPEG at least twice ``size`` on its short side is decoded at 1/2, 1/4 or 1/8 of its side by libjpeg's
    DCT scaling (the largest that keeps the short side ``>= size``); an image still more than twice
    ``size`` is resized with an antialiasing filter, a smaller one by plain bilinear interpolation."""
    channels = 3 if color == "rgb" else 1

    def jpeg():
        hw = tf.io.extract_jpeg_shape(data)
        halvings = tf.reduce_sum(tf.cast(tf.minimum(hw[0], hw[1]) >= size * tf.constant([2, 4, 8]), tf.int32))
        return tf.switch_case(
            halvings, [lambda r=r: tf.io.decode_jpeg(data, channels=channels, ratio=r) for r in (1, 2, 4, 8)]
        )

    image = tf.cond(
        tf.io.is_jpeg(data), jpeg, lambda: tf.io.decode_image(data, channels=channels, expand_animations=False)
    )
    image = tf.ensure_shape(image, [None, None, channels])
    large = tf.minimum(tf.shape(image)[0], tf.shape(image)[1]) > 2 * size
    image = tf.cond(
        large,
        lambda: tf.image.resize(image, [size, size], method="bilinear", antialias=True),
        lambda: tf.image.resize(image, [size, size], method="bilinear"),
    )
    image = tf.cast(tf.round(tf.clip_by_value(image, 0.0, 255.0)), tf.uint8)
    return tf.image.grayscale_to_rgb(image) if color == "grayscale" else image


def _paths(table: FolderTable, rows) -> list:
    return [os.path.join(table.directory, f) for f in table.files[np.asarray(rows)]]


def load_images(table: FolderTable, rows, image_size: int, color: str = "rgb") -> np.ndarray:
    """``(len(rows), S, S, 3)`` uint8: the images of ``rows`` in order, decoded and resized as in training."""
    from gensim_jax.data._tf import tf

    ds = tf.data.Dataset.from_tensor_slices(tf.constant(_paths(table, rows)))
    ds = ds.map(lambda p: _decode(tf, tf.io.read_file(p), int(image_size), color), num_parallel_calls=-1)
    return np.stack(list(ds.batch(256).as_numpy_iterator())).reshape(-1, image_size, image_size, 3)[: len(rows)]


def folder_stream(
    table: FolderTable,
    rows,
    *,
    seed: int,
    shard,
    image_size: int,
    color: str = "rgb",
    keys: Sequence[str] = (),
    views: Optional[str] = None,
    augment=None,
):
    """``position -> iterator`` of this process's rows (``shard``) of every batch over the table's ``rows``.

    Positions index an endless stream of ``rows`` (:class:`~gensim_jax.data.indexing.StreamIndex`: a
    seeded permutation per epoch, the same global batch for any process count); ``tf.data`` reads,
    decodes and resizes each image on parallel workers. Batches: ``image`` ``(b, S, S, 3)`` uint8, the
    metadata ``keys``, ``mask``; ``views="device"``: also ``augment_seed`` ``(b, 2)`` int32 ``(aug_key,
    position)`` for views drawn in the step; ``views="host"``: ``view1``, ``view2`` by ``augment(image,
    seed)`` (:func:`gensim_jax.data.augment.simclr_augment`) instead of ``image``.
    """
    from gensim_jax.data._tf import tf
    from gensim_jax.data.indexing import StreamIndex, derive_key

    rows = np.asarray(rows)
    index = StreamIndex(len(rows), shard.batch, seed=seed, process_index=shard.index, process_count=shard.count)
    b, size, aug_key = index.batch_size, int(image_size), derive_key(seed, _AUG_TAG)
    paths = tf.constant(_paths(table, rows))
    meta = {k: tf.constant(np.asarray(table.metadata[k])[rows]) for k in keys}

    def step_rows(step):
        pos = index.positions(int(step))
        return np.stack([pos, index.indices(pos)], axis=1).astype(np.int64)

    def load(pr):
        image = _decode(tf, tf.io.read_file(tf.gather(paths, pr[1])), size, color)
        out = {"position": pr[0], **{k: tf.gather(v, pr[1]) for k, v in meta.items()}}
        if views == "host":
            seeds = tf.random.experimental.stateless_split(tf.stack([tf.constant(aug_key, tf.int64), pr[0]]), 2)
            for v in (0, 1):
                view = augment(image, seeds[v]) * 255.0
                out[f"view{v + 1}"] = tf.cast(tf.round(tf.clip_by_value(view, 0.0, 255.0)), tf.uint8)
        else:
            out["image"] = image
        return out

    def batches(position: int):
        ds = tf.data.Dataset.range(int(position), 2**62)
        ds = ds.map(lambda s: tf.ensure_shape(tf.numpy_function(step_rows, [s], tf.int64, stateful=False), (b, 2)))
        ds = ds.unbatch().map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        options = tf.data.Options()
        options.deterministic = True
        ds = ds.batch(b, drop_remainder=True).with_options(options).prefetch(tf.data.AUTOTUNE)
        for batch in ds.as_numpy_iterator():
            pos = batch.pop("position")
            out = {**batch, "mask": np.ones(pos.shape, bool)}
            if views == "device":
                if pos.size and int(pos.max()) >= 2**31:
                    raise ValueError(f"stream position {int(pos.max())} does not fit the int32 augment_seed")
                out["augment_seed"] = np.stack([np.full(pos.shape, aug_key), pos], axis=1).astype(np.int32)
            yield out

    return batches
