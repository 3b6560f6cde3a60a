"""Experiment: natural-image hierarchy (paper Sec. 3.3, Fig. 4B, Supplementary Fig. S3, Appendix N).

A ResNet is trained on ImageNet-1k (tfds ``imagenet2012``, ``paper``) or on synthetic images of a
small balanced class tree (``cpu_small``; :mod:`gensim_jax.data.hierarchy`) with one of three arms,
then the embeddings of held-out images are decoded at every level of the class tree by linear SVMs
(:mod:`gensim_jax.evaluation.hierarchy`). ``gensim`` regresses the cosine of the
embeddings onto the ``log s`` table of Eq. 4 on the class tree (the WordNet tree of ImageNet-1k,
or the synthetic one), mapped onto ``[0, 1]`` by ``objectives.gensim.target_transform="unit"`` (our
choice; the paper's literal targets ``raw`` (``log s``) and ``exp`` (``s``) are offered, and are out
of a cosine's reach: docs/results/imagenet_hierarchy.md); ``class_triplet`` is the linear triplet
loss on classes; ``simclr`` is InfoNCE on two augmented views (with random grayscale). ``pixels``
and ``initial`` rows are baselines.

Configs: ``paper`` (ResNet-50 at 224 px, Adam 1e-3, batch 256, 65 epochs of ImageNet-1k, 5 runs;
``--set data.data_dir=DIR`` names the prepared tfds directory) and ``cpu_small`` (a 1-1-1-1 ResNet
at 32 px, the 2-3-3 synthetic tree, 40 steps of 32). Sections: ``model``, ``data`` (dataset, its
directory and splits, the synthetic tree), ``objectives.{gensim,class_triplet,simclr}`` (each with
its own ``learning_rate``), ``eval``, ``optim``. docs/api/experiment_imagenet_hierarchy.md has the
details and the ImageNet preparation; run with ``gensim-jax train imagenet_hierarchy --config
cpu_small`` (``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from gensim_jax.config import with_overrides
from gensim_jax.data import hierarchy as hierarchy_data
from gensim_jax.evaluation import hierarchy
from gensim_jax.evaluation.hierarchy import format_table, pixel_embedding
from gensim_jax.experiments import _table_arms
from gensim_jax.kernels.hierarchy import log_similarity_table
from gensim_jax.kernels.targets import TABLE_TRANSFORMS, transform_table
from gensim_jax.models import get_model
from gensim_jax.training import TableTarget
from gensim_jax.training.experiment import ArmConfig, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = _table_arms.TABLE_OBJECTIVES
TARGET_TRANSFORMS = TABLE_TRANSFORMS


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the ResNet."""

    name: str = "resnet50"
    stage_sizes: Optional[tuple[int, ...]] = None  # override the ResNet's blocks per stage (tiny models)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: ImageNet-1k from a prepared tfds directory, or the synthetic images of a balanced class tree."""

    image_size: int = 224
    dataset: str = "imagenet2012"
    data_dir: Optional[str] = None  # tfds data directory holding the prepared imagenet2012
    train_split: str = "train"
    eval_split: str = "validation"
    shuffle_buffer: int = 16_384
    branching: tuple[int, ...] = (2, 3, 3)  # synthetic class tree
    train_per_leaf: int = 24  # synthetic training images per class
    synthetic_noise: float = 0.1  # pixel-noise standard deviation of the synthetic images
    augment: str = "auto"  # SimCLR views: "host" (TensorFlow in tf.data), "device" (in the step), "auto" (by backend)


@dataclasses.dataclass(frozen=True)
class GenSimArm(ArmConfig):
    """``objectives.gensim``: the map of the hierarchy's ``log s`` table onto the cosine's range."""

    target_transform: str = "unit"


@dataclasses.dataclass(frozen=True)
class SimCLRArm(_table_arms.SimCLRArm):
    """``objectives.simclr``: the Geoclidean SimCLR plus random grayscale (Appendix N)."""

    projection_dims: tuple[int, ...] = (2048, 128)
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

    num_runs: int = 5
    arms: tuple[str, ...] = OBJECTIVES
    epochs: float = 65.0
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


def hierarchy_log_table(config: Config) -> np.ndarray:
    """``(C, C)`` float64 table of ``log s`` (paper Eq. 4) of the classes, in label order."""
    return log_similarity_table(*hierarchy_data.class_tree(config.data))


def gensim_target(config: Config) -> TableTarget:
    """The ``TableTarget`` of the gensim objective: the transformed Eq. 4 table, gathered by ``label``.

    :func:`~gensim_jax.kernels.targets.transform_table` with ``config.objectives.gensim.target_transform`` and its
    constants from the whole class table (``"unit"``: ``(L - min) / (max - min)``, see the module
    docstring).
    """
    return TableTarget.create(
        transform_table(hierarchy_log_table(config), config.objectives.gensim.target_transform), key="label"
    )


