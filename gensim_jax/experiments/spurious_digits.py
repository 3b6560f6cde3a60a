"""Experiment: spurious digits -- does a class-centre loss make LeNet ignore the background? (seed 003).

The thesis of seed 003 (Sec. 3, 4) builds a data set in which the background is a spurious cue
for the label: every MNIST digit class has its own pool of CIFAR-10 backgrounds, and each digit is
multiplied onto a background of its class's pool (Sec. 3.1; :mod:`gensim_jax.data.spurious_digits`).
A LeNet-5 (Sec. 3.2; ``get_model("lenet5")``, 62,006 parameters, 84-d penultimate embedding) is
trained with Adam on

    L_total = L_crossentropy + lambda * L_sim                                    (seed 003 Eq. 12)

where ``L_sim = sum_q sum_{i in T_q} ||z_i - mu_q||^2`` pulls the batch's embeddings of one digit
to their class centre (Eqs. 1-3, 11; :class:`gensim_jax.training.CenterLoss`), for
``lambda in {0, 0.25, 0.5, 0.75, 10, 100}`` (Figs. 2 and 4), 5 seeds each, 10 epochs (Fig. 3
also tries 100). Evaluation (:mod:`gensim_jax.evaluation.spurious_digits`): accuracy on MNIST test
digits over backgrounds of their own pool (ID) and over backgrounds of the other digits' pools
(OOD, the spurious cue now points to a wrong class), mean over seeds with a 95% Student-t
interval, plotted against lambda. The thesis finds no significant change of OOD accuracy for
moderate lambda and a drop at extreme values.

Not given by the thesis, our choices (overridable): batch size 64, Adam learning rate 1e-3
(PyTorch's default), 10 backgrounds per digit pool, disjoint pools, OOD by swapped pools, inputs
scaled to ``[0, 1]``, one data set (``data_seed``) shared by all runs while the seed of run ``r``
(``seed + r``) sets initialisation and batch order.

Configs:

``paper``
    tfds ``mnist`` (60,000 / 10,000) on ``cifar10`` train images, read from ``data_dir`` (tfds's
    default directory when None) without downloading: prepare the data first (see
    :func:`tfds_missing_message`), or set ``download=True`` on a machine with network access.
``cpu_small``
    Offline, no tfds: procedural stand-ins for both data sets
    (:mod:`gensim_jax.data.synthetic_digits`: stroke glyphs with random affine jitter instead of
    MNIST, smooth two-colour fields instead of CIFAR-10) put through the same pool and composition
    code; 1,000 training and 500 + 500 test images, 2 backgrounds per pool, glyph jitter 1.3,
    3 seeds, 4 epochs of batch 32. It checks the pipeline and shows the shortcut (ID >> OOD); it is
    not a reproduction of the thesis's numbers.

The arms of a run are the lambdas (``lambda_0``, ``lambda_0.25``, ...: :func:`lambda_dir`); the
objective of an arm is :class:`~gensim_jax.training.CenterLoss` with that lambda, a traced leaf of
the objective, so one compiled step serves the whole grid and every seed (the runner's step cache). The data
(:mod:`gensim_jax.data.spurious_digits`: :func:`~gensim_jax.data.spurious_digits.load_arrays`,
:func:`~gensim_jax.data.spurious_digits.make_splits`) and the evaluation
(:func:`gensim_jax.evaluation.spurious_digits.evaluate`) are library functions shared with
``python -m eval spurious_digits``.

Outputs: ``workdir/lambda_<lam>/run<r>/`` holds ``config.json``, ``metrics.jsonl`` (loss and train
accuracy as means over ``log_every`` steps, and ``evals_per_run`` times ``eval/id_accuracy``,
``eval/ood_accuracy``), ``checkpoints/`` (an interrupted call resumes with ``--resume``) and
``export/`` (re-evaluate with ``python -m eval spurious_digits --workdir WORKDIR``);
``workdir/config.json``, ``results.json`` and ``spurious_digits.png``.

Declaration :data:`EXPERIMENT`, run by :func:`gensim_jax.training.runner.run_experiment`:
``gensim-jax train spurious_digits --config cpu_small`` (``python -m train`` in a checkout).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Iterator, Optional

import numpy as np

from gensim_jax.data.spurious_digits import (
    DATA_SOURCES,
    OOD_MODES,
    TFDS_DATASETS,
    DataConfig,
    check_data_config,
    evaluation_sets,
    load_arrays,
    make_splits,
    preprocess,
)
from gensim_jax.evaluation import spurious_digits as protocol
from gensim_jax.models import get_model
from gensim_jax.training import CenterLoss
from gensim_jax.training.experiment import Experiment, TrainConfig

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 10.0, 100.0)


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig, DataConfig):
    """Seed 003: LeNet-5, Adam, CE + lambda L_sim, lambda in {0, .25, .5, .75, 10, 100}, 5 seeds, 10 epochs.

    The data fields (``data``, ``data_dir``, ``download``, ``data_seed``, ``per_class``,
    ``overlap``, ``ood``, ``num_train_images``, ``num_test_images``, ``num_backgrounds``,
    ``num_ood_backgrounds``, ``digit_jitter``) are those of
    :class:`gensim_jax.data.spurious_digits.DataConfig`; the optimisation fields those of
    :class:`~gensim_jax.training.experiment.TrainConfig`.
    """

    seed: int = 0
    num_runs: int = 5
    lambdas: tuple = LAMBDAS
    # optimisation
    model: str = "lenet5"
    epochs: float = 10.0
    num_steps: Optional[int] = None  # overrides epochs when set
    batch_size: int = 64  # ours (the thesis does not give it)
    optimizer: str = "adam"
    learning_rate: float = 1e-3  # ours: PyTorch's Adam default
    log_every: int = 100  # 60,000 / 64 x 10 epochs = 9,380 steps: ~94 loss lines
    checkpoint_every: int = 1000
    # evaluation
    evals_per_run: int = 10  # ID/OOD accuracy logged this many times per run (0: only at the end)
    eval_batch_size: int = 1000
    confidence: float = 0.95


CONFIGS = {
    "paper": Config(),
    # Offline on a 2-core CPU in about 3-4 minutes: procedural digits and backgrounds, 1,000 training
    # images over 2 backgrounds per digit pool (a strong spurious cue), the whole lambda grid x 3 seeds,
    # 4 epochs of batch 32 (125 steps), 500 + 500 test images, evaluated at the end of each run.
    "cpu_small": Config(
        num_runs=3,
        data="synthetic",
        num_train_images=1000,
        num_test_images=500,
        per_class=2,
        num_backgrounds=100,
        num_ood_backgrounds=50,
        digit_jitter=1.3,
        epochs=4.0,
        batch_size=32,
        evals_per_run=0,
        log_every=5,
        checkpoint_every=10_000,
    ),
}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_batches(source, config: Config, seed: int):
    """``position -> iterator`` of training batches (``image``, ``label``, ``mask``) from batch ``position`` on."""
    from gensim_jax.data import pipelines

    def batches(position: int) -> Iterator[dict]:
        ds = pipelines.labelled_batches(source, config.batch_size, seed=seed, keys=["label"], start_step=position)
        for batch in pipelines.as_numpy(ds):
            yield {"image": preprocess(batch["image"]), "label": batch["label"].astype(np.int32), "mask": batch["mask"]}

    return batches


# --------------------------------------------------------------------------------------------
# Model and objective
# --------------------------------------------------------------------------------------------

MODEL_KWARGS = {"num_classes": 10}


def make_model(config: Config):
    """LeNet-5 with the 10-way classifier (seed 003 Sec. 3.2)."""
    return get_model(config.model, **MODEL_KWARGS)


def lambda_dir(lam: float) -> str:
    """Directory (arm) name of a lambda: ``lambda_0``, ``lambda_0.25``, ``lambda_100``."""
    return f"lambda_{float(lam):g}"


def arm_lambdas(config: Config) -> dict:
    """``{arm name: lambda}`` in the order of ``config.lambdas``."""
    return {lambda_dir(lam): float(lam) for lam in config.lambdas}


# --------------------------------------------------------------------------------------------
# Declaration
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Data:
    """What every run shares: the three splits, the composed test sets, one compiled predictor."""

    splits: dict
    sets: dict
    seconds: float
    predictors: dict = dataclasses.field(default_factory=dict)

    def predictor(self, model, batch_size: int):
        """One :func:`~gensim_jax.evaluation.spurious_digits.make_predictor` per model (compiled once for all runs)."""
        key = (model, batch_size)
        try:
            if key not in self.predictors:
                self.predictors[key] = protocol.make_predictor(model, batch_size)
            return self.predictors[key]
        except TypeError:  # an unhashable module
            return protocol.make_predictor(model, batch_size)


class SpuriousDigits(Experiment):
    """Spurious digits: ID / OOD accuracy of LeNet-5 against the centre-loss weight lambda (seed 003)."""

    name = "spurious_digits"
    Config = Config
    CONFIGS = CONFIGS
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
        check_data_config(config)
        if config.batch_size < 2 or (
            config.num_train_images is not None and config.batch_size > config.num_train_images
        ):
            raise ValueError(
                f"batch_size must lie in [2, num_train_images={config.num_train_images}], got {config.batch_size}"
            )
        if not config.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {config.learning_rate}")
        if config.evals_per_run < 0:
            raise ValueError(f"evals_per_run must be >= 0, got {config.evals_per_run}")
        if config.eval_batch_size < 1:
            raise ValueError(f"eval_batch_size must be >= 1, got {config.eval_batch_size}")
        if not 0.0 < config.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {config.confidence}")
        if config.model != "lenet5":
            raise ValueError(f"model must be 'lenet5' (32x32 RGB input, seed 003 Sec. 3.2), got {config.model!r}")
        return config

    def prepare(self, config: Config) -> Data:
        t0 = time.perf_counter()
        splits = make_splits(config, load_arrays(config))
        return Data(splits, evaluation_sets(splits), time.perf_counter() - t0)

    def arms(self, config: Config) -> tuple:
        return tuple(arm_lambdas(config))

    def num_train_examples(self, config: Config, data: Data) -> int:
        return len(data.splits["train"])

    def model(self, arm: str, config: Config):
        return make_model(config), config.model, dict(MODEL_KWARGS)

    def example_input(self, arm: str, config: Config) -> np.ndarray:
        return np.zeros((1, 32, 32, 3), np.float32)

    def objective(self, arm: str, config: Config):
        # lam is a traced leaf of CenterLoss: every arm and seed share the runner's one compiled step
        return CenterLoss(lam=arm_lambdas(config)[arm], num_classes=10)

    def batches(self, arm: str, config: Config, data: Data, seed: int):
        return make_batches(data.splits["train"], config, seed)

    def export_info(self, arm: str, config: Config) -> dict:
        return {"image_size": 32, "preprocess": "unit", "lam": arm_lambdas(config)[arm]}

    def periodic_eval(self, arm: str, config: Config, data: Data, model):
        if not config.evals_per_run:
            return None
        predict = data.predictor(model, config.eval_batch_size)
        every = max(1, self.num_steps(config, data) // config.evals_per_run)
        return every, lambda state, step: protocol.evaluate(predict, state.variables, data.sets)

    def evaluate_run(self, arm: str, config: Config, data: Data, model, variables, seed: int) -> dict:
        return protocol.evaluate(data.predictor(model, config.eval_batch_size), variables, data.sets)

    def summarize(self, config: Config, data: Data, evaluations: dict, training: dict) -> dict:
        per_run: dict = {}
        for arm, lam in arm_lambdas(config).items():
            rows = per_run.setdefault(f"{lam:g}", [])
            for acc, record in zip(evaluations.get(arm, []), training.get(arm, [])):
                row = {
                    "seed": record["seed"],
                    **acc,
                    "seconds": record["seconds"],
                    "final_loss": record["final_loss"],
                    "losses": record["losses"],
                }
                if "evals" in record:  # the runner's eval/ lines, when it passes them on
                    row["curve"] = [
                        {
                            "step": m["step"],
                            "id_accuracy": m["eval/id_accuracy"],
                            "ood_accuracy": m["eval/ood_accuracy"],
                        }
                        for m in record["evals"]
                    ]
                rows.append(row)
        return {
            "experiment": self.name,
            "data": (
                "offline procedural stand-ins (gensim_jax.data.synthetic_digits), not MNIST/CIFAR-10"
                if config.data == "synthetic"
                else "tfds mnist on cifar10"
            ),
            "num_train": len(data.splits["train"]),
            "num_test": {k: int(len(v[1])) for k, v in data.sets.items()},
            "summary": protocol.summarize(per_run, config.confidence),
            "per_run": per_run,
            "data_seconds": data.seconds,
        }

    def plot(self, results: dict, path) -> None:
        cfg = results["config"]
        data = "procedural stand-ins" if cfg["data"] == "synthetic" else "MNIST on CIFAR-10"
        protocol.plot_accuracy_vs_lambda(
            results["summary"],
            path,
            confidence=cfg["confidence"],
            title=f"Spurious digits ({data}): LeNet-5, CE + lambda L_sim, {cfg['num_runs']} seeds",
        )

    def format_table(self, results: dict) -> str:
        return format_table(results)


def format_table(results: dict) -> str:
    """Lambda x ID / OOD accuracy (mean and t-interval over seeds) as Markdown, with a line on the data."""
    cfg = results["config"]
    head = (
        f"Spurious digits, {results['data']}; {cfg['num_runs']} seeds, {results['num_steps']} steps of "
        f"{cfg['batch_size']} ({results['num_train']} training images), OOD = {cfg['ood']} backgrounds:"
    )
    return head + "\n" + protocol.format_table(results["summary"], cfg["confidence"])


EXPERIMENT = SpuriousDigits()

__all__ = [
    "CONFIGS",
    "Config",
    "DATA_SOURCES",
    "EXPERIMENT",
    "LAMBDAS",
    "OOD_MODES",
    "SpuriousDigits",
    "TFDS_DATASETS",
    "arm_lambdas",
    "format_table",
    "lambda_dir",
    "make_batches",
    "make_model",
]
