"""Experiment: Geoclidean few-shot concept learning (paper Sec. 3.2, Fig. 3C, Appendix M).

A ResNet is trained on images of the 30 training concepts (rendered by our sampler,
``gensim_jax.stimuli.geoclidean``) with one of three objectives, then evaluated with the
Geoclidean few-shot protocol (``gensim_jax.evaluation.fewshot``) on the 7 held-out concepts:

``gensim``
    GenSim regression (paper Eq. 2, Appendix M): over all ``B (B - 1)`` pairs of a batch,
    ``(cos(z_i, z_j) - T[c_i, c_j])^2`` where ``c`` is the program id of the image and ``T`` the
    transformed log tree-kernel table of the programs' parse trees. Kernel: the subtree (ST)
    kernel of Moschitti (2006) ("counts shared subtrees", Appendix M), ``lam = 1``, normalised
    ``K(a, b) / sqrt(K(a, a) K(b, b))``, so ``log K`` lies in ``[-2.10, 0]`` on the training
    concepts (0 on the diagonal). **Target transform** (``target_transform="unit"``, our choice):
    ``T = (log K - m) / (0 - m)`` with ``m`` the smallest entry of the training-concept block,
    i.e. an affine map of the log kernel onto ``[0, 1]``: identical programs -> cosine 1, the
    least similar training pair -> cosine 0 (orthogonal). The raw log kernel (the paper's literal
    target, ``"raw"``) is non-positive, while the embedding is a post-ReLU average pool whose
    cosines are non-negative, so every off-diagonal raw target below 0 would be unreachable;
    ``"affine"`` (onto ``[-1, 1]``) and ``"standardized"`` are offered as well. The table is
    ``gram_log_table(concept_parse_trees())`` indexed by program id (``(37, 37)``; only the
    training rows are ever gathered, the statistics come from the training block only).
``class_triplet``
    The class-based baseline (Appendix M): anchor and positive from one training program,
    negative from another, linear loss ``d(a, p) - d(a, n)`` with Euclidean ``d`` (Eq. A2 with
    ``l(x) = x``). Note it is unbounded below (the embedding scale can grow); ``--set
    objectives.class_triplet.form=softplus`` gives a bounded variant.
``simclr``
    SimCLR (Appendix M): two views by random resized crop, horizontal flip and Gaussian blur (no
    colour distortion: the images are grey), InfoNCE on a projection head; ``objectives.simclr.variant``
    ``"cross_view"`` is the one-directional form printed in Appendix M, ``"ntxent"`` SimCLR's.

Configs: ``paper`` (ResNet-50 at 224 x 224, Adam, batch 128, 35 epochs of 100,000 images, 4 runs;
fine-tuned from ImageNet weights when ``model.pretrained`` names a torchvision checkpoint) and
``cpu_small`` (a 1-1-1-1 basic ResNet at 64 x 64, 384 images, 30 steps of 16, 1 run; a few
minutes on 2 CPU cores) and ``cpu_long`` (the same model, 960 images, 60 steps of 16, 3 runs,
every threshold rule). Every config field can be overridden with ``--set`` by its dotted name; the
sections are ``model`` (``name``, ``stage_sizes``, ``pretrained``), ``data`` (``image_size``,
``num_train_images``, ``benchmark_dir``), ``objectives.gensim`` (tree kernel, ``target_transform``),
``objectives.class_triplet`` (``form``, ``distance``), ``objectives.simclr`` (``temperature``,
``variant``, ``projection_dims``, ``crop_scale``, ``blur_p``), ``eval`` (``seed``, ``threshold``,
``batch_size``) and ``optim``; the run-level fields (seeds, steps, batch, dtype, mesh) are those
of :class:`~gensim_jax.training.experiment.TrainConfig`.

Evaluation (``fewshot_evaluate``, per-concept threshold as in the paper, plus the threshold-free
AUC): for each held-out concept 5 support images and 5 in-concept test images of the concept
program, 5 of its close and 5 of its far negative program (``benchmark_images``), all rendered by
our sampler; with ``data.benchmark_dir`` the official benchmark images are evaluated as well. Rows
``pixels`` (model-free baseline) and ``initial`` (the encoder before training, run 0) are
reported next to the objectives. ``eval.threshold="all"`` evaluates every threshold rule of
:data:`~gensim_jax.evaluation.fewshot.THRESHOLD_RULES` (the result keys are then
``"<suite>/<rule>"``, e.g. ``"official/benchmark"``; with one rule just ``"<suite>"``).

``cpu_long`` is the config of docs/results/geoclidean.md:
``gensim-jax train geoclidean --config cpu_long --set data.benchmark_dir=../shared/reference/geoclidean``.
The target ablation there sets ``objectives.gensim.tree_kernel_normalize`` (cosine-normalised kernel
or raw count) and ``objectives.gensim.target_transform``.

Declaration :data:`EXPERIMENT`; run with ``gensim-jax train geoclidean --config cpu_small``
(``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import jax
import numpy as np

from gensim_jax.data.sources import GreyImageSource
from gensim_jax.evaluation import fewshot, figures
from gensim_jax.evaluation import geoclidean_evaluator as ge
from gensim_jax.evaluation.embed import embed_images
from gensim_jax.evaluation.geoclidean_evaluator import embed_episodes, evaluate_embedding, format_table
from gensim_jax.experiments import _table_arms
from gensim_jax.kernels.targets import TABLE_TRANSFORMS, transform_table
from gensim_jax.kernels.trees import gram_log_table
from gensim_jax.models import get_model
from gensim_jax.preprocessing import normalize_images
from gensim_jax.stimuli.geoclidean import dataset as geo
from gensim_jax.stimuli.geoclidean.concepts import (
    TEST_CONCEPTS,
    TRAIN_IDS,
    concept_parse_trees,
)
from gensim_jax.training import TableTarget
from gensim_jax.training.config import with_overrides
from gensim_jax.training.experiment import ArmConfig, HostShard, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = _table_arms.TABLE_OBJECTIVES
TARGET_TRANSFORMS = TABLE_TRANSFORMS


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the ResNet and the torchvision checkpoint it fine-tunes."""

    name: str = "resnet50"
    stage_sizes: Optional[tuple] = None  # override the ResNet's blocks per stage (tiny models)
    pretrained: Optional[str] = None  # torchvision checkpoint (.pth / .safetensors) to fine-tune


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: the rendered training images and the official benchmark folder (also evaluated when given)."""

    image_size: int = 224
    num_train_images: int = 100_000
    benchmark_dir: Optional[str] = None


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
    threshold: str = "per_concept"  # a rule of fewshot.THRESHOLD_RULES, or "all"
    batch_size: int = 64


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix M: ResNet-50, Adam, batch 128, 35 epochs over 100,000 images of 224 x 224, 4 runs."""

    seed: int = 0
    num_runs: int = 4
    arms: tuple = OBJECTIVES
    epochs: float = 35.0
    num_steps: Optional[int] = None  # overrides epochs when set
    batch_size: int = 128
    optim: OptimConfig = OptimConfig(learning_rate=1e-4)  # Adam; the paper does not give the rate
    checkpoint_every: int = 1000
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


