"""Experiment: natural-image hierarchy (paper Sec. 3.3, Fig. 4B, Supplementary Fig. S3, Appendix N).

A ResNet is trained on ImageNet-1k (tfds ``imagenet2012``; ``paper``) or on a synthetic image set
generated from a small balanced class tree (``cpu_small``) with one of three objectives, then the
embeddings of held-out images are decoded at every level of the class tree
(``gensim_jax.evaluation.hierarchy_decoding``):

``gensim``
    GenSim regression (paper Eq. 2 with the hierarchy kernel, Eq. 4; Appendix N: "the mean-squared
    error between the cosine similarities between two image embeddings and their generative
    similarity measure as defined in Equation 4"), over all ``B (B - 1)`` pairs of a batch:
    ``(cos(z_i, z_j) - T[y_i, y_j])^2`` with ``y`` the class label and ``T`` the transformed
    ``log s`` table of Eq. 4 on the class tree (``kernels.hierarchy.log_similarity_table``; edge
    probabilities uniform per node, as in the paper). ``log s`` is 0 for classes that part at the
    root and grows with the depth of the lowest common ancestor: on the WordNet tree of ImageNet-1k
    up to 19.58 (two images of the deepest classes; same-class values range from 1.70 to 19.58),
    on the 2-3-3 synthetic tree ``0, log 2, log 4, log(26/3) = 2.16``. **Target transform**
    (``objectives.gensim.target_transform="unit"``, our choice, as in the Geoclidean experiment):
    ``T = (log s - min) / (max - min)`` over the class table, an affine map onto ``[0, 1]``: the
    most similar pair (two images of the deepest class) -> cosine 1, classes parting at the root
    -> cosine 0. The paper's literal targets are offered: ``"raw"``, ``log s`` itself (Sec. 3.3:
    "the mean squared error between the cosine similarity and log[s(x_i, x_j)]"), which lies in
    ``[0, 19.58]`` on ImageNet, above 1 for every same-class pair, and on the synthetic tree above 1
    for K >= 2; and ``"exp"``, ``s`` itself (Appendix N: "their generative similarity measure as
    defined in Equation 4"), ``>= 1`` for every pair. Both are out of a cosine's reach.
    ``"affine"`` (onto ``[-1, 1]``) and ``"standardized"`` (z-score over the class table) too.
    The maps are compared in ``docs/results/imagenet_hierarchy.md``
    (``scripts/hierarchy_target_maps.py``).
``class_triplet``
    The class-based baseline (Appendix N, "similar ... as in the Geoclidean experiment"): anchor
    and positive of one class, negative of another, linear loss ``d(a, p) - d(a, n)`` with
    Euclidean ``d`` (Eq. A2 with ``l(x) = x``; unbounded below, ``objectives.class_triplet.form="softplus"`` is a
    bounded variant).
``simclr``
    SimCLR (Appendix N: the Geoclidean objective and augmentations -- random resized crop,
    horizontal flip, Gaussian blur -- plus random grayscale, ``objectives.simclr.grayscale_p = 0.2``), InfoNCE on a
    projection head; ``objectives.simclr.variant="cross_view"`` is the one-directional form printed in
    Appendix M, ``"ntxent"`` SimCLR's.

Data. ``data.dataset="imagenet2012"`` reads a prepared tfds directory (``data.data_dir``; ImageNet cannot be
downloaded automatically: see :mod:`gensim_jax.data.imagenet` and ``docs/api/experiment_imagenet_hierarchy.md``
for the one-off preparation); training images get the Inception crop and flip
(``imagenet_dataset(train=True)``), evaluation images the central crop. tfds label ``y`` is class
``y`` of :func:`~gensim_jax.kernels.hierarchy.imagenet1k_hierarchy` (WordNet 3.0, 19 levels).
Class triplets are formed on the record stream by pairing each image with the next image of the
same class (``tf.data`` ``group_by_window``) and taking as negative the positive of the next pair
of another class in the batch (:func:`imagenet_triplet_batches`). ``data.dataset="synthetic"`` renders
the images of :func:`~gensim_jax.stimuli.hierarchy.hierarchy_images`: one coloured grating disc per image whose colour,
orientation and spatial frequency are sums of per-node offsets along the root-to-leaf path of
``balanced_tree(branching)``, at a random position, size and phase, with pixel noise; that tree is
the one the GenSim table and the decoding levels come from.

Evaluation (Appendix N): embeddings (penultimate layer, before any projection head) of held-out
images -- the first ``eval.num_images`` of the ImageNet validation split, or ``eval.per_leaf``
fresh images per synthetic class -- are decoded with one linear SVM per tree level in 3-fold
cross-validation (:func:`~gensim_jax.evaluation.hierarchy_decoding.decode_levels`); reported per
level: accuracy, uniform chance ``1 / n_l`` and majority chance; aggregate
``sum_l log(a_l / c_l)`` with either chance (levels with one label are skipped). Rows ``pixels``
(images area-downsampled to ``eval.pixel_size``, flattened) and ``initial`` (the encoder before
training, at each run's seed) are baselines.

Configs: ``paper`` (ResNet-50 at 224 x 224, Adam 1e-3, batch 256, 65 epochs of ImageNet-1k, 5 runs)
and ``cpu_small`` (a 1-1-1-1 basic ResNet at 32 x 32, 2-3-3 synthetic tree, 432 training images,
40 steps of 32, 1 run; 3 min of CPU time on 2 cores, more wall time on a loaded machine).
Sections: ``model`` (``name``, ``stage_sizes``), ``data`` (``dataset``, ``data_dir``, splits,
``image_size``, the synthetic tree), ``objectives.gensim`` (``target_transform``),
``objectives.class_triplet``, ``objectives.simclr`` (augmentations, projection head), ``eval``
(``seed``, ``num_images``, ``per_leaf``, ``folds``, ``batch_size``, ``pixel_size``), ``optim``.

Declaration :data:`EXPERIMENT`; run with ``gensim-jax train imagenet_hierarchy --config cpu_small``
(``python -m train`` in a checkout). The synthetic images are those of
:func:`gensim_jax.stimuli.hierarchy.hierarchy_images`; the target maps are
:func:`gensim_jax.kernels.targets.transform_table`'s.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from gensim_jax.data.sources import ArraySource
from gensim_jax.evaluation import figures, hierarchy_evaluator
from gensim_jax.evaluation.embed import embed_images
from gensim_jax.evaluation.hierarchy_evaluator import as_model_input, format_table, pixel_embedding
from gensim_jax.experiments import _table_arms
from gensim_jax.kernels.hierarchy import Tree, imagenet1k_hierarchy, log_similarity_table
from gensim_jax.kernels.targets import TABLE_TRANSFORMS, transform_table
from gensim_jax.models import get_model
from gensim_jax.stimuli.hierarchy import balanced_tree, hierarchy_images
from gensim_jax.training import TableTarget
from gensim_jax.training.config import with_overrides
from gensim_jax.training.experiment import ArmConfig, HostShard, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = _table_arms.TABLE_OBJECTIVES
TARGET_TRANSFORMS = TABLE_TRANSFORMS
DATASETS = ("imagenet2012", "synthetic")
IMAGENET_TRAIN_IMAGES = 1_281_167


class ImageNetNotPrepared(FileNotFoundError, ValueError):
    """tfds ``imagenet2012`` is not prepared in ``data_dir`` (a ``ValueError`` too: the CLI prints one line)."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the ResNet."""

    name: str = "resnet50"
    stage_sizes: Optional[tuple] = None  # override the ResNet's blocks per stage (tiny models)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: ImageNet-1k from a prepared tfds directory, or the synthetic images of a balanced class tree."""

    image_size: int = 224
    dataset: str = "imagenet2012"
    data_dir: Optional[str] = None  # tfds data directory holding the prepared imagenet2012
    train_split: str = "train"
    eval_split: str = "validation"
    shuffle_buffer: int = 16_384
    branching: tuple = (2, 3, 3)  # synthetic class tree
    train_per_leaf: int = 24  # synthetic training images per class
    synthetic_noise: float = 0.1  # pixel-noise standard deviation of the synthetic images


