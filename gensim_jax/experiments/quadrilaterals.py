"""Experiment: quadrilateral shape regularity (paper Sec. 3.1, Fig. 2, Appendix L).

A CORnet is trained on quadrilaterals of the 11 reference shapes of Sable-Meyer et al. (2021)
(continuous rotations and scalings; the test-trial combinations are held out, see
:func:`gensim_jax.stimuli.quadrilaterals.sample_training_stimuli`) with one of three objectives,
then tested on the seeded oddball trials (:func:`~gensim_jax.stimuli.quadrilaterals.oddball_test_set`)
with the protocol of :mod:`gensim_jax.evaluation.oddball`:

``gensim``
    GenSim by distance regression (Appendix L): over the pairs of a batch,
    ``(||z_i - z_j||_2 - ||f_i - f_j||_2)^2`` where ``f`` is the 22-dim binary geometric feature
    vector of the shape (4 right angles, 6 parallel pairs, 6 equal sides, 6 equal angles; paper
    Table 1). The Euclidean feature distance is the limit of the Beta-Bernoulli generative
    similarity (paper Eq. I10: ``log s -> -||f_i - f_j||^2``). Mean over all ``B^2`` entries
    including the zero diagonal (``objectives.gensim.exclude_diagonal=False``), as the authors' ``cdist`` +
    MSE; ``True`` gives the ``B (B - 1)`` pair mean of Eq. 2.
``supervised``
    Cross entropy on the 11 shape classes (Appendix L, after Sable-Meyer et al. 2021): with a
    pretrained CORnet-S the 11 classes are *added* to its 1000-way ImageNet read-out
    (:func:`gensim_jax.models.extend_classifier`, labels 1000..1010); from scratch the read-out
    is 11-way.
``simclr``
    SimCLR (Appendix L): two views by rotation, random resized crop, horizontal flip and Gaussian
    blur (no colour distortion: the images are grey), the InfoNCE of Appendix L
    (``objectives.simclr.variant="cross_view"``) on a projection head.

The oddball embedding of every model is the pooled IT output (``"embedding"``, 512-d): the
penultimate layer, the one Sable-Meyer et al. read out. Reported per model (10 runs in the paper):
error rate per shape (Fig. 2B), Spearman rho(9) with the irregularity rank (paper: GenSim 0.88,
supervised 0.472), correlation with human and baboon error rates and the t-test across runs
(Fig. 2C, t(18) for 10 runs). ``pixels`` (raw pixels as the embedding), ``initial`` (the network
before training) and, with ``pretrained``, ``pretrained`` rows are baselines.

Configs: ``paper`` (CORnet-S at 224 x 224, Adam, learning rate 5e-4 for GenSim and SimCLR and
5e-6 for supervised, 13 epochs, 10 runs; the paper fine-tunes the ImageNet-pretrained CORnet-S,
so pass ``--set model.pretrained=/path/cornet_s-1d3f7974.pth``: no weights can be downloaded here) and
``cpu_small`` (CORnet-Z, the smallest CORnet, from scratch at 64 x 64, the three objectives, a few
minutes on 2 CPU cores), ``curve`` (its learning curves, 5 runs), ``deviants`` (half of the training
images deviants: training on more of the generative model), ``demo`` and ``demo_supervised``
(``make demo``: 3 runs of GenSim with a quarter of the training images deviants, and 3 of the
supervised baseline on the 11 references, at 48 px, 800 steps). Values the paper does not give are ours and marked so in
``Config``.

Config sections: ``model`` (``name``, ``cornet_times``, ``pretrained``), ``data`` (``image_size``,
``num_train_images``, ``train_variants``, pose ranges), ``objectives.gensim`` / ``.supervised`` /
``.simclr`` (each arm's settings and its own ``learning_rate``, None: ``optim.learning_rate``),
``eval`` (``seed``, ``trials_per_condition``, ``batch_size``, ``every``, ``readout_target_error``),
``optim``; ``arms`` selects the objectives a run trains.

Read-outs: the paper's argmax rule and a graded one (:func:`readout`): a softmax observer whose one
temperature sets its mean error to the humans' 0.249, so the curve across shapes, not the level, is
compared with humans and baboons; ``summary`` (the headline) is the graded one.

Declaration :data:`EXPERIMENT`; run with ``gensim-jax train quadrilaterals --config cpu_small``
(``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import numpy as np

from gensim_jax.data.sources import GreyImageSource
from gensim_jax.evaluation import figures
from gensim_jax.evaluation import oddball_evaluator as oe
from gensim_jax.evaluation.embed import encoder
from gensim_jax.evaluation.oddball_evaluator import (
    human_mean_error,
    readout,
    regression_error,
    trial_embeddings,
    trial_error_rates,
)
from gensim_jax.experiments import _common
from gensim_jax.models import extend_classifier, get_model
from gensim_jax.stimuli import quadrilaterals as quads
from gensim_jax.training import CrossEntropy, DistanceRegression, NTXent
from gensim_jax.training.config import with_overrides
from gensim_jax.training.experiment import ArmConfig, HostShard, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = ("gensim", "supervised", "simclr")
PRETRAINED_NOTE = (
    "No pretrained weights can be downloaded here, so the CORnet is trained from scratch. The paper "
    "fine-tunes the ImageNet CORnet-S; with its PyTorch checkpoint: python -m train quadrilaterals "
    "--config paper --set model.pretrained=/path/to/cornet_s-1d3f7974.pth"
)
NUM_SHAPES = len(quads.SHAPE_NAMES)
IMAGENET_CLASSES = 1000


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the CORnet and the checkpoint it fine-tunes."""

    name: str = "cornet_s"
    cornet_times: Optional[tuple] = None  # CORnet-S recurrent steps (V2, V4, IT); reference (2, 4, 2)
    pretrained: Optional[str] = None  # PyTorch CORnet-S checkpoint (.pth / .safetensors) to fine-tune


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: the rendered training quadrilaterals.

    Which quadrilaterals training draws (``train_variants``): the paper trains on the 11 references
    only; adding the deviants (``deviant_1``..``deviant_4``, each with its own 22 features and, for
    ``supervised``, its reference's label) trains on more of the generative model, at poses that
    stay off the test grid.
    """

    image_size: int = 224
    num_train_images: int = 11_000  # ours: 1,000 per shape (the paper does not give the number)
    train_variants: tuple = ("reference",)
    rotation_range_deg: tuple = (-30.0, 30.0)  # covers the test rotations +-25 (held out exactly)
    scale_range: tuple = (0.85, 1.15)  # covers the test scales 0.875..1.125


@dataclasses.dataclass(frozen=True)
class GenSimArm(ArmConfig):
    """``objectives.gensim``: distance regression onto the 22 geometric features."""

    exclude_diagonal: bool = False


@dataclasses.dataclass(frozen=True)
class SupervisedArm(ArmConfig):
    """``objectives.supervised``: cross entropy on the 11 shapes (Appendix L fine-tunes at 5e-6)."""

    learning_rate: Optional[float] = 5e-6


@dataclasses.dataclass(frozen=True)
class SimCLRArm(ArmConfig):
    """``objectives.simclr``: NT-Xent on a projection head, views by rotation, crop, flip and blur."""

    temperature: float = 0.5
    variant: str = "cross_view"
    projection_dims: tuple = (512, 128)
    projection_batchnorm: bool = True  # SimCLR's head; without it a from-scratch CORnet collapses at once
    crop_scale: tuple = (0.08, 1.0)
    rotation_deg: float = 45.0
    blur_p: float = 0.5


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: one section per arm (an arm's ``learning_rate`` None: ``optim.learning_rate``)."""

    gensim: GenSimArm = GenSimArm()
    supervised: SupervisedArm = SupervisedArm()
    simclr: SimCLRArm = SimCLRArm()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: the seeded oddball test and its read-outs."""

    seed: int = 0
    trials_per_condition: int = 10  # 11 shapes x 4 deviants x 10 = 440 trials
    batch_size: int = 128
    every: int = 0  # ours: > 0 evaluates both read-outs every so many steps (the learning curve)
    readout_target_error: Optional[float] = None  # graded read-out's mean error; None: the humans' 0.249


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix L: CORnet-S, Adam (5e-4 GenSim/SimCLR, 5e-6 supervised), 13 epochs, 10 runs."""

    seed: int = 0
    num_runs: int = 10
    arms: tuple = OBJECTIVES
    epochs: float = 13.0
    num_steps: Optional[int] = None  # overrides epochs when set
    batch_size: int = 64  # ours (not given)
    optim: OptimConfig = OptimConfig(learning_rate=5e-4)
    checkpoint_every: int = 1000
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


CONFIGS = {
    "paper": Config(),
    # CORnet-Z from scratch at 64 x 64, 2,200 images, 2 runs of each objective; minutes on 2 CPU cores.
    # From scratch every objective uses Adam 1e-3 (5e-6 is a fine-tuning rate).
    "cpu_small": with_overrides(
        Config(),
        {
            "num_runs": 2,
            "model.name": "cornet_z",
            "data.image_size": 64,
            "data.num_train_images": 2_200,
            "num_steps": 120,
            "batch_size": 32,
            "optim.learning_rate": 1e-3,
            "objectives.supervised.learning_rate": None,
            "objectives.simclr.projection_dims": (256, 64),
            "objectives.simclr.crop_scale": (0.3, 1.0),
            "eval.trials_per_condition": 10,
            "eval.batch_size": 220,
            "checkpoint_every": 10_000,
        },
    ),
}
#: The learning curves of docs/results/quadrilaterals.md: CORnet-Z at 64 x 64, 6,600 images, 500 steps
#: of 32, both read-outs every 125 steps; GenSim and the supervised baseline, 5 runs (the results ran
#: one process per seed: ``--set seed=S num_runs=1``; scripts/quadrilaterals_curve.py reads them).
CONFIGS["curve"] = with_overrides(
    CONFIGS["cpu_small"],
    {
        "arms": ("gensim", "supervised"),
        "num_runs": 5,
        "num_steps": 500,
        "data.num_train_images": 6_600,
        "eval.every": 125,
    },
)
#: Training on more of the generative model (docs/results/quadrilaterals.md): as ``curve``, with half
#: of the training images deviants (each with its own 22 features; the test images stay held out),
#: 1,000 steps, 3 runs (the results ran one process per seed: ``--set seed=S num_runs=1``).
CONFIGS["deviants"] = with_overrides(
    CONFIGS["curve"],
    {
        "num_runs": 3,
        "num_steps": 1000,
        "eval.every": 250,
        "data.train_variants": ("reference",) * 4 + ("deviant_1", "deviant_2", "deviant_3", "deviant_4"),
    },
)
#: ``make demo``: the human / baboon double dissociation of Fig. 2C in minutes on 2 CPU cores, as two
#: configs (one process each; ``scripts/quadrilaterals_curve.py`` pools them into one table). GenSim
#: (``demo``): as ``deviants``, made cheaper: 48 x 48 images, 800 steps with a 50-step warm-up and
#: cosine decay from 2e-3 (instead of 1,000 at a constant 1e-3), and a quarter of the training
#: images deviants (the same-shape reference pairs that teach invariance to rotation and scale are
#: then about twice as frequent in a batch). The supervised baseline (``demo_supervised``): the
#: same network, schedule and length on the paper's training set, the 11 references (with the
#: deviants labelled as their reference it becomes invariant to them and its oddball error nears
#: chance; docs/results/quadrilaterals.md). 3 runs each, evaluated once at the end; docs/results
#: holds 5 runs. SimCLR, the slowest objective (host-side augmentation), is left to ``cpu_small``.
CONFIGS["demo"] = with_overrides(
    CONFIGS["deviants"],
    {
        "arms": ("gensim",),
        "num_runs": 3,
        "data.image_size": 48,
        "num_steps": 800,
        "optim.schedule": "warmup_cosine",
        "optim.warmup_steps": 50,
        "optim.learning_rate": 2e-3,
        "eval.every": 0,
        "data.train_variants": ("reference",) * 12 + ("deviant_1", "deviant_2", "deviant_3", "deviant_4"),
    },
)
CONFIGS["demo_supervised"] = with_overrides(
    CONFIGS["demo"], {"arms": ("supervised",), "data.train_variants": ("reference",)}
)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def training_source(config: Config, seed: int) -> GreyImageSource:
    """``num_train_images`` rendered training quadrilaterals (reference shapes, test grid held out).

    Metadata: ``label`` (shape index 0..10, :data:`~gensim_jax.stimuli.quadrilaterals.SHAPE_NAMES`
    order) and ``features`` (22 binary geometric features, float32).
    """
    stim = quads.sample_training_stimuli(
        np.random.default_rng(seed),
        config.data.num_train_images,
        variants=tuple(config.data.train_variants),
        rotation_range_deg=tuple(config.data.rotation_range_deg),
        scale_range=tuple(config.data.scale_range),
    )
    images = np.empty((config.data.num_train_images, config.data.image_size, config.data.image_size), np.uint8)
    vertices = stim.vertices()
    chunk = 512  # bounds the float32 render buffer (512 x 224 x 224 x 4 B = 100 MB)
    for start in range(0, config.data.num_train_images, chunk):
        stop = min(start + chunk, config.data.num_train_images)
        grey = quads.render_quadrilaterals(
            vertices[start:stop], stim.rotation_deg[start:stop], stim.scale[start:stop], config.data.image_size
        )
        images[start:stop] = np.round(grey * 255.0).astype(np.uint8)
    return GreyImageSource(images, label=stim.shape.astype(np.int32), features=stim.features.astype(np.float32))


def make_batches(objective: str, source: GreyImageSource, config: Config, seed: int, shard: HostShard):
    """``position -> iterator`` of this process's rows (``shard``) of the batches of ``objective``
    (:func:`gensim_jax.data.streams.stream`; images ``uint8``, normalised in the step)."""
    from gensim_jax.data.streams import stream

    if objective == "gensim":
        return stream("labelled", source, seed=seed, shard=shard, keys=("features",))
    if objective == "supervised":
        labelled = stream("labelled", source, seed=seed, shard=shard, keys=("label",))
        offset = IMAGENET_CLASSES if config.model.pretrained else 0  # the 11 classes follow ImageNet's 1,000
        return lambda position: ({**b, "label": b["label"] + offset} for b in labelled(position))
    from gensim_jax.data.augment import simclr_augment  # TensorFlow: imported by the SimCLR arm only

    s = config.data.image_size
    aug = simclr_augment(
        (s, s),
        crop_scale=tuple(config.objectives.simclr.crop_scale),
        blur_p=config.objectives.simclr.blur_p,
        rotation_deg=config.objectives.simclr.rotation_deg,
        fill_value=0.0,  # black canvas
    )
    return stream("views", source, seed=seed, shard=shard, augment=aug)


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective``."""
    if objective == "gensim":
        return DistanceRegression(
            input_key="image",
            feature_key="features",
            embedding_distance="euclidean",
            feature_distance="euclidean",
            exclude_diagonal=config.objectives.gensim.exclude_diagonal,
        )
    if objective == "supervised":
        return CrossEntropy(input_key="image", label_key="label")
    if objective == "simclr":
        return NTXent(
            temperature=config.objectives.simclr.temperature,
            variant=config.objectives.simclr.variant,
            output="projection",
        )
    raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")


def model_kwargs(objective: Optional[str], config: Config) -> dict:
    """Registry keyword arguments of the encoder for ``objective`` (None: the bare encoder)."""
    kw: dict = {"num_classes": None}
    if config.model.cornet_times is not None:
        kw["times"] = tuple(config.model.cornet_times)
    if objective == "supervised":
        kw["num_classes"] = IMAGENET_CLASSES + NUM_SHAPES if config.model.pretrained else NUM_SHAPES
    if objective == "simclr":
        kw["projection_dims"] = tuple(config.objectives.simclr.projection_dims)
        kw["projection_batchnorm"] = bool(config.objectives.simclr.projection_batchnorm)
    return kw


def pretrained_variables(objective: Optional[str], config: Config, seed: int) -> dict:
    """Variables of ``config.model.pretrained`` (a PyTorch CORnet checkpoint) prepared for ``objective``.

    Supervised: the 11 shape classes are appended to the 1000-way read-out (Appendix L,
    :func:`~gensim_jax.models.extend_classifier`); otherwise the read-out is dropped.
    """
    from gensim_jax.models.torch_import import load_pretrained

    kw = model_kwargs(objective, config)
    key = jax.random.key(seed)
    _, variables = load_pretrained(
        config.model.name,
        config.model.pretrained,
        strict=kw.get("projection_dims") is None,
        rng=key,
        **{**kw, "num_classes": IMAGENET_CLASSES},
    )
    variables = dict(variables)
    if objective == "supervised":  # Appendix L: 11 new categories added to the ImageNet read-out
        return extend_classifier(variables, NUM_SHAPES, jax.random.fold_in(key, 1))
    params = dict(variables["params"])
    params.pop("classifier", None)
    variables["params"] = params
    return variables


# --------------------------------------------------------------------------------------------
# Evaluation (the oddball evaluator of gensim_jax.evaluation.oddball_evaluator)
# --------------------------------------------------------------------------------------------


def test_trials(config: Config) -> oe.OddballTrials:
    """The seeded oddball test set of ``config`` (``eval.seed``, ``eval.trials_per_condition``, ``data.image_size``)."""
    return oe.test_trials(config.eval.seed, config.eval.trials_per_condition, config.data.image_size)


# --------------------------------------------------------------------------------------------
# Declaration
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Data:
    """What every run shares: the rendered training images (None when only evaluating) and the oddball test trials."""

    source: Optional[GreyImageSource]
    trials: tuple


class Quadrilaterals(ImageExperiment):
    """Quadrilateral shape regularity: GenSim vs supervised vs SimCLR on the oddball test (paper Fig. 2)."""

    name = "quadrilaterals"
    Config = Config
    CONFIGS = CONFIGS
    OBJECTIVES = OBJECTIVES

    def validate(self, config: Config) -> Config:
        super().validate(config)
        _common.check_image_config(config, config.data.num_train_images)
        model, variants, ev = config.model, config.data.train_variants, config.eval
        if not model.name.startswith("cornet_"):
            raise ValueError(f"model.name must be a CORnet (cornet_z, cornet_rt, cornet_s), got {model.name!r}")
        if model.cornet_times is not None and model.name != "cornet_s":
            raise ValueError(f"model.cornet_times applies to cornet_s only, got model.name {model.name!r}")
        if not variants or any(v not in quads.VARIANT_NAMES for v in variants):
            raise ValueError(f"data.train_variants must be a non-empty subset of {quads.VARIANT_NAMES}, got {variants}")
        if ev.every < 0:
            raise ValueError(f"eval.every must be >= 0 (0: no evaluation during training), got {ev.every}")
        t = ev.readout_target_error
        if t is not None and not 0 < t < oe.CHANCE_ERROR_RATE:
            raise ValueError(f"eval.readout_target_error must lie in (0, 5/6) or be null (the humans' mean), got {t}")
        if ev.trials_per_condition < 1:
            raise ValueError(f"eval.trials_per_condition must be >= 1, got {ev.trials_per_condition}")
        return config

    def intro(self, config: Config) -> Optional[str]:
        return None if config.model.pretrained else PRETRAINED_NOTE

    def prepare(self, config: Config) -> Data:
        return Data(training_source(config, config.seed), test_trials(config))

    def prepare_evaluation(self, config: Config) -> Data:  # the test trials only: no training renders
        return Data(None, test_trials(config))

    def num_train_examples(self, config: Config, data: Data) -> int:
        return config.data.num_train_images

    def model(self, arm: str, config: Config):
        kw = model_kwargs(arm, config)
        return get_model(config.model.name, **kw), config.model.name, kw

    def init_variables(self, arm: str, config: Config, model, seed: int) -> dict:
        if config.model.pretrained:
            return pretrained_variables(arm, config, seed)
        return super().init_variables(arm, config, model, seed)

    def objective(self, arm: str, config: Config):
        return make_objective(arm, config)

    def metadata_spec(self, arm: str, config: Config) -> dict:
        return {"features": ((len(quads.FEATURE_NAMES),), np.float32)} if arm == "gensim" else {}

    def batches(self, arm: str, config: Config, data: Data, seed: int, shard: HostShard):
        return make_batches(arm, data.source, config, seed, shard)

    def baselines(self, config: Config, data: Data) -> dict:
        kw = model_kwargs(None, config)
        model = get_model(config.model.name, **kw)
        variables = (
            pretrained_variables(None, config, config.seed)
            if config.model.pretrained
            else super().init_variables(None, config, model, config.seed)
        )
        name = "pretrained" if config.model.pretrained else "initial"
        target = config.eval.readout_target_error
        return {
            "features": [oe.readout(data.trials.features, data.trials, target)],
            "pixels": [oe.evaluate(oe.pixel_embedding, data.trials, target)],
            name: [oe.evaluate(self._embed(None, config, model, variables), data.trials, target)],
        }

    def _embed(self, arm, config: Config, model, variables):
        """The run's encoder as its export will be read (:func:`~gensim_jax.evaluation.embed.encoder`)."""
        enc = encoder(model, variables, **self.export_info(arm, config))
        return lambda images: enc(images, config.eval.batch_size)

    def evaluate_run(self, arm: str, config: Config, data: Data, model, variables, seed: int):
        return oe.evaluate(self._embed(arm, config, model, variables), data.trials, config.eval.readout_target_error)

    def periodic_eval(self, arm: str, config: Config, data: Data, model):
        """With ``eval_every``: both read-outs during training, logged per shape (the learning curve)."""
        if not config.eval.every:
            return None

        def evaluate(state, step):
            return oe.curve_metrics(self.evaluate_run(arm, config, data, model, state.variables, config.seed))

        return config.eval.every, evaluate

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        """:func:`~gensim_jax.evaluation.oddball_evaluator.summarize`: ``summary`` is the headline (graded)
        read-out, ``summary_argmax`` the paper's rule, ``temperatures`` per model and run."""
        out = oe.summarize(evaluations, len(data.trials.images), config.eval.readout_target_error)
        return {**out, "training": training}

    def plot(self, results: dict, path) -> None:
        cfg = results["config"]
        figures.plot_oddball(
            results["summary"],
            path,
            title=f"Oddball error per shape (graded read-out at the humans' mean error): {cfg['model']['name']}, "
            f"{cfg['data']['image_size']} px, {cfg['num_runs']} run(s)",
        )

    def format_table(self, results: dict) -> str:
        return format_table(results)


def format_table(results: dict) -> str:
    """The Markdown tables of :func:`~gensim_jax.evaluation.oddball_evaluator.format_table`, with the note on
    pretrained weights when the run trained from scratch."""
    return oe.format_table(results, None if results["config"]["model"].get("pretrained") else PRETRAINED_NOTE)


EXPERIMENT = Quadrilaterals()

__all__ = [
    "CONFIGS",
    "Config",
    "EXPERIMENT",
    "OBJECTIVES",
    "Quadrilaterals",
    "format_table",
    "human_mean_error",
    "make_batches",
    "make_objective",
    "model_kwargs",
    "pretrained_variables",
    "readout",
    "regression_error",
    "test_trials",
    "trial_embeddings",
    "trial_error_rates",
    "training_source",
]