def tree_kernel_log_table(config: Config) -> np.ndarray:
    """``(37, 37)`` float32 log tree-kernel table of the 37 concept programs (by program id).

    ``log K_ab`` of the ``tree_kernel`` (ST: the number of pairs of identical complete subtrees,
    Moschitti 2006, with ``lam = 1``), cosine-normalised ``K_ab / sqrt(K_aa K_bb)`` when
    ``tree_kernel_normalize`` (then ``<= 0``, 0 on the diagonal), else the raw count's log
    (``>= 0``; ``[3.0, 7.1]`` on the training concepts).
    """
    return gram_log_table(
        concept_parse_trees(),
        kind=config.objectives.gensim.tree_kernel,
        lam=config.objectives.gensim.tree_lambda,
        normalize=config.objectives.gensim.tree_kernel_normalize,
    )


def gensim_target(config: Config) -> TableTarget:
    """The ``TableTarget`` of the gensim objective: the transformed log kernel, gathered by ``program_id``.

    :func:`~gensim_jax.kernels.targets.transform_table` with ``config.objectives.gensim.target_transform`` and its
    constants from the training-concept block (``"unit"``: ``(L - min) / (max - min)``, the
    training targets span ``[0, 1]``; see the module docstring).
    """
    log_k = tree_kernel_log_table(config)
    train_block = log_k[np.ix_(TRAIN_IDS, TRAIN_IDS)]
    return TableTarget.create(
        transform_table(log_k, config.objectives.gensim.target_transform, train_block), key="program_id"
    )


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


