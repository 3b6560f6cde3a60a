"""Experiment: a tiny declaration for the runner's tests (a research fork's one-file experiment).

Binary feature vectors (5 features) seen through a fixed random projection with noise; ``gensim``
regresses the cosine of a BatchNorm MLP's projection onto the Beta-Bernoulli log similarity of the
features (paper Eq. 2, I3), ``simclr`` is NT-Xent on two noisy views.  Run it by path:
``gensim-jax train tests/training/tiny_experiment.py --config tiny``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import numpy as np

from gensim_jax.models import get_model
from gensim_jax.training import BetaBernoulliTarget, GenSimRegression, NTXent
from gensim_jax.training.experiment import Arm, ArmConfig, Experiment, OptimConfig, TrainConfig

IN, FEATURES = 6, 5


@dataclasses.dataclass(frozen=True)
class Data:
    noise: float = 0.3
    num_examples: int = 64


@dataclasses.dataclass(frozen=True)
class SimCLR(ArmConfig):
    temperature: float = 0.5


@dataclasses.dataclass(frozen=True)
class Objectives:
    gensim: ArmConfig = ArmConfig()
    simclr: SimCLR = SimCLR()


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    arms: tuple = ("gensim", "simclr")
    batch_size: int = 16
    num_steps: int = 20
    # SGD, not Adam: the MLP's output bias feeds a BatchNorm, so its exact gradient is zero; Adam would
    # turn float rounding into full-size steps of it, which differ between device layouts
    optim: OptimConfig = OptimConfig(optimizer="sgd", learning_rate=0.05)
    log_every: int = 1
    checkpoint_every: int = 5
    data: Data = Data()
    objectives: Objectives = Objectives()


CONFIGS = {"tiny": Config()}


def _examples(config, seed: int):
    rng = np.random.default_rng(seed)
    features = (rng.random((config.data.num_examples, FEATURES)) > 0.5).astype(np.float32)
    projection = np.random.default_rng(1234).normal(size=(FEATURES, IN)).astype(np.float32)
    return features, features @ projection


@functools.partial(jax.jit, static_argnums=0)
def _apply(model, variables, x):
    """One program per model and shape for every run, not an XLA compile per operation (the CLI, SLURM and
    multi-process tests run this experiment in fresh interpreters)."""
    return model.apply(variables, x)


class Tiny(Experiment):
    Config = Config
    CONFIGS = CONFIGS
    OBJECTIVES = ("gensim", "simclr")

    def prepare(self, config, training=True):
        return _examples(config, config.seed)

    def arm(self, name, config, data):
        kw = {"in_features": IN, "hidden": 16, "embed_dim": 4, "projection_dims": (8, 3), "projection_batchnorm": True}
        if name == "gensim":
            objective = GenSimRegression(target=BetaBernoulliTarget(), input_key="x", output="projection")
        else:
            objective = NTXent(temperature=config.objectives.simclr.temperature)

        def batches(seed, shard):
            features, x = data

            def stream(position):
                step = position
                while True:  # this process's rows: row j of global batch s is stream position s * B + j
                    pos = shard.positions(step)
                    idx = np.random.default_rng((seed, step)).permutation(len(x))[: config.batch_size][shard.rows]
                    noise = [
                        np.random.default_rng((seed, int(p))).normal(scale=config.data.noise, size=(2, IN)) for p in pos
                    ]
                    noise = np.asarray(noise, np.float32)
                    yield {
                        "x": x[idx],
                        "features": features[idx],
                        "view1": x[idx] + noise[:, 0],
                        "view2": x[idx] + noise[:, 1],
                    }
                    step += 1

            return stream

        def evaluate(model, variables, seed):
            z = np.asarray(_apply(model, variables, data[1])["projection"])
            return {"embedding_norm": float(np.linalg.norm(z, axis=1).mean())}

        return Arm(
            model=get_model("mlp", **kw),
            model_name="mlp",
            model_kwargs=kw,
            objective=objective,
            example_input=np.zeros((1, IN), np.float32),
            # the Beta-Bernoulli target reads the feature vectors
            metadata={"features": ((FEATURES,), np.float32)} if name == "gensim" else {},
            batches=batches,
            evaluate=evaluate,
        )

    def format_table(self, results):
        return "\n".join(f"| {k} | {len(v)} |" for k, v in results["evaluations"].items())


EXPERIMENT = Tiny()
