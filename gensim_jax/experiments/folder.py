"""Experiment: GenSim on your own folder of images and a metadata table, no code (docs/FOLDER.md).

``data.dir`` is a folder of PNG or JPEG images and ``data.metadata`` a CSV or Parquet table with a
``file`` column and the generative metadata of each image: binary feature columns (Beta-Bernoulli,
paper Eq. I3), a ``class_path`` (the hierarchy kernel of Eq. 4), a ``label`` (categorical), a
``program`` (tree kernel, Appendix M) or continuous columns with a ``component`` (Gaussian mixture,
Eq. H2); ``data.kernel=auto`` picks the kernel from the columns (:mod:`gensim_jax.data.folder`).
A registry encoder (``model.name``, CORnet-Z by default) is trained with one of three arms:
``gensim`` regresses the cosine of the embeddings of all batch pairs onto ``log s`` computed in the
step from the metadata (mapped onto ``[0, 1]`` with the constants of the table: ``unit``; the
Gaussian mixture onto ``[-1, 1]`` with those of the training points: ``affine``); ``supervised``
is cross entropy on ``label`` or the ``class_path`` (where the table has one); ``simclr`` is
NT-Xent on two views drawn in the step. The held-out images (a hash of ``file`` below
``data.holdout``) are scored by :mod:`gensim_jax.evaluation.folder`: ``heldout_spearman`` between the
encoder's similarity and ``log s`` over their pairs, k-NN accuracy per ``class_path`` level, the
figure; the untrained encoder and the pixels are reference rows.

Configs: ``paper`` (224 px, 50 epochs, 3 runs: for accelerators), ``cpu_small`` (64 px, 150 steps
of 32, 2 runs) and ``demo`` (``cpu_small`` on the example folder of
:mod:`gensim_jax.stimuli.folder_example`, written once when ``data.dir`` is unset). Run with
``gensim-jax train folder --config cpu_small --set data.dir=DIR data.metadata=DIR/metadata.csv``.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from gensim_jax.config import with_overrides
from gensim_jax.data import folder as folder_data
from gensim_jax.evaluation import folder as protocol
from gensim_jax.evaluation.embed import encoder
from gensim_jax.evaluation.hierarchy import pixel_embedding
from gensim_jax.experiments import _table_arms
from gensim_jax.kernels.targets import transform_table
from gensim_jax.models import get_model
from gensim_jax.training import CrossEntropy, GaussianMixtureTarget, GenSimRegression, NTXent, TableTarget
from gensim_jax.training.experiment import ArmConfig, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = ("gensim", "supervised", "simclr")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: the folder, its table and kernel, the held-out fraction, how images are loaded."""

    dir: Optional[str] = None  # the folder of images (the table's file column is relative to it)
    metadata: str = "metadata.csv"  # CSV or Parquet table (relative to data.dir, or absolute)
    kernel: str = "auto"  # auto | beta_bernoulli | hierarchy | categorical | tree | gaussian_mixture
    alpha: float = 1.0  # Beta-Bernoulli prior (Eq. I3)
    beta: float = 1.0
    holdout: float = 0.2  # fraction of files held out (by a hash of the file name)
    image_size: int = 224
    color: str = "rgb"  # rgb | grayscale (every image made grey, as 3 equal channels)
    augment: str = "auto"  # SimCLR views: "host" (TensorFlow in tf.data), "device" (in the step), "auto"
    example: Optional[str] = None  # with data.dir unset: the example folder of this kind (features | class_path)
    example_images: int = 300


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the registry encoder."""

    name: str = "cornet_z"


@dataclasses.dataclass(frozen=True)
class SimCLRArm(_table_arms.SimCLRArm):
    """``objectives.simclr``: NT-Xent, views by crop, flip, grayscale and blur (the ImageNet preset)."""

    projection_dims: tuple[int, ...] = (512, 128)
    projection_batchnorm: bool = True
    grayscale_p: float = 0.2


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: one section per arm (an arm's ``learning_rate`` None: ``optim.learning_rate``)."""

    gensim: ArmConfig = ArmConfig()
    supervised: ArmConfig = ArmConfig()
    simclr: SimCLRArm = SimCLRArm()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: the held-out images scored (at most ``max_images``), k-NN, figure bins, pixel baseline."""

    max_images: int = 1000
    knn_k: int = 5
    num_bins: int = 20
    pixel_size: int = 16
    batch_size: int = 250


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """CORnet-Z at 224 px, Adam 1e-3, batch 128, 50 epochs of the training images, 3 runs."""

    num_runs: int = 3
    arms: tuple[str, ...] = OBJECTIVES
    epochs: float = 50.0
    batch_size: int = 128
    optim: OptimConfig = OptimConfig(learning_rate=1e-3)
    checkpoint_every: int = 2000
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


# fmt: off
CONFIGS = {
    "paper": Config(),
    "cpu_small": with_overrides(Config(), {
        "num_runs": 2, "num_steps": 150, "batch_size": 32, "data.image_size": 64, "checkpoint_every": 10_000,
        "objectives.simclr.projection_dims": (256, 64), "objectives.simclr.crop_scale": (0.3, 1.0),
        "eval.max_images": 500,
    }),
}
CONFIGS["demo"] = with_overrides(CONFIGS["cpu_small"], {"num_runs": 1, "data.example": "features"})
# fmt: on


def gensim_target(table: folder_data.FolderTable, train_rows: np.ndarray):
    """The gensim arm's target: the ``unit`` map of the table's ``log s`` (gathered by ``target_id``), or the
    mixture's Eq. H2 on ``points`` mapped by ``affine`` with the constants of up to 512 training rows."""
    if table.mixture is None:
        return TableTarget.create(transform_table(table.log_table, "unit"), key="target_id")
    sample = train_rows[:512]
    target = GaussianMixtureTarget(mixture=table.gaussian_mixture(), key="points")
    return target.with_transform("affine", table.log_similarity(sample))


