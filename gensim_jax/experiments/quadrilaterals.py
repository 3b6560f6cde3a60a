"""Experiment: quadrilateral shape regularity (paper Sec. 3.1, Fig. 2, Appendix L).

A CORnet is trained on the 11 reference quadrilaterals (:mod:`gensim_jax.data.quadrilaterals`) with
one of three arms and tested on the seeded oddball trials (:mod:`gensim_jax.evaluation.oddball`):
``gensim`` regresses ``||z_i - z_j||`` onto the distance of the 22 geometric features (the limit of
the Beta-Bernoulli generative similarity, paper Eq. I10); ``supervised`` is cross entropy on the 11
shapes; ``simclr`` is InfoNCE on two augmented views. Configs: ``paper`` (CORnet-S at 224 px; fine-tune
with ``--set model.pretrained=cornet_s-1d3f7974.pth``), ``cpu_small``, ``curve``, ``deviants``, ``demo``
and ``demo_supervised`` (``make demo``); docs/api/experiment_quadrilaterals.md has the details.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from gensim_jax.config import with_overrides
from gensim_jax.data.quadrilaterals import DataConfig, arm_batches, check_data_config, training_source
from gensim_jax.data.sources import GreyImageSource
from gensim_jax.evaluation import oddball
from gensim_jax.evaluation.embed import encoder
from gensim_jax.evaluation.oddball import EvalConfig
from gensim_jax.models import get_model
from gensim_jax.stimuli import quadrilaterals as quads
from gensim_jax.training import CrossEntropy, DistanceRegression, NTXent
from gensim_jax.training.experiment import ArmConfig, ImageExperiment, OptimConfig, TrainConfig

OBJECTIVES = ("gensim", "supervised", "simclr")
PRETRAINED_NOTE = (
    "No pretrained weights can be downloaded here, so the CORnet is trained from scratch. The paper "
    "fine-tunes the ImageNet CORnet-S; with its PyTorch checkpoint: gensim-jax train quadrilaterals "
    "--config paper --set model.pretrained=/path/to/cornet_s-1d3f7974.pth"
)
NUM_SHAPES = len(quads.SHAPE_NAMES)
IMAGENET_CLASSES = 1000


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the CORnet and the checkpoint it fine-tunes."""

    name: str = "cornet_s"
    cornet_times: Optional[tuple[int, int, int]] = None  # CORnet-S recurrent steps (V2, V4, IT); reference (2, 4, 2)
    pretrained: Optional[str] = None  # PyTorch CORnet-S checkpoint (.pth / .safetensors) to fine-tune


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
    projection_dims: tuple[int, ...] = (512, 128)
    projection_batchnorm: bool = True  # SimCLR's head; without it a from-scratch CORnet collapses at once
    crop_scale: tuple[float, float] = (0.08, 1.0)
    rotation_deg: float = 45.0
    blur_p: float = 0.5


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: one section per arm (an arm's ``learning_rate`` None: ``optim.learning_rate``)."""

    gensim: GenSimArm = GenSimArm()
    supervised: SupervisedArm = SupervisedArm()
    simclr: SimCLRArm = SimCLRArm()


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix L: CORnet-S, Adam (5e-4 GenSim/SimCLR, 5e-6 supervised), 13 epochs, 10 runs."""

    num_runs: int = 10
    arms: tuple[str, ...] = OBJECTIVES
    epochs: float = 13.0
    batch_size: int = 64  # ours (not given)
    optim: OptimConfig = OptimConfig(learning_rate=5e-4)
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


# fmt: off
CONFIGS = {
    "paper": Config(),
    # CORnet-Z from scratch at 64 x 64, 2,200 images, 2 runs of each objective; minutes on 2 CPU cores.
    # From scratch every objective uses Adam 1e-3 (5e-6 is a fine-tuning rate).
    "cpu_small": with_overrides(Config(), {
        "num_runs": 2, "num_steps": 120, "batch_size": 32, "checkpoint_every": 10_000,
        "model.name": "cornet_z", "data.image_size": 64, "data.num_train_images": 2_200,
        "optim.learning_rate": 1e-3, "objectives.supervised.learning_rate": None,
        "objectives.simclr.projection_dims": (256, 64), "objectives.simclr.crop_scale": (0.3, 1.0),
        "eval.trials_per_condition": 10, "eval.batch_size": 220,
    }),
}
#: The learning curves of docs/results/quadrilaterals.md: CORnet-Z at 64 x 64, 6,600 images, 500 steps
#: of 32, both read-outs every 125 steps; GenSim and the supervised baseline, 5 runs (the results ran
#: one process per seed: ``--set seed=S num_runs=1``; scripts/quadrilaterals_curve.py reads them).
CONFIGS["curve"] = with_overrides(CONFIGS["cpu_small"], {
    "arms": ("gensim", "supervised"), "num_runs": 5, "num_steps": 500, "data.num_train_images": 6_600,
    "eval.every": 125,
})
#: Training on more of the generative model (docs/results/quadrilaterals.md): as ``curve``, with half
#: of the training images deviants (each with its own 22 features; the test images stay held out),
#: 1,000 steps, 3 runs (the results ran one process per seed: ``--set seed=S num_runs=1``).
CONFIGS["deviants"] = with_overrides(CONFIGS["curve"], {
    "num_runs": 3, "num_steps": 1000, "eval.every": 250,
    "data.train_variants": ("reference",) * 4 + ("deviant_1", "deviant_2", "deviant_3", "deviant_4"),
})
#: ``make demo``: Fig. 2C's human / baboon dissociation in minutes on 2 CPU cores, one process per config
#: (scripts/quadrilaterals_curve.py pools them). ``demo``: ``deviants`` at 48 px, 800 warm-up-cosine steps
#: from 2e-3, a quarter of the images deviants; ``demo_supervised``: the same on the 11 references
#: (docs/results/quadrilaterals.md says why each choice).
CONFIGS["demo"] = with_overrides(CONFIGS["deviants"], {
    "arms": ("gensim",), "num_runs": 3, "num_steps": 800, "data.image_size": 48, "eval.every": 0,
    "optim.schedule": "warmup_cosine", "optim.warmup_steps": 50, "optim.learning_rate": 2e-3,
    "data.train_variants": ("reference",) * 12 + ("deviant_1", "deviant_2", "deviant_3", "deviant_4"),
})
CONFIGS["demo_supervised"] = with_overrides(
    CONFIGS["demo"], {"arms": ("supervised",), "data.train_variants": ("reference",)}
)
# fmt: on


def make_objective(objective: str, config: Config):
    """The :mod:`gensim_jax.training` objective for ``objective``."""
    o = config.objectives
    if objective == "gensim":  # Euclidean distances of the image embeddings against the "features" (its defaults)
        return DistanceRegression(exclude_diagonal=o.gensim.exclude_diagonal)
    if objective == "supervised":
        return CrossEntropy(input_key="image", label_key="label")
    if objective == "simclr":
        return NTXent(temperature=o.simclr.temperature, variant=o.simclr.variant, output="projection")
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
    """Variables of ``model.pretrained`` (a PyTorch CORnet checkpoint) for ``objective``: supervised appends the
    11 shapes to the 1000-way read-out (Appendix L), the other arms drop it
    (:func:`~gensim_jax.models.torch_import.fine_tuning_variables`)."""
    from gensim_jax.models.torch_import import fine_tuning_variables

    new = NUM_SHAPES if objective == "supervised" else None
    kw = model_kwargs(objective, config)
    return fine_tuning_variables(config.model.name, config.model.pretrained, kw, seed, new_classes=new)


def test_trials(config: Config) -> oddball.OddballTrials:
    """The seeded oddball test set of ``config`` (``eval.seed``, ``eval.trials_per_condition``, ``data.image_size``)."""
    return oddball.test_trials(config.eval.seed, config.eval.trials_per_condition, config.data.image_size)


def embedding_fn(config: Config, model, variables):
    """``images -> (N, D)``: the run's encoder as its export will be read (:func:`~gensim_jax.evaluation.embed.encoder`)."""
    enc = encoder(model, variables, image_size=int(config.data.image_size), preprocess="imagenet")
    return lambda images: enc(images, config.eval.batch_size)


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
    NOTES = {
        "paper": "Appendix L: CORnet-S at 224 px, 10 runs x 3 arms x 2,235 steps: for accelerators",
        "cpu_small": "CORnet-Z at 64 px, 2 runs x 3 arms x 120 steps: about 7 min on 2 CPU cores",
        "curve": "learning curves of docs/results/quadrilaterals.md, 5 runs x 2 arms x 500 steps: 35 min on 2 CPU cores",
        "deviants": "as curve, half of the images deviants, 3 runs x 2 arms x 1,000 steps: 40 min on 2 CPU cores",
        "demo": "make demo's GenSim arm, 48 px, a quarter deviants, 3 runs x 800 steps: 4 min on 2 CPU cores",
        "demo_supervised": "make demo's supervised arm on the 11 references, 3 runs x 800 steps: 3 min on 2 CPU cores",
    }
    OBJECTIVES = OBJECTIVES
    AUGMENT_PRESET = "quadrilaterals"

    def validate(self, config: Config) -> Config:
        config = super().validate(config)
        self.check_batch_size(config, config.data.num_train_images)
        model, ev = config.model, config.eval
        if not model.name.startswith("cornet_"):
            raise ValueError(f"model.name must be a CORnet (cornet_z, cornet_rt, cornet_s), got {model.name!r}")
        if model.cornet_times is not None and model.name != "cornet_s":
            raise ValueError(f"model.cornet_times applies to cornet_s only, got model.name {model.name!r}")
        check_data_config(config.data)
        oddball.check_eval_config(ev)
        return config

    def intro(self, config: Config) -> Optional[str]:
        return None if config.model.pretrained else PRETRAINED_NOTE

    def prepare(self, config: Config, training: bool = True) -> Data:
        return Data(training_source(config.data, config.seed) if training else None, test_trials(config))

    def num_train_examples(self, config: Config, data: Data) -> int:
        return config.data.num_train_images

    def arm(self, name: str, config: Config, data: Optional[Data]):
        kw = model_kwargs(name, config)
        model = get_model(config.model.name, **kw)
        offset = IMAGENET_CLASSES if config.model.pretrained else 0  # the 11 classes follow ImageNet's 1,000
        batch_kw = {"image_size": config.data.image_size, "label_offset": offset, "simclr": config.objectives.simclr}
        target = config.eval.readout_target_error

        def evaluate(model, variables, seed):
            return oddball.evaluate(embedding_fn(config, model, variables), data.trials, target)

        def curve(variables, step):  # eval.every: both read-outs during training, per shape (the learning curve)
            return oddball.curve_metrics(evaluate(model, variables, config.seed))

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
            metadata={"features": ((len(quads.FEATURE_NAMES),), np.float32)} if name == "gensim" else {},
            init=(lambda seed: pretrained_variables(name, config, seed)) if config.model.pretrained else None,
            evaluate=evaluate,
            periodic_eval=(config.eval.every, curve) if config.eval.every else None,
        )

    def baselines(self, config: Config, data: Data) -> dict:
        """The features themselves, the pixels and the bare encoder before training (``initial``, or ``pretrained``)."""
        model = get_model(config.model.name, **model_kwargs(None, config))
        if config.model.pretrained:
            name, variables = "pretrained", pretrained_variables(None, config, config.seed)
        else:
            bare = self.image_arm(None, config, model=model, objective=None, batches=None)  # its example image
            name, variables = "initial", bare.init_variables(config.seed)
        target = config.eval.readout_target_error
        return {
            "features": [oddball.readout(data.trials.features, data.trials, target)],
            "pixels": [oddball.evaluate(oddball.pixel_embedding, data.trials, target)],
            name: [oddball.evaluate(embedding_fn(config, model, variables), data.trials, target)],
        }

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        """``summary`` is the headline (graded) read-out, ``summary_argmax`` the paper's rule (oddball.summarize)."""
        return oddball.summarize(evaluations, len(data.trials.images), config.eval.readout_target_error)

    def plot(self, results: dict, path) -> None:
        cfg = results["config"]
        what = f"{cfg['model']['name']}, {cfg['data']['image_size']} px, {cfg['num_runs']} run(s)"
        title = f"Oddball error per shape (graded read-out at the humans' mean error): {what}"
        oddball.plot_oddball(results["summary"], path, title=title)

    def format_table(self, results: dict) -> str:
        return format_table(results)


def format_table(results: dict) -> str:
    """oddball.format_table, with the note on pretrained weights when the run trained from scratch."""
    return oddball.format_table(results, None if results["config"]["model"].get("pretrained") else PRETRAINED_NOTE)


EXPERIMENT = Quadrilaterals()