class GeoclideanSource(GreyImageSource):
    """Indexed source of rendered training images, stored grey ``(N, S, S)`` and served as RGB.

    Example ``i`` is ``dataset.example(i, seed, concepts="train", size=S)`` (concept ``i mod 30``,
    geometry from ``(seed, i)``), rendered once at construction; metadata ``program_id``.
    """

    def __init__(self, n: int, seed: int, size: int, progress: bool = False):
        images = np.empty((n, size, size), np.uint8)  # 5 GB for the paper's 100,000 at 224
        program_id = np.empty((n,), np.int32)
        for i, e in enumerate(geo.generate(n, seed=seed, concepts="train", size=size, progress=progress)):
            images[i] = e["image"]
            program_id[i] = e["program_id"]
        super().__init__(images, program_id=program_id)

    @property
    def images(self) -> np.ndarray:
        """The stored grey images ``(N, S, S)`` uint8."""
        return self.arrays["image"][..., 0]


def make_batches(objective: str, source: GeoclideanSource, config: Config, seed: int, shard: HostShard):
    """``position -> iterator`` of this process's rows (``shard``) of the batches of ``objective``
    (:func:`gensim_jax.data.streams.stream`; images ``uint8``, normalised in the step)."""
    from gensim_jax.data.streams import stream

    if objective == "gensim":
        return stream("labelled", source, seed=seed, shard=shard, keys=("program_id",))
    if objective == "class_triplet":
        return stream("triplets", source, seed=seed, shard=shard, group_key="program_id")
    from gensim_jax.data.augment import simclr_augment  # TensorFlow: imported by the SimCLR arm only

    s = config.data.image_size
    aug = simclr_augment(
        (s, s), crop_scale=tuple(config.objectives.simclr.crop_scale), blur_p=config.objectives.simclr.blur_p
    )
    return stream("views", source, seed=seed, shard=shard, augment=aug)


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective`` (:func:`_table_arms.table_objective`)."""
    return _table_arms.table_objective(objective, config, lambda: gensim_target(config))


def model_kwargs(objective: Optional[str], config: Config) -> dict:
    """Registry keyword arguments of the encoder (classifier dropped; a projection head for simclr)."""
    return _table_arms.encoder_kwargs(objective, config)


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def heldout_concepts(config: Config) -> dict:
    """Few-shot episodes of the 7 held-out concepts rendered by our sampler.

    Returns ``{name: (support (5, S, S, 3), test (15, S, S, 3), kind (15,))}``, uint8 RGB; support
    and in-concept test images are the first and last 5 of 10 concept images, negatives 5 close and
    5 far images (``benchmark_images`` streams, seed ``eval_seed``).
    """
    out = {}
    s, seed = config.data.image_size, config.eval.seed
    for name in TEST_CONCEPTS:
        pos = geo.benchmark_images(name, "concept", n=10, seed=seed, size=s)
        close = geo.benchmark_images(name, "close", n=5, seed=seed, size=s)
        far = geo.benchmark_images(name, "far", n=5, seed=seed, size=s)
        test = np.concatenate([pos[5:], close, far])
        kind = np.array(["in"] * 5 + ["close"] * 5 + ["far"] * 5)
        out[name] = (np.repeat(pos[:5, ..., None], 3, -1), np.repeat(test[..., None], 3, -1), kind)
    return out


def official_concepts(config: Config) -> dict:
    """The official benchmark images of the held-out concepts (``benchmark_dir``), same format as above."""
    loaded = fewshot.load_geoclidean(
        config.data.benchmark_dir, concepts=list(TEST_CONCEPTS), image_size=config.data.image_size
    )
    return {n: (c.train, c.test, np.asarray(c.test_kind)) for n, c in loaded.items()}


def eval_rules(config: Config) -> tuple:
    """The threshold rules evaluated: ``config.eval.threshold``, or every rule for ``"all"``."""
    return fewshot.THRESHOLD_RULES if config.eval.threshold == "all" else (config.eval.threshold,)


def _key(suite: str, rule: str, rules: tuple) -> str:
    return suite if len(rules) == 1 else f"{suite}/{rule}"


def result_keys(config: Config, suites) -> list:
    """Result keys: the suite name with one rule, ``"<suite>/<rule>"`` with several (``"all"``)."""
    rules = eval_rules(config)
    return [_key(suite, rule, rules) for suite in suites for rule in rules]


def _model_embed(model, variables, batch_size):
    return lambda images: embed_images(model, variables, normalize_images(images), batch_size=batch_size)


# --------------------------------------------------------------------------------------------
# Declaration
# --------------------------------------------------------------------------------------------


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
    OBJECTIVES = OBJECTIVES

    def validate(self, config: Config) -> Config:
        super().validate(config)
        self.check_batch_size(config, config.data.num_train_images)
        if config.eval.threshold not in (*fewshot.THRESHOLD_RULES, "all"):
            raise ValueError(
                f"eval.threshold must be one of {(*fewshot.THRESHOLD_RULES, 'all')}, got {config.eval.threshold!r}"
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

    def prepare(self, config: Config) -> Data:
        source = GeoclideanSource(
            config.data.num_train_images, config.seed, config.data.image_size, progress=jax.process_index() == 0
        )
        return Data(source, self.prepare_evaluation(config).suites)

    def prepare_evaluation(self, config: Config) -> Data:  # the few-shot episodes only: no training renders
        suites = {"sampler": heldout_concepts(config)}
        if config.data.benchmark_dir:
            suites["official"] = official_concepts(config)
        return Data(None, suites)

    def num_train_examples(self, config: Config, data) -> int:
        return config.data.num_train_images

    def model(self, arm: Optional[str], config: Config):
        kw = model_kwargs(arm, config)
        return get_model(config.model.name, **kw), config.model.name, kw

    def init_variables(self, arm: Optional[str], config: Config, model, seed: int) -> dict:
        """``pretrained`` (torchvision weights, :func:`~gensim_jax.models.torch_import.load_pretrained`) or fresh."""
        if config.model.pretrained:
            from gensim_jax.models.torch_import import load_pretrained

            return load_pretrained(model, config.model.pretrained, rng=jax.random.key(seed))[1]
        return super().init_variables(arm, config, model, seed)

    def objective(self, arm: str, config: Config):
        return make_objective(arm, config)

    def batches(self, arm: str, config: Config, data: Data, seed: int, shard: HostShard):
        return make_batches(arm, data.source, config, seed, shard)

    def _evaluate(self, embed, config: Config, data: Data) -> dict:
        """``{key: means}`` per suite and rule (:func:`result_keys`); one embedding call per suite."""
        out, rules = {}, eval_rules(config)
        for suite, episodes in data.suites.items():
            embedded = embed_episodes(embed, episodes)
            for rule in rules:
                res = fewshot.fewshot_evaluate(embedded, threshold=rule)
                out[_key(suite, rule, rules)] = {k: float(v) for k, v in res.mean.items()}
        return out

    def baselines(self, config: Config, data: Data) -> dict:
        """``pixels`` and ``initial`` (the encoder of the first objective before training, seed ``seed``)."""
        arm = config.arms[0]
        model = self.model(arm, config)[0]
        variables = self.init_variables(arm, config, model, config.seed)
        return {
            "pixels": [self._evaluate(fewshot.pixel_embedding, config, data)],
            "initial": [self._evaluate(_model_embed(model, variables, config.eval.batch_size), config, data)],
        }

    def evaluate_run(self, arm: str, config: Config, data: Data, model, variables, seed: int) -> dict:
        return self._evaluate(_model_embed(model, variables, config.eval.batch_size), config, data)

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        """``summary`` and ``per_run`` as ``{suite: {row: ...}}`` (rows: pixels, initial, objectives)."""
        per_run = {
            key: {name: [run[key] for run in runs] for name, runs in evaluations.items()}
            for key in result_keys(config, data.suites)
        }
        summary = {suite: {name: ge.summarize_runs(v) for name, v in rows.items()} for suite, rows in per_run.items()}
        return {"heldout_concepts": list(TEST_CONCEPTS), "summary": summary, "per_run": per_run, "training": training}

    def plot(self, results: dict, path) -> None:
        figures.plot_geoclidean_summary(results, path)

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = Geoclidean()

__all__ = [
    "CONFIGS",
    "Config",
    "Data",
    "EXPERIMENT",
    "Geoclidean",
    "GeoclideanSource",
    "OBJECTIVES",
    "TARGET_TRANSFORMS",
    "embed_episodes",
    "eval_rules",
    "evaluate_embedding",
    "format_table",
    "gensim_target",
    "heldout_concepts",
    "make_batches",
    "make_objective",
    "model_kwargs",
    "official_concepts",
    "result_keys",
    "tree_kernel_log_table",
]