def model_kwargs(objective: Optional[str], config: Config, table: folder_data.FolderTable) -> dict:
    """Registry keyword arguments: no classifier but for ``supervised`` (the table's classes); a projection
    head for ``simclr``."""
    kw: dict = {"num_classes": len(table.class_names) if objective == "supervised" else None}
    if objective == "simclr":
        kw["projection_dims"] = tuple(config.objectives.simclr.projection_dims)
        kw["projection_batchnorm"] = bool(config.objectives.simclr.projection_batchnorm)
    return kw


@dataclasses.dataclass
class Data:
    """The checked table, its training rows and the held-out stimuli (:func:`gensim_jax.evaluation.folder.make_stimuli`)."""

    table: folder_data.FolderTable
    train_rows: np.ndarray
    stimuli: protocol.FolderStimuli
    source: None = None  # the images stream from disk (the runner's input-bound advice for file readers)


class Folder(ImageExperiment):
    """GenSim on a user's folder of images and metadata table: gensim vs supervised vs SimCLR, scored on held-out pairs."""

    name = "folder"
    Config = Config
    CONFIGS = CONFIGS
    NOTES = {
        "paper": "CORnet-Z at 224 px, 3 runs x 3 arms x 50 epochs of your folder: for accelerators",
        "cpu_small": "CORnet-Z at 64 px, 2 runs x 3 arms x 150 steps (3x the demo's work): 20-35 min on 2 CPU cores",
        "demo": "cpu_small, 1 run, on a generated folder of 300 images with six binary features: 11 min on 2 CPU cores",
    }
    OBJECTIVES = OBJECTIVES
    AUGMENT_PRESET = "imagenet"

    def validate(self, config: Config) -> Config:
        config = super().validate(config)
        folder_data.check_data_config(config.data)
        ev = config.eval
        if ev.max_images < 3 or ev.knn_k < 1 or ev.num_bins < 2:
            raise ValueError(f"eval.max_images >= 3, eval.knn_k >= 1, eval.num_bins >= 2, got {ev}")
        if not 1 <= ev.pixel_size <= config.data.image_size:
            raise ValueError(f"eval.pixel_size must lie in [1, data.image_size], got {ev.pixel_size}")
        return config

    def intro(self, config: Config) -> str:
        """The one status line: the folder, its split and the kernel (with why, under ``data.kernel=auto``)."""
        return f"{folder_data.data_directory(config.data)}: {folder_data.table_of(config.data).status}"

    def prepare(self, config: Config, training: bool = True) -> Data:
        table = folder_data.table_of(config.data)
        stimuli = protocol.make_stimuli(table, config.data.image_size, config.data.color, config.eval.max_images)
        return Data(table, table.rows(False), stimuli)

    def arms(self, config: Config) -> tuple:
        """``config.arms``, without ``supervised`` when the table has no ``label`` or ``class_path``."""
        if not (config.data.dir or config.data.example):  # no table yet (the size of a config in --help)
            return tuple(config.arms)
        classes = folder_data.table_of(config.data).class_names
        return tuple(a for a in config.arms if a != "supervised" or classes)

    def num_train_examples(self, config: Config, data) -> int:
        return len(folder_data.table_of(config.data).rows(False))

    def arm(self, name: str, config: Config, data: Optional[Data]):
        table = folder_data.table_of(config.data) if data is None else data.table
        train_rows, o = table.rows(False), config.objectives
        kw = model_kwargs(name, config, table)
        s, views = config.data.image_size, None
        if name == "gensim":
            objective, keys = GenSimRegression(target=gensim_target(table, train_rows)), (table.target_key,)
        elif name == "supervised":
            objective, keys = CrossEntropy(input_key="image", label_key="label"), ("label",)
        else:
            objective, keys = (
                NTXent(temperature=o.simclr.temperature, variant=o.simclr.variant, output="projection"),
                (),
            )
            views = "device" if config.data.augment == "device" else "host"

        def batches(seed, shard):
            augment = None
            if views == "host":  # TensorFlow's views, as the host streams of the other image experiments
                from gensim_jax.data.augment import simclr_augment

                sim = o.simclr
                augment = simclr_augment((s, s), crop_scale=tuple(sim.crop_scale), blur_p=sim.blur_p,
                                         grayscale_p=sim.grayscale_p)  # fmt: skip
            return folder_data.folder_stream(table, train_rows, seed=seed, shard=shard, image_size=s,
                                             color=config.data.color, keys=keys, views=views, augment=augment)  # fmt: skip

        def evaluate(model, variables, seed):
            embed = encoder(model, variables, image_size=s, preprocess="imagenet")
            return protocol.evaluate(lambda x: embed(x, config.eval.batch_size), data.stimuli, *self._eval_kw(config))

        points = table.metadata.get("points")
        return self.image_arm(
            name,
            config,
            model=get_model(config.model.name, **kw),
            model_name=config.model.name,
            model_kwargs=kw,
            objective=objective,
            batches=batches,
            metadata={"points": (points.shape[1:], np.float32)} if "points" in keys else {},
            evaluate=evaluate,
        )

    @staticmethod
    def _eval_kw(config: Config) -> tuple:
        return config.eval.knn_k, config.eval.num_bins

    def baselines(self, config: Config, data: Data) -> dict:
        """``pixels`` (area-averaged to ``eval.pixel_size``) and ``initial``: the first arm's encoder before
        training, one entry per run seed."""
        first = self.arm(self.arms(config)[0], config, data)
        pixels = pixel_embedding(data.stimuli.images, config.eval.pixel_size)
        seeds = range(config.seed, config.seed + config.num_runs)
        return {
            "pixels": [protocol.evaluate_embedding(pixels, data.stimuli, *self._eval_kw(config))],
            "initial": [first.evaluation(first.model, first.init_variables(s), s) for s in seeds],
        }

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        table = data.table
        out = {"kernel": table.kernel, "table": table.status, "heldout_images": len(data.stimuli.rows)}
        return {**out, **protocol.summarize(evaluations), "evaluations": evaluations, "training": training}

    def plot(self, results: dict, path) -> None:
        cfg = results["config"]
        what = f"{cfg['model']['name']} at {cfg['data']['image_size']} px, kernel {results['kernel']}"
        protocol.plot(results, path, title=f"Held-out pairs of the folder ({what})")

    def format_table(self, results: dict) -> str:
        return protocol.format_table(results)


EXPERIMENT = Folder()