@dataclasses.dataclass(frozen=True)
class GenSimArm(ArmConfig):
    """``objectives.gensim``: the map of the hierarchy's ``log s`` table onto the cosine's range."""

    target_transform: str = "unit"


@dataclasses.dataclass(frozen=True)
class SimCLRArm(_table_arms.SimCLRArm):
    """``objectives.simclr``: the Geoclidean SimCLR plus random grayscale (Appendix N)."""

    projection_dims: tuple = (2048, 128)
    grayscale_p: float = 0.2


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: one section per arm (an arm's ``learning_rate`` None: ``optim.learning_rate``)."""

    gensim: GenSimArm = GenSimArm()
    class_triplet: _table_arms.TripletArm = _table_arms.TripletArm()
    simclr: SimCLRArm = SimCLRArm()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: the held-out images and the per-level SVM decoding."""

    seed: int = 10_000
    num_images: int = 10_000  # ImageNet: first images of data.eval_split
    per_leaf: int = 10  # synthetic: held-out images per class
    folds: int = 3
    batch_size: int = 250
    pixel_size: int = 32
    svm_n_jobs: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix N: ResNet-50, Adam 1e-3, batch 256, 65 epochs over ImageNet-1k at 224 x 224, 5 runs."""

    seed: int = 0
    num_runs: int = 5
    arms: tuple = OBJECTIVES
    epochs: float = 65.0
    num_steps: Optional[int] = None  # overrides epochs when set
    batch_size: int = 256  # global batch (split over hosts and devices)
    optim: OptimConfig = OptimConfig(learning_rate=1e-3)
    checkpoint_every: int = 5000
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


CONFIGS = {
    "paper": Config(),
    # About 3 min of CPU time on 2 cores: tiny ResNet, 32 x 32, 18 synthetic classes x 24 images,
    # 40 steps of 32, 1 run.
    "cpu_small": with_overrides(
        Config(),
        {
            "num_runs": 1,
            "model.name": "resnet18",
            "model.stage_sizes": (1, 1, 1, 1),
            "data.image_size": 32,
            "num_steps": 40,
            "batch_size": 32,
            "optim.learning_rate": 1e-3,
            "data.dataset": "synthetic",
            "data.branching": (2, 3, 3),
            "data.train_per_leaf": 24,
            "eval.per_leaf": 10,
            "objectives.simclr.projection_dims": (128, 64),
            "eval.batch_size": 180,
            "checkpoint_every": 10_000,
        },
    ),
}


def num_train_images(config: Config) -> int:
    """Training-set size: ImageNet-1k's 1,281,167 or ``prod(branching) * train_per_leaf``."""
    if config.data.dataset == "imagenet2012":
        return IMAGENET_TRAIN_IMAGES
    return math.prod(int(b) for b in config.data.branching) * int(config.data.train_per_leaf)


# --------------------------------------------------------------------------------------------
# Class tree and GenSim target
# --------------------------------------------------------------------------------------------


def class_tree(config: Config) -> tuple[Tree, np.ndarray]:
    """``(tree, class_nodes)``: the class tree and the node of each class label.

    ImageNet: the WordNet tree of :func:`imagenet1k_hierarchy` (label ``y`` is node ``y``).
    Synthetic: ``balanced_tree(branching)``, class ``c`` is leaf ``tree.leaves[c]``.
    """
    if config.data.dataset == "imagenet2012":
        h = imagenet1k_hierarchy()
        return h.tree, np.asarray(h.class_nodes)
    tree = balanced_tree(config.data.branching)
    return tree, tree.leaves


def hierarchy_log_table(config: Config) -> np.ndarray:
    """``(C, C)`` float64 table of ``log s`` (paper Eq. 4) of the classes, in label order."""
    tree, nodes = class_tree(config)
    return log_similarity_table(tree, nodes)


def gensim_target(config: Config) -> TableTarget:
    """The ``TableTarget`` of the gensim objective: the transformed Eq. 4 table, gathered by ``label``.

    :func:`~gensim_jax.kernels.targets.transform_table` with ``config.objectives.gensim.target_transform`` and its
    constants from the whole class table (``"unit"``: ``(L - min) / (max - min)``, see the module
    docstring).
    """
    return TableTarget.create(
        transform_table(hierarchy_log_table(config), config.objectives.gensim.target_transform), key="label"
    )


# --------------------------------------------------------------------------------------------
# Synthetic hierarchical images (cpu_small): gensim_jax.stimuli.hierarchy
# --------------------------------------------------------------------------------------------


class HierarchySource(ArraySource):
    """In-memory source of :func:`~gensim_jax.stimuli.hierarchy.hierarchy_images` of ``class_tree(config)``.

    Example ``i``: ``image`` uint8 ``(S, S, 3)`` and ``label``.

    The class attributes come from ``config.seed`` (shared by the training and held-out sets), the
    images from ``image_seed``.
    """

    def __init__(self, config: Config, per_class: int, image_seed: int):
        tree, nodes = class_tree(config)
        images, labels = hierarchy_images(
            tree,
            nodes,
            per_class,
            config.data.image_size,
            attribute_seed=config.seed,
            image_seed=image_seed,
            noise=config.data.synthetic_noise,
        )
        super().__init__({"image": images, "label": labels})

    @property
    def images(self) -> np.ndarray:
        return self.arrays["image"]

    @property
    def label(self) -> np.ndarray:
        return self.arrays["label"]

    def metadata(self, key: str) -> np.ndarray:
        if key != "label":
            raise ValueError(f"HierarchySource has metadata 'label' only, got {key!r}")
        return self.label


# --------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------


#: The stream of each objective (:data:`gensim_jax.data.streams.STREAM_KINDS`).
STREAMS = {"gensim": "labelled", "class_triplet": "triplets", "simclr": "views"}


def make_batches(objective: str, config: Config, seed: int, shard: HostShard, source: Optional[HierarchySource] = None):
    """``position -> iterator`` of this process's rows (``shard``) of the batches of ``objective``: the synthetic
    source through :func:`gensim_jax.data.streams.stream`, ImageNet through
    :func:`gensim_jax.data.imagenet.imagenet_stream` (each process reads and decodes its own shard).
    Images are ``uint8``, normalised in the step."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if config.data.dataset == "imagenet2012":
        from gensim_jax.data.imagenet import imagenet_stream

        return imagenet_stream(
            STREAMS[objective],
            config.data.train_split,
            seed=seed,
            shard=shard,
            data_dir=config.data.data_dir,
            image_size=config.data.image_size,
            shuffle_buffer=config.data.shuffle_buffer,
            grayscale_p=config.objectives.simclr.grayscale_p,
            blur_p=config.objectives.simclr.blur_p,
        )
    if source is None:
        raise ValueError("the synthetic dataset needs its HierarchySource (source=...)")
    from gensim_jax.data.streams import stream

    aug = None
    if objective == "simclr":  # TensorFlow: imported by the SimCLR arm only
        from gensim_jax.data.augment import simclr_augment

        s = config.data.image_size
        aug = simclr_augment(
            (s, s),
            crop_scale=tuple(config.objectives.simclr.crop_scale),
            blur_p=config.objectives.simclr.blur_p,
            grayscale_p=config.objectives.simclr.grayscale_p,
        )
    return stream(STREAMS[objective], source, seed=seed, shard=shard, keys=("label",), group_key="label", augment=aug)


def check_imagenet(config: Config) -> None:
    """Raise :class:`ImageNetNotPrepared` (a ``FileNotFoundError``) with the preparation steps unless
    ``data_dir`` holds a prepared imagenet2012."""
    import tensorflow_datasets as tfds

    builder = tfds.builder("imagenet2012", data_dir=config.data.data_dir)
    if not builder.is_prepared():
        raise ImageNetNotPrepared(
            f"tfds imagenet2012 is not prepared in data.data_dir={config.data.data_dir!r} (looked in {builder.data_dir}). "
            "ImageNet cannot be downloaded automatically: put ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar "
            "in MANUAL_DIR, run gensim_jax.data.imagenet.prepare_imagenet(DATA_DIR, MANUAL_DIR) once, then pass "
            "--set data.data_dir=DATA_DIR (see docs/api/experiment_imagenet_hierarchy.md), or use --config cpu_small."
        )


# --------------------------------------------------------------------------------------------
# Model and objective
# --------------------------------------------------------------------------------------------


def model_kwargs(objective: Optional[str], config: Config) -> dict:
    """Keyword overrides of ``get_model(config.model.name, ...)``: no classifier; a projection head for simclr."""
    return _table_arms.encoder_kwargs(objective, config)


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective`` (:func:`_table_arms.table_objective`)."""
    return _table_arms.table_objective(objective, config, lambda: gensim_target(config))


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def heldout_images(config: Config) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` of the held-out evaluation set.

    Synthetic: ``eval.per_leaf`` fresh images per class (``image_seed = eval.seed``), uint8.
    ImageNet: the first ``eval.num_images`` of ``data.eval_split`` with the central crop, normalised
    float16 (to halve host memory; 10,000 images at 224 take 3 GB).
    """
    if config.data.dataset == "synthetic":
        src = HierarchySource(config, config.eval.per_leaf, image_seed=config.eval.seed)
        return src.images, src.label
    from gensim_jax.data.imagenet import imagenet_dataset
    from gensim_jax.data.pipelines import as_numpy

    b = min(config.eval.batch_size, config.eval.num_images)
    steps = -(-config.eval.num_images // b)
    images, labels = [], []
    for batch in as_numpy(
        imagenet_dataset(
            config.data.eval_split,
            b,
            seed=config.eval.seed,
            train=False,
            data_dir=config.data.data_dir,
            image_size=config.data.image_size,
            num_steps=steps,
        )
    ):
        keep = batch["mask"]
        images.append(batch["image"][keep].astype(np.float16))
        labels.append(batch["label"][keep])
    images, labels = np.concatenate(images)[: config.eval.num_images], np.concatenate(labels)[: config.eval.num_images]
    return images, labels.astype(np.int32)


def model_embedding(model, variables, images: np.ndarray, batch_size: int) -> np.ndarray:
    """``embed_images`` (penultimate layer) of the held-out images, in chunks of at most 2,000 images."""
    out = []
    for start in range(0, len(images), 2000):
        out.append(embed_images(model, variables, as_model_input(images[start : start + 2000]), batch_size=batch_size))
    return np.concatenate(out)


def evaluate_embedding(embeddings: np.ndarray, labels: np.ndarray, config: Config) -> dict:
    """:func:`~gensim_jax.evaluation.hierarchy_evaluator.evaluate_embedding` on the config's class tree."""
    tree, nodes = class_tree(config)
    return hierarchy_evaluator.evaluate_embedding(
        embeddings, labels, tree, nodes, folds=config.eval.folds, seed=config.eval.seed, n_jobs=config.eval.svm_n_jobs
    )


# --------------------------------------------------------------------------------------------
# Declaration
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Data:
    """What every run shares: the synthetic training source (None for ImageNet) and the held-out set."""

    source: Optional[HierarchySource]
    images: np.ndarray
    labels: np.ndarray


class ImagenetHierarchy(ImageExperiment):
    """Natural-image hierarchy: GenSim (Eq. 4) vs class triplets vs SimCLR, decoded per tree level (Fig. 4B)."""

    name = "imagenet_hierarchy"
    Config = Config
    CONFIGS = CONFIGS
    OBJECTIVES = OBJECTIVES

    def validate(self, config: Config) -> Config:
        super().validate(config)
        data, ev, simclr = config.data, config.eval, config.objectives.simclr
        transform = config.objectives.gensim.target_transform
        if transform not in TARGET_TRANSFORMS:
            raise ValueError(
                f"objectives.gensim.target_transform must be one of {TARGET_TRANSFORMS}, got {transform!r}"
            )
        if data.dataset not in DATASETS:
            raise ValueError(f"data.dataset must be one of {DATASETS}, got {data.dataset!r}")
        if not data.branching or any(int(b) < 1 for b in data.branching):
            raise ValueError(f"data.branching must be a non-empty tuple of positive ints, got {data.branching}")
        if data.dataset == "synthetic" and math.prod(data.branching) < 2:
            raise ValueError(f"data.branching must give at least 2 classes, got {data.branching}")
        if data.train_per_leaf < 2:
            raise ValueError(
                f"data.train_per_leaf must be >= 2 (triplets need a positive partner), got {data.train_per_leaf}"
            )
        n = num_train_images(config)
        if config.batch_size < 2 or config.batch_size > n:
            raise ValueError(f"batch_size must lie in [2, the {n} training images (data)], got {config.batch_size}")
        if ev.folds < 2:
            raise ValueError(f"eval.folds must be >= 2, got {ev.folds}")
        if ev.per_leaf < ev.folds:
            raise ValueError(f"eval.per_leaf must be >= eval.folds={ev.folds} (stratified CV), got {ev.per_leaf}")
        if ev.num_images < 2 * ev.folds:
            raise ValueError(f"eval.num_images must be >= 2 * eval.folds, got {ev.num_images}")
        if ev.pixel_size < 1 or ev.pixel_size > data.image_size:
            raise ValueError(f"eval.pixel_size must lie in [1, data.image_size={data.image_size}], got {ev.pixel_size}")
        if not 0.0 <= simclr.grayscale_p <= 1.0 or not 0.0 <= simclr.blur_p <= 1.0:
            raise ValueError(
                "objectives.simclr.grayscale_p and objectives.simclr.blur_p must lie in [0, 1], "
                f"got {simclr.grayscale_p}, {simclr.blur_p}"
            )
        if data.synthetic_noise < 0:
            raise ValueError(f"data.synthetic_noise must be >= 0, got {data.synthetic_noise}")
        return config

    def prepare(self, config: Config) -> Data:
        """ImageNet: :func:`check_imagenet` first (:class:`ImageNetNotPrepared`); then the held-out images."""
        if config.data.dataset == "imagenet2012":
            check_imagenet(config)
        source = (
            HierarchySource(config, config.data.train_per_leaf, image_seed=config.seed)
            if config.data.dataset == "synthetic"
            else None
        )
        images, labels = heldout_images(config)
        return Data(source, images, labels)

    def prepare_evaluation(self, config: Config) -> Data:  # the held-out set only
        return Data(None, *heldout_images(config))

    def num_train_examples(self, config: Config, data) -> int:
        return num_train_images(config)

    def model(self, arm: Optional[str], config: Config):
        kw = model_kwargs(arm, config)
        return get_model(config.model.name, **kw), config.model.name, kw

    def objective(self, arm: str, config: Config):
        return make_objective(arm, config)

    def batches(self, arm: str, config: Config, data: Data, seed: int, shard: HostShard):
        return make_batches(arm, config, seed, shard, data.source)

    def baselines(self, config: Config, data: Data) -> dict:
        """``pixels`` (deterministic: one entry) and ``initial``: the encoder of the first objective before
        training, one entry per run seed ``seed + r`` (the initialisations the runs start from)."""
        arm = config.arms[0]
        model = self.model(arm, config)[0]
        initial = []
        for r in range(config.num_runs):
            variables = self.init_variables(arm, config, model, config.seed + r)
            emb = model_embedding(model, variables, data.images, config.eval.batch_size)
            initial.append(evaluate_embedding(emb, data.labels, config))
        return {
            "pixels": [evaluate_embedding(pixel_embedding(data.images, config.eval.pixel_size), data.labels, config)],
            "initial": initial,
        }

    def evaluate_run(self, arm: str, config: Config, data: Data, model, variables, seed: int) -> dict:
        emb = model_embedding(model, variables, data.images, config.eval.batch_size)
        return evaluate_embedding(emb, data.labels, config)

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        _, nodes = class_tree(config)
        return {
            "num_classes": int(len(nodes)),
            "num_eval_images": int(len(data.labels)),
            "eval_label_counts": np.bincount(data.labels, minlength=len(nodes)).tolist(),
            "summary": {name: hierarchy_evaluator.summarize_runs(per_run) for name, per_run in evaluations.items()},
            "per_run": evaluations,
            "training": training,
        }

    def plot(self, results: dict, path) -> None:
        figures.plot_hierarchy_summary(results, path)

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = ImagenetHierarchy()

__all__ = [
    "CONFIGS",
    "Config",
    "DATASETS",
    "Data",
    "EXPERIMENT",
    "HierarchySource",
    "ImageNetNotPrepared",
    "ImagenetHierarchy",
    "OBJECTIVES",
    "STREAMS",
    "TARGET_TRANSFORMS",
    "check_imagenet",
    "class_tree",
    "evaluate_embedding",
    "format_table",
    "gensim_target",
    "heldout_images",
    "hierarchy_log_table",
    "make_batches",
    "make_objective",
    "model_embedding",
    "model_kwargs",
    "num_train_images",
    "pixel_embedding",
]
