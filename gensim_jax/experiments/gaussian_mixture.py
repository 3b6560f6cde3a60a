"""Experiment: GenSim by Monte Carlo triplets on a Gaussian mixture (paper Appendices F-H).

A perceptron (2 -> 32 -> 1, registry name ``mlp``) is trained on ``data.num_triplets`` triplets of
the generative process of Eq. A3 with the quadratic triplet loss of Eq. H1, then evaluated as in
Fig. S1 (:mod:`gensim_jax.evaluation.gaussian_mixture`: accuracy of the 1-D embedding as a component
classifier, Spearman's rho between embedding distance and the closed-form similarity of Eq. H2 over
quantile bins, 95% intervals of the mean distance of same and different pairs). Each epoch visits
the triplets in the order ``jax.random.permutation(k_epoch, num_triplets)`` in full batches, so
``num_steps = epochs * (num_triplets // batch_size)``; run ``r`` draws its triplets, initial
parameters, batch order and test points from ``split(key(seed + r), 4) = (k_data, k_init,
k_shuffle, k_test)``.

Config ``paper`` (the only one: 11,700 steps of a 129-parameter model are CPU-sized): 10,000
triplets, hidden 32, batch 256, Adam (the paper names no optimiser) at 1e-5, 300 epochs. Sections:
``data.num_triplets``, ``model.hidden``, ``objectives.gensim.loss_form``, ``eval.num_test_points`` /
``num_pairs`` / ``num_bins``, ``optim``. Run with ``gensim-jax train gaussian_mixture``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from typing import Iterator

import jax
import numpy as np

from gensim_jax.evaluation import gaussian_mixture as protocol
from gensim_jax.evaluation.gaussian_mixture import format_table
from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.kernels import monte_carlo
from gensim_jax.losses.triplet import TRIPLET_FORMS
from gensim_jax.models import get_model
from gensim_jax.training import TripletObjective
from gensim_jax.training.experiment import Arm, ArmConfig, Experiment, HostShard, OptimConfig, TrainConfig

ARM = "gensim"
MODEL = "mlp"
#: Paper Appendix H / Fig. S1 numbers; ``distance_ratio`` = 4.84 / 1.64 (the centres of the two CIs).
PAPER = {
    "accuracy": 0.997,
    "spearman_rho": -0.99,
    "same_ci": [1.62, 1.66],
    "different_ci": [4.77, 4.91],
    "distance_ratio": 4.84 / 1.64,
}


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data``: the training set (Eq. A3 triplets of the Appendix H mixture)."""

    num_triplets: int = 10_000


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """``model``: the 2 -> hidden -> 1 perceptron (registry name ``mlp``)."""

    hidden: int = 32


@dataclasses.dataclass(frozen=True)
class GenSimArm(ArmConfig):
    """``objectives.gensim``: the triplet loss (Eq. H1: ``quadratic``)."""

    loss_form: str = "quadratic"


