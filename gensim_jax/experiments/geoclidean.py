"""Experiment: Geoclidean few-shot concept learning (paper Sec. 3.2, Fig. 3C, Appendix M).

A ResNet is trained on images of the 30 training concepts (rendered by our sampler:
:mod:`gensim_jax.data.geoclidean`) with one of three arms, then evaluated with the few-shot
protocol on the 7 held-out concepts (:mod:`gensim_jax.evaluation.geoclidean`; per-concept
threshold as in the paper, every rule with ``eval.threshold="all"``, plus the threshold-free AUC;
the official benchmark images too with ``data.benchmark_dir``). ``gensim`` regresses the cosine of
the embeddings onto the transformed log tree-kernel table of the concept programs (Eq. 2; the
subtree kernel of Moschitti 2006, normalised, mapped onto ``[0, 1]`` by
``objectives.gensim.target_transform="unit"``, our choice: the raw log kernel is out of a post-ReLU
cosine's reach); ``class_triplet`` is the linear triplet loss on program classes (Eq. A2);
``simclr`` is InfoNCE on two augmented views. ``pixels`` and ``initial`` rows are baselines.

Configs: ``paper`` (ResNet-50 at 224 px, Adam, batch 128, 35 epochs of 100,000 images, 4 runs;
fine-tune with ``--set model.pretrained=...``), ``cpu_small`` (a 1-1-1-1 ResNet at 64 px, 384 images,
30 steps; minutes on 2 CPU cores) and ``cpu_long`` (docs/results/geoclidean.md). Sections:
``model``, ``data`` (with ``benchmark_dir``), ``objectives.{gensim,class_triplet,simclr}`` (each with
its own ``learning_rate``), ``eval``, ``optim``. docs/api/experiment_geoclidean.md has the details;
run with ``gensim-jax train geoclidean --config cpu_small`` (``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import jax
import numpy as np

from gensim_jax.config import with_overrides
from gensim_jax.data.geoclidean import GeoclideanSource, arm_batches
from gensim_jax.evaluation import geoclidean
from gensim_jax.evaluation.embed import embed_images
from gensim_jax.evaluation.geoclidean import format_table
from gensim_jax.experiments import _table_arms
from gensim_jax.kernels.targets import TABLE_TRANSFORMS, transform_table
from gensim_jax.kernels.trees import gram_log_table
from gensim_jax.models import get_model
from gensim_jax.preprocessing import normalize_images
from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS, TRAIN_IDS, concept_parse_trees
from gensim_jax.training import TableTarget
from gensim_jax.training.experiment import ArmConfig, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = _table_arms.TABLE_OBJECTIVES
TARGET_TRANSFORMS = TABLE_TRANSFORMS


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the ResNet and the torchvision checkpoint it fine-tunes."""

    name: str = "resnet50"
    stage_sizes: Optional[tuple[int, ...]] = None  # override the ResNet's blocks per stage (tiny models)
    pretrained: Optional[str] = None  # torchvision checkpoint (.pth / .safetensors) to fine-tune


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: the rendered training images and the official benchmark folder (also evaluated when given)."""

    image_size: int = 224
    num_train_images: int = 100_000
    benchmark_dir: Optional[str] = None
    augment: str = "auto"  # SimCLR views: "host" (TensorFlow in tf.data), "device" (in the step), "auto" (by backend)


@dataclasses.dataclass(frozen=True)
class GenSimArm(ArmConfig):
    """``objectives.gensim``: the tree kernel of the concept programs and its target transform."""

    tree_kernel: str = "st"
    tree_lambda: float = 1.0
    tree_kernel_normalize: bool = True  # K / sqrt(K_aa K_bb) (ours; the paper does not say)
    target_transform: str = "unit"


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: one section per arm (an arm's ``learning_rate`` None: ``optim.learning_rate``)."""

    gensim: GenSimArm = GenSimArm()
    class_triplet: _table_arms.TripletArm = _table_arms.TripletArm()
    simclr: _table_arms.SimCLRArm = _table_arms.SimCLRArm(projection_dims=(2048, 128))


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: the few-shot episodes' seed, the threshold rule (or ``"all"``) and the embedding batch."""

    seed: int = 10_000
    threshold: str = "per_concept"  # a rule of geoclidean.THRESHOLD_RULES, or "all"
    batch_size: int = 64


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix M: ResNet-50, Adam, batch 128, 35 epochs over 100,000 images of 224 x 224, 4 runs."""

    num_runs: int = 4
    arms: tuple[str, ...] = OBJECTIVES
    epochs: float = 35.0
    batch_size: int = 128
    optim: OptimConfig = OptimConfig(learning_rate=1e-4)  # Adam; the paper does not give the rate
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


_SMALL = {
    "model.name": "resnet18",
    "model.stage_sizes": (1, 1, 1, 1),
    "data.image_size": 64,
    "batch_size": 16,
    "optim.learning_rate": 3e-4,
    "objectives.simclr.projection_dims": (128, 64),
    "eval.batch_size": 35,
    "checkpoint_every": 10_000,
}
CONFIGS = {
    "paper": Config(),
    # Runs on a 2-core CPU in a few minutes: tiny ResNet, 64 x 64, 384 images, 30 steps of 16, 1 run.
    "cpu_small": with_overrides(Config(), {**_SMALL, "num_runs": 1, "data.num_train_images": 384, "num_steps": 30}),
    # What 2 shared, loaded CPU cores train in about an hour (niced) for the three objectives x 3
    # runs: cpu_small's model and sizes, 2x the steps, one pass over 960 images (32 per concept),
    # every threshold rule, official images when data.benchmark_dir is given (docs/results/geoclidean.md).
    "cpu_long": with_overrides(
        Config(),
        {
            **_SMALL,
            "num_runs": 3,
            "data.num_train_images": 960,
            "num_steps": 60,
            "eval.threshold": "all",
            "log_every": 10,
        },
    ),
}


def gensim_target(config: Config) -> TableTarget:
    """The gensim arm's ``TableTarget``, gathered by ``program_id``: the ``(37, 37)`` log tree kernel of the
    concept programs (:func:`~gensim_jax.kernels.trees.gram_log_table`; ST counts the pairs of identical
    complete subtrees, Moschitti 2006; ``tree_kernel_normalize``: ``K_ab / sqrt(K_aa K_bb)``, then
    ``<= 0``) mapped by ``target_transform`` with the constants of the training-concept block
    (``"unit"``: the training targets span ``[0, 1]``)."""
    arm = config.objectives.gensim
    kernel = {"kind": arm.tree_kernel, "lam": arm.tree_lambda, "normalize": arm.tree_kernel_normalize}
    log_k = gram_log_table(concept_parse_trees(), **kernel)
    train_block = log_k[np.ix_(TRAIN_IDS, TRAIN_IDS)]
    return TableTarget.create(transform_table(log_k, arm.target_transform, train_block), key="program_id")


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective`` (:func:`_table_arms.table_objective`)."""
    return _table_arms.table_objective(objective, config, lambda: gensim_target(config))


