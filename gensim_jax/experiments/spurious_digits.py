"""Experiment: spurious digits -- does a class-centre loss make LeNet ignore the background? (seed 003).

Every MNIST digit class has its own pool of CIFAR-10 backgrounds, and each digit is multiplied onto
a background of its class's pool (seed 003 Sec. 3.1; :mod:`gensim_jax.data.spurious_digits`), so
the background is a spurious cue. LeNet-5 is trained with ``L = ce_weight * CE + lambda * L_sim``
(Eq. 12; ``L_sim`` pulls a batch's embeddings of one digit to their class centre, Eqs. 1-3, 11:
:class:`gensim_jax.training.CenterLoss`), one arm per lambda (``lambda_0``, ``lambda_0.25``, ...;
lambda is a traced leaf, so one compiled step serves the grid and every seed), and evaluated on
MNIST test digits over backgrounds of their own pool (ID) and of the other digits' pools (OOD)
with :mod:`gensim_jax.evaluation.spurious_digits` (shared with ``python -m eval spurious_digits``).

Configs: ``paper`` (tfds MNIST on CIFAR-10 from ``data.data_dir``, lambda in {0, .25, .5, .75, 10,
100}, 5 seeds, 10 epochs of 64; prepare the data first: :func:`gensim_jax.data.spurious_digits.tfds_missing_message`),
``cpu_small`` (offline procedural stand-ins, 1,000 training images, 3 seeds, 125 steps) and
``thesis_mean`` (the thesis's "MSE" reading of L_sim, PyTorch's initialisation, the nearest-centre
read-out; Fig. 5 is ``--set objectives.center.ce_weight=0 lambdas=[1]``). Sections: ``lambdas`` (the
arms), ``model``, ``data`` (:class:`gensim_jax.data.spurious_digits.DataConfig`),
``objectives.center`` (``sim_reduction``, ``ce_weight``), ``eval``, ``optim``.
docs/api/experiment_spurious_digits.md has the details; run with ``gensim-jax train spurious_digits
--config cpu_small`` (``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

from gensim_jax.config import with_overrides
from gensim_jax.data.spurious_digits import (
    DataConfig,
    check_data_config,
    evaluation_sets,
    labelled_batches,
    load_arrays,
    make_splits,
)
from gensim_jax.evaluation import spurious_digits as protocol
from gensim_jax.evaluation.spurious_digits import RunData
from gensim_jax.evaluation.spurious_digits import results_table as format_table
from gensim_jax.losses.center import SIM_FORMS
from gensim_jax.models import get_model
from gensim_jax.training import CenterLoss
from gensim_jax.training.experiment import ImageExperiment, OptimConfig, TrainConfig

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 10.0, 100.0)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: LeNet-5, optionally with PyTorch's default initialisation."""

    name: str = "lenet5"
    torch_init: bool = False  # PyTorch's default nn.Conv2d / nn.Linear initialisation of LeNet-5