@dataclasses.dataclass(frozen=True)
class Objectives:
    """``objectives``: the one arm, ``gensim``."""

    gensim: GenSimArm = GenSimArm()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval``: the Fig. S1 protocol (test points, pairs, quantile bins)."""

    num_test_points: int = 2_000
    num_pairs: int = 100_000
    num_bins: int = 500


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    """Appendix H: 10,000 triplets, hidden 32, batch 256, learning rate 1e-5, 300 epochs.

    ``log_every`` 39 = one epoch of steps (10,000 // 256): the loss curve is the per-epoch mean.
    """

    batch_size: int = 256
    epochs: float = 300.0
    optim: OptimConfig = OptimConfig(optimizer="adam", learning_rate=1e-5)  # the paper names no optimiser
    log_every: int = 39  # one epoch
    checkpoint_every: int = 3_900  # every 100 epochs (a run is 11,700 steps)
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    objectives: Objectives = Objectives()
    eval: EvalConfig = EvalConfig()


#: The paper's run is already CPU-sized (11,700 steps of a 129-parameter model).
CONFIGS = {"paper": Config()}


def run_keys(seed: int) -> tuple:
    """``(k_data, k_init, k_shuffle, k_test)`` of the run with seed ``seed``."""
    return tuple(jax.random.split(jax.random.key(seed), 4))


def steps_per_epoch(config: Config) -> int:
    """Full batches in one pass over the triplets: ``num_triplets // batch_size``."""
    return config.data.num_triplets // config.batch_size


def training_triplets(config: Config, seed: int) -> dict:
    """The run's ``num_triplets`` Eq. A3 triplets as host arrays ``{"anchor", "positive", "negative"}`` (N, 2)."""
    trip = monte_carlo.sample_gaussian_mixture_triplets(
        run_keys(seed)[0], config.data.num_triplets, gm.appendix_h_mixture()
    )
    return {k: np.asarray(getattr(trip, k)) for k in ("anchor", "positive", "negative")}


def make_batches(triplets: dict, config: Config, seed: int, num_steps: int, shard: HostShard):
    """``position -> iterator`` of this process's rows (``shard``) of the triplet batches ``{"anchor", "positive",
    "negative"}`` (B, 2).

    Epoch ``e`` takes ``permutation(split(k_shuffle, E)[e], N)``, ``E = ceil(num_steps / steps_per_epoch)``
    (``epochs`` for a whole number of epochs), in ``steps_per_epoch`` batches; batch ``position``
    is batch ``position % steps_per_epoch`` of epoch ``position // steps_per_epoch``, and this
    process keeps rows ``shard.rows`` of it.
    """
    spe, b = steps_per_epoch(config), config.batch_size
    num_epochs = max(1, math.ceil(num_steps / spe))
    epoch_keys = jax.random.split(run_keys(seed)[2], num_epochs)
    rows = shard.rows

    def batches(position: int) -> Iterator[dict]:
        for epoch in range(position // spe, num_epochs):
            perm = np.asarray(jax.random.permutation(epoch_keys[epoch], config.data.num_triplets))
            for k in range(position % spe if epoch == position // spe else 0, spe):
                idx = perm[k * b : (k + 1) * b][rows]
                yield {name: v[idx] for name, v in triplets.items()}

    return batches


@functools.partial(jax.jit, static_argnums=0)
def _embed(model, variables, x):
    """``model``'s embeddings of ``x``: one program per model and shape, shared by every run (applied
    eagerly, each operation on a new shape compiled a program of its own)."""
    return model.apply(variables, x)["embedding"]


def evaluate(model, variables, config: Config, seed: int):
    """``(report, arrays)`` of the Fig. S1 protocol for the run with seed ``seed``
    (:func:`~gensim_jax.evaluation.gaussian_mixture.appendix_h_evaluation` with ``k_test`` of :func:`run_keys`)."""
    ev = config.eval
    return protocol.appendix_h_evaluation(
        lambda x: np.asarray(_embed(model, variables, x)),
        run_keys(seed)[3],
        num_test_points=ev.num_test_points,
        num_pairs=ev.num_pairs,
        num_bins=ev.num_bins,
        pair_seed=seed + 1,
    )


class GaussianMixture(Experiment):
    """GenSim by Monte Carlo triplets on the Appendix H mixture (paper Fig. S1)."""

    name = "gaussian_mixture"
    Config = Config
    CONFIGS = CONFIGS
    NOTES = {"paper": "the paper's run (10,000 triplets, 2-32-1 perceptron, 11,700 steps): 20-45 s on 2 CPU cores"}

    def validate(self, config: Config) -> Config:
        super().validate(config)
        n, ev = config.data.num_triplets, config.eval
        if n < 1 or config.batch_size > n:
            raise ValueError(
                f"batch_size={config.batch_size} must not exceed data.num_triplets={n} "
                "(an epoch is data.num_triplets // batch_size full batches)"
            )
        if config.model.hidden < 1:
            raise ValueError(f"model.hidden must be >= 1, got {config.model.hidden}")
        form = config.objectives.gensim.loss_form
        if form not in TRIPLET_FORMS:
            raise ValueError(f"objectives.gensim.loss_form must be one of {TRIPLET_FORMS}, got {form!r}")
        if ev.num_bins < 3:
            raise ValueError(f"eval.num_bins must be >= 3 (a rank correlation of the bins), got {ev.num_bins}")
        if ev.num_test_points < 2:
            raise ValueError(f"eval.num_test_points must be >= 2, got {ev.num_test_points}")
        if ev.num_pairs < 2 * ev.num_bins:
            raise ValueError(f"eval.num_pairs must be >= 2 x eval.num_bins = {2 * ev.num_bins}, got {ev.num_pairs}")
        return config

    def arms(self, config: Config) -> tuple:
        return (ARM,)

    def num_steps(self, config: Config, data) -> int:
        """``num_steps``, else ``epochs x (num_triplets // batch_size)`` (rounded up)."""
        if config.num_steps is not None:
            return int(config.num_steps)
        return int(math.ceil(config.epochs * steps_per_epoch(config)))

    def arm(self, name: str, config: Config, data) -> Arm:
        """The perceptron with Eq. H1's triplet loss; ``model.init`` with ``k_init`` of :func:`run_keys` (threefry,
        as before the runner); batches of :func:`make_batches`."""
        kwargs = {"hidden": int(config.model.hidden)}
        model, example = get_model(MODEL, **kwargs), np.zeros((1, 2), np.float32)
        steps = self.num_steps(config, data)
        return Arm(
            model=model,
            model_name=MODEL,
            model_kwargs=kwargs,
            objective=TripletObjective(
                form=config.objectives.gensim.loss_form, distance="euclidean", output="embedding"
            ),
            example_input=example,
            init=lambda seed: dict(model.init(run_keys(seed)[1], example)),
            batches=lambda seed, shard: make_batches(training_triplets(config, seed), config, seed, steps, shard),
            export={"preprocess": "none", "input": "points (N, 2) of the Appendix H mixture"},
            evaluate=lambda model, variables, seed: evaluate(model, variables, config, seed)[0].as_dict(),
        )

    def summarize(self, config: Config, data, evaluations: dict, training: dict) -> dict:
        reports = evaluations[ARM]
        records = training[ARM]
        out = {"experiment": self.name, "report": reports[0], "final_loss": records[0]["final_loss"], "paper": PAPER}
        if len(reports) > 1:
            keys = ("accuracy", "spearman_rho", "distance_ratio", "distance_ratio_component")
            out["runs"] = reports
            out["across_runs"] = {
                k: {
                    "mean": float(np.mean([r[k] for r in reports])),
                    "std": float(np.std([r[k] for r in reports], ddof=1)),
                }
                for k in keys
            }
        return out

    def plot(self, results: dict, path) -> None:
        """Fig. S1 from the export of run 0 (the test points and pairs are redrawn from the seed)."""
        from gensim_jax.training.export import load_exported

        export = Path(path).parent / ARM / "run0" / "export"
        if not export.is_dir():
            return None
        model, variables, _ = load_exported(export)
        known = {f.name for f in dataclasses.fields(Config)}
        config = self.config_from_dict({k: v for k, v in results["config"].items() if k in known})
        _, arrays = evaluate(model, variables, config, config.seed)
        history = results["training"][ARM][0]["losses"]
        protocol.plot_gaussian_mixture(arrays, history, config.eval.num_bins, path)
        return None

    def format_table(self, results: dict) -> str:
        return format_table(results)


EXPERIMENT = GaussianMixture()

__all__ = [
    "ARM",
    "CONFIGS",
    "Config",
    "EXPERIMENT",
    "GaussianMixture",
    "PAPER",
    "evaluate",
    "format_table",
    "make_batches",
    "run_keys",
    "steps_per_epoch",
    "training_triplets",
]