def model_kwargs(objective: Optional[str], config: Config) -> dict:
    """Registry keyword arguments of the encoder (classifier dropped; a projection head for simclr)."""
    return _table_arms.encoder_kwargs(objective, config)


def eval_rules(config: Config) -> tuple:
    """The threshold rules evaluated: ``config.eval.threshold``, or every rule for ``"all"``."""
    return geoclidean.THRESHOLD_RULES if config.eval.threshold == "all" else (config.eval.threshold,)


def result_keys(config: Config, suites) -> list:
    """Result keys: the suite name with one rule, ``"<suite>/<rule>"`` with several (``"all"``)."""
    rules = eval_rules(config)
    return [geoclidean.result_key(suite, rule, rules) for suite in suites for rule in rules]


@dataclasses.dataclass
class Data:
    """What every run shares: the rendered training images and the few-shot episodes per suite."""

    source: Optional[GeoclideanSource]  # None when only evaluating
    suites: dict  # {"sampler": episodes[, "official": episodes]}


class Geoclidean(ImageExperiment):
    """Geoclidean few-shot concepts: GenSim (tree kernel) vs class triplets vs SimCLR (paper Fig. 3C)."""

    name = "geoclidean"
    Config = Config
    CONFIGS = CONFIGS
    NOTES = {
        "paper": "ResNet-50 at 224 px, 4 runs x 3 arms x 27,344 steps: for accelerators",
        "cpu_small": "ResNet-18 at 64 px, 1 run x 3 arms x 30 steps: 4 min on 2 CPU cores",
        "cpu_long": "docs/results/geoclidean.md's runs, 3 runs x 3 arms x 60 steps: 45 min on 2 shared CPU cores",
    }
    OBJECTIVES = OBJECTIVES
    AUGMENT_PRESET = "geoclidean"

    def validate(self, config: Config) -> Config:
        config = super().validate(config)
        self.check_batch_size(config, config.data.num_train_images)
        if config.eval.threshold not in (*geoclidean.THRESHOLD_RULES, "all"):
            raise ValueError(
                f"eval.threshold must be one of {(*geoclidean.THRESHOLD_RULES, 'all')}, got {config.eval.threshold!r}"
            )
        transform = config.objectives.gensim.target_transform
        if transform not in TARGET_TRANSFORMS:
            raise ValueError(
                f"objectives.gensim.target_transform must be one of {TARGET_TRANSFORMS}, got {transform!r}"
            )
        bench = config.data.benchmark_dir
        if bench and not Path(bench).is_dir():  # before any stimulus is rendered
            raise ValueError(
                f"data.benchmark_dir {bench!r} is not a directory: give the official Geoclidean benchmark "
                "folder (its concept folders hold concept.txt and train/test images), or leave it out"
            )
        return config

    def prepare(self, config: Config, training: bool = True) -> Data:
        """The training renders (``training``) and the few-shot episodes of every suite."""
        suites = {"sampler": geoclidean.sampler_episodes(config.data.image_size, config.eval.seed)}
        if config.data.benchmark_dir:
            suites["official"] = geoclidean.official_episodes(config.data.benchmark_dir, config.data.image_size)
        if not training:
            return Data(None, suites)
        kw = {"progress": jax.process_index() == 0}
        return Data(GeoclideanSource(config.data.num_train_images, config.seed, config.data.image_size, **kw), suites)

    def num_train_examples(self, config: Config, data) -> int:
        return config.data.num_train_images

    def arm(self, name: str, config: Config, data: Optional[Data]):
        kw = model_kwargs(name, config)
        model = get_model(config.model.name, **kw)
        batch_kw = {"image_size": config.data.image_size, "simclr": config.objectives.simclr}

        def init(seed):  # ``model.pretrained``: torchvision weights (models.torch_import.load_pretrained)
            from gensim_jax.models.torch_import import load_pretrained

            return load_pretrained(model, config.model.pretrained, rng=jax.random.key(seed))[1]

        return self.image_arm(
            name,
            config,
            model=model,
            model_name=config.model.name,
            model_kwargs=kw,
            objective=make_objective(name, config),
            batches=lambda seed, shard: arm_batches(
                name, data.source, seed, shard, augment=config.data.augment, **batch_kw
            ),
            init=init if config.model.pretrained else None,
            evaluate=lambda model, variables, seed: self._evaluate(
                lambda x: embed_images(model, variables, normalize_images(x), batch_size=config.eval.batch_size),
                config,
                data,
            ),
        )

    def _evaluate(self, embed, config: Config, data: Data) -> dict:
        return geoclidean.evaluate_suites(embed, data.suites, eval_rules(config))

    def baselines(self, config: Config, data: Data) -> dict:
        """``pixels`` and ``initial`` (the encoder of the first objective before training, seed ``seed``)."""
        first = self.arm(config.arms[0], config, data)
        return {
            "pixels": [self._evaluate(geoclidean.pixel_embedding, config, data)],
            "initial": [first.evaluation(first.model, first.init_variables(config.seed), config.seed)],
        }

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        """``summary`` and ``per_run`` as ``{suite: {row: ...}}`` (rows: pixels, initial, objectives)."""
        per_run = {
            key: {name: [run[key] for run in runs] for name, runs in evaluations.items()}
            for key in result_keys(config, data.suites)
        }
        summary = {
            suite: {name: geoclidean.summarize_runs(v) for name, v in rows.items()} for suite, rows in per_run.items()
        }
        return {"heldout_concepts": list(TEST_CONCEPTS), "summary": summary, "per_run": per_run, "training": training}

    def plot(self, results: dict, path) -> None:
        geoclidean.plot_geoclidean_summary(results, path)

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = Geoclidean()

__all__ = [
    "CONFIGS",
    "Config",
    "Data",
    "EXPERIMENT",
    "Geoclidean",
    "OBJECTIVES",
    "TARGET_TRANSFORMS",
    "eval_rules",
    "gensim_target",
    "make_objective",
    "model_kwargs",
    "result_keys",
]