def model_kwargs(objective: Optional[str], config: Config) -> dict:
    """Keyword overrides of ``get_model(config.model.name, ...)``: no classifier; a projection head for simclr."""
    return _table_arms.encoder_kwargs(objective, config)


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective`` (:func:`_table_arms.table_objective`)."""
    return _table_arms.table_objective(objective, config, lambda: gensim_target(config))


def heldout_images(config: Config) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` of the held-out evaluation set (:func:`gensim_jax.data.hierarchy.heldout_images`)."""
    tree, nodes = hierarchy_data.class_tree(config.data) if config.data.dataset == "synthetic" else (None, None)
    return hierarchy_data.heldout_images(config.data, config.eval, tree, nodes, attribute_seed=config.seed)


def evaluate_embedding(embeddings: np.ndarray, labels: np.ndarray, config: Config) -> dict:
    """:func:`~gensim_jax.evaluation.hierarchy.evaluate_embedding` on the config's class tree."""
    tree, nodes = hierarchy_data.class_tree(config.data)
    return hierarchy.evaluate_embedding(
        embeddings, labels, tree, nodes, folds=config.eval.folds, seed=config.eval.seed, n_jobs=config.eval.svm_n_jobs
    )


@dataclasses.dataclass
class Data:
    """What every run shares: the synthetic training source (None for ImageNet) and the held-out set."""

    source: Optional[hierarchy_data.HierarchySource]
    images: np.ndarray
    labels: np.ndarray


class ImagenetHierarchy(ImageExperiment):
    """Natural-image hierarchy: GenSim (Eq. 4) vs class triplets vs SimCLR, decoded per tree level (Fig. 4B)."""

    name = "imagenet_hierarchy"
    Config = Config
    CONFIGS = CONFIGS
    NOTES = {
        "paper": "ResNet-50 on ImageNet-1k (tfds), 5 runs x 3 arms x 65 epochs: for accelerators",
        "cpu_small": "synthetic 2x3x3 class tree, ResNet-18 at 32 px, 3 arms x 40 steps: 3 min on 2 CPU cores",
    }
    OBJECTIVES = OBJECTIVES
    AUGMENT_PRESET = "imagenet"

    def validate(self, config: Config) -> Config:
        if config.data.dataset == "imagenet2012" and config.data.augment == "device":
            raise ValueError(
                "data.augment='device' needs data.dataset='synthetic' for now: the tfds ImageNet stream "
                "decodes, crops and flips on the host (set data.augment=host or auto)"
            )
        if config.data.dataset == "imagenet2012" and config.data.augment == "auto":
            config = with_overrides(config, {"data.augment": "host"})  # the tfds stream augments on the host
        config = super().validate(config)
        data, ev, simclr = config.data, config.eval, config.objectives.simclr
        transform = config.objectives.gensim.target_transform
        if transform not in TARGET_TRANSFORMS:
            raise ValueError(
                f"objectives.gensim.target_transform must be one of {TARGET_TRANSFORMS}, got {transform!r}"
            )
        hierarchy_data.check_data_config(data)
        n = hierarchy_data.num_train_images(data)
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
        return config

    def prepare(self, config: Config, training: bool = True) -> Data:
        """ImageNet: prepared in ``data.data_dir`` (else :class:`ImageNetNotPrepared`); the synthetic source
        (``training``); then the held-out images."""
        source = None
        if training and config.data.dataset == "imagenet2012":
            hierarchy_data.check_imagenet_prepared(config.data.data_dir)
        elif training:
            tree, nodes = hierarchy_data.class_tree(config.data)
            kw = {"attribute_seed": config.seed, "image_seed": config.seed, "noise": config.data.synthetic_noise}
            source = hierarchy_data.HierarchySource(
                tree, nodes, config.data.train_per_leaf, config.data.image_size, **kw
            )
        return Data(source, *heldout_images(config))

    def num_train_examples(self, config: Config, data) -> int:
        return hierarchy_data.num_train_images(config.data)

    def arm(self, name: str, config: Config, data: Optional[Data]):
        kw = model_kwargs(name, config)
        batch_kw = {"data": config.data, "simclr": config.objectives.simclr}

        def evaluate(model, variables, seed):
            emb = hierarchy.model_embedding(model, variables, data.images, config.eval.batch_size)
            return evaluate_embedding(emb, data.labels, config)

        return self.image_arm(
            name,
            config,
            model=get_model(config.model.name, **kw),
            model_name=config.model.name,
            model_kwargs=kw,
            objective=make_objective(name, config),
            batches=lambda seed, shard: hierarchy_data.arm_batches(
                name, seed, shard, augment=config.data.augment, source=data.source, **batch_kw
            ),
            evaluate=evaluate,
        )

    def baselines(self, config: Config, data: Data) -> dict:
        """``pixels`` (deterministic: one entry) and ``initial``: the encoder of the first objective before
        training, one entry per run seed ``seed + r`` (the initialisations the runs start from)."""
        first = self.arm(config.arms[0], config, data)
        seeds = range(config.seed, config.seed + config.num_runs)
        return {
            "pixels": [evaluate_embedding(pixel_embedding(data.images, config.eval.pixel_size), data.labels, config)],
            "initial": [first.evaluation(first.model, first.init_variables(s), s) for s in seeds],
        }

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        num_classes = len(hierarchy_data.class_tree(config.data)[1])
        return {**hierarchy.experiment_results(evaluations, data.labels, num_classes), "training": training}

    def plot(self, results: dict, path) -> None:
        hierarchy.plot_hierarchy_summary(results, path)

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = ImagenetHierarchy()