@dataclasses.dataclass(frozen=True)
class CenterArm:
    """``objectives.center``: the class-centre objective of every lambda arm (seed 003 Eq. 12 and its readings;
    defaults: Eq. 11 as written, CE weight 1)."""

    sim_reduction: str = "sum"  # "sum": Eq. 11 literally; "mean": element mean over batch x width (the "MSE")
    ce_weight: float = 1.0  # 0: the thesis's Fig. 5 run (cross entropy off)


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: the one objective, trained once per lambda (the arms)."""

    center: CenterArm = CenterArm()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: ID / OOD accuracy during and after training, its interval, the class-centre read-out."""

    evals_per_run: int = 10  # ID/OOD accuracy logged this many times per run (0: only at the end)
    batch_size: int = 1000
    confidence: float = 0.95
    centre_eval: bool = False  # also the nearest-class-centre accuracy of the embedding (ID and OOD)
    centre_images: int = 10_000  # training images the centres come from (evenly spaced; all if fewer)


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Seed 003: LeNet-5, Adam, CE + lambda L_sim, lambda in {0, .25, .5, .75, 10, 100}, 5 seeds, 10 epochs.

    ``lambdas`` are the arms; the ``data`` section is :class:`gensim_jax.data.spurious_digits.DataConfig`
    (shared with ``python -m eval spurious_digits``); the run-level and ``optim`` fields are those of
    :class:`~gensim_jax.training.experiment.TrainConfig`.
    """

    num_runs: int = 5
    lambdas: tuple[float, ...] = LAMBDAS
    epochs: float = 10.0
    batch_size: int = 64  # ours (the thesis does not give it)
    optim: OptimConfig = OptimConfig(optimizer="adam", learning_rate=1e-3)  # ours: PyTorch's Adam default
    log_every: int = 100  # 60,000 / 64 x 10 epochs = 9,380 steps: ~94 loss lines
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


CONFIGS = {
    "paper": Config(),
    # Offline on a 2-core CPU in about 3-4 minutes: procedural digits and backgrounds, 1,000 training
    # images over 2 backgrounds per digit pool (a strong spurious cue), the whole lambda grid x 3 seeds,
    # 4 epochs of batch 32 (125 steps), 500 + 500 test images, evaluated at the end of each run.
    "cpu_small": with_overrides(
        Config(),
        {
            "num_runs": 3,
            "data.source": "synthetic",
            "data.num_train_images": 1000,
            "data.num_test_images": 500,
            "data.per_class": 2,
            "data.num_backgrounds": 100,
            "data.num_ood_backgrounds": 50,
            "data.digit_jitter": 1.3,
            "epochs": 4.0,
            "batch_size": 32,
            "eval.evals_per_run": 0,
            "log_every": 5,
            "checkpoint_every": 10_000,
        },
    ),
}
# The cpu_small data with the thesis's "MSE" reading of L_sim (element mean over batch and embedding
# width, which starts near the thesis's 1e-5), PyTorch's default LeNet-5 initialisation, 5 seeds,
# 8 epochs (250 steps of 32), and the nearest-class-centre read-out of the embedding. The thesis's
# Fig. 5 run is this config with `--set objectives.center.ce_weight=0 lambdas=[1]`.
CONFIGS["thesis_mean"] = with_overrides(
    CONFIGS["cpu_small"],
    {
        "num_runs": 5,
        "objectives.center.sim_reduction": "mean",
        "model.torch_init": True,
        "epochs": 8.0,
        "eval.centre_eval": True,
    },
)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Model and objective
# --------------------------------------------------------------------------------------------

MODEL_KWARGS = {"num_classes": 10}


def model_kwargs(config: Config) -> dict:
    """``get_model`` keyword arguments: the 10-way classifier, and ``torch_init`` when the config asks for it."""
    return {**MODEL_KWARGS, **({"torch_init": True} if config.model.torch_init else {})}


def make_model(config: Config):
    """LeNet-5 with the 10-way classifier (seed 003 Sec. 3.2), PyTorch-initialised with ``torch_init``."""
    return get_model(config.model.name, **model_kwargs(config))


def lambda_dir(lam: float) -> str:
    """Directory (arm) name of a lambda: ``lambda_0``, ``lambda_0.25``, ``lambda_100``."""
    return f"lambda_{float(lam):g}"


def arm_lambdas(config: Config) -> dict:
    """``{arm name: lambda}`` in the order of ``config.lambdas``."""
    return {lambda_dir(lam): float(lam) for lam in config.lambdas}


class SpuriousDigits(ImageExperiment):
    """Spurious digits: ID / OOD accuracy of LeNet-5 against the centre-loss weight lambda (seed 003)."""

    name = "spurious_digits"
    Config = Config
    CONFIGS = CONFIGS
    NOTES = {
        "paper": "LeNet-5 on MNIST over CIFAR-10 (tfds, data.data_dir), 5 runs x 6 lambdas x 10 epochs: for a GPU",
        "cpu_small": "procedural digits, 3 runs x 6 lambdas x 125 steps: 2 min on 2 idle CPU cores",
        "thesis_mean": "docs/results/spurious_digits.md's runs, L_sim as a mean, 5 runs x 6 lambdas: 6-8 min on 2 CPU cores",
    }
    MODELS = ("lenet5",)

    def validate(self, config: Config) -> Config:
        super().validate(config)
        lams = config.lambdas
        if not lams or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 for v in lams
        ):
            raise ValueError(f"lambdas must be a non-empty tuple of finite numbers >= 0, got {lams!r}")
        if len(set(lambda_dir(v) for v in lams)) != len(lams):
            raise ValueError(
                f"lambdas must be distinct (to 6 significant digits: they name the run directories), got {lams!r}"
            )
        check_data_config(config.data)
        n, ev, center = config.data.num_train_images, config.eval, config.objectives.center
        if config.batch_size < 2 or (n is not None and config.batch_size > n):
            raise ValueError(f"batch_size must lie in [2, data.num_train_images={n}], got {config.batch_size}")
        if ev.evals_per_run < 0:
            raise ValueError(f"eval.evals_per_run must be >= 0, got {ev.evals_per_run}")
        if ev.centre_images < 10:
            raise ValueError(f"eval.centre_images must be >= 10 (one per digit at least), got {ev.centre_images}")
        if ev.batch_size < 1:
            raise ValueError(f"eval.batch_size must be >= 1, got {ev.batch_size}")
        if not 0.0 < ev.confidence < 1.0:
            raise ValueError(f"eval.confidence must lie in (0, 1), got {ev.confidence}")
        if center.sim_reduction not in SIM_FORMS:
            raise ValueError(
                f"objectives.center.sim_reduction must be one of {SIM_FORMS}, got {center.sim_reduction!r}"
            )
        w = center.ce_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"objectives.center.ce_weight must be a finite number >= 0, got {w!r}")
        if config.model.name != "lenet5":
            raise ValueError(
                f"model.name must be 'lenet5' (32x32 RGB input, seed 003 Sec. 3.2), got {config.model.name!r}"
            )
        return config

    def prepare(self, config: Config, training: bool = True) -> RunData:
        t0 = time.perf_counter()
        splits = make_splits(config.data, load_arrays(config.data))
        return RunData(splits, evaluation_sets(splits), time.perf_counter() - t0)

    def arms(self, config: Config) -> tuple:
        return tuple(arm_lambdas(config))

    def num_train_examples(self, config: Config, data: RunData) -> int:
        return len(data.splits["train"])

    def image_size(self, config: Config) -> int:
        return 32  # the digits' canvas (seed 003 Sec. 3.1)

    def arm(self, name: str, config: Config, data: Optional[RunData]):
        lam, b = arm_lambdas(config)[name], config.eval.batch_size

        def evaluate(model, variables, seed):
            out = protocol.evaluate(data.predictor(model, b), variables, data.sets)
            if config.eval.centre_eval:
                train = data.centre_train_set(config.eval.centre_images)
                out.update(protocol.evaluate_centres(data.embedder(model, b), variables, train, data.sets))
            return out

        model = make_model(config)
        periodic = None
        if config.eval.evals_per_run and data is not None:
            predict = data.predictor(model, b)
            every = max(1, self.num_steps(config, data) // config.eval.evals_per_run)
            periodic = (every, lambda variables, step: protocol.evaluate(predict, variables, data.sets))
        return self.image_arm(
            name,
            config,
            model=model,
            model_name=config.model.name,
            model_kwargs=model_kwargs(config),
            # lam is a traced leaf of CenterLoss: every arm and seed share the runner's one compiled step
            objective=CenterLoss(
                lam=lam,
                ce_weight=float(config.objectives.center.ce_weight),
                num_classes=10,
                sim_reduction=config.objectives.center.sim_reduction,
            ),
            batches=lambda seed, shard: labelled_batches(data.splits["train"], seed, shard),
            export={"image_size": 32, "preprocess": "unit", "lam": lam},
            evaluate=evaluate,
            periodic_eval=periodic,
        )

    def summarize(self, config: Config, data: RunData, evaluations: dict, training: dict) -> dict:
        per_run = protocol.per_run_rows(arm_lambdas(config), evaluations, training)
        synthetic = config.data.source == "synthetic"
        return {
            "experiment": self.name,
            "data": "offline procedural stand-ins (gensim_jax.data.synthetic_digits), not MNIST/CIFAR-10"
            if synthetic
            else "tfds mnist on cifar10",
            "num_train": len(data.splits["train"]),
            "num_test": {k: int(len(v[1])) for k, v in data.sets.items()},
            "summary": protocol.summarize(per_run, config.eval.confidence),
            "per_run": per_run,
            "data_seconds": data.seconds,
        }

    def plot(self, results: dict, path) -> None:
        protocol.plot_results(results, path)

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = SpuriousDigits()
