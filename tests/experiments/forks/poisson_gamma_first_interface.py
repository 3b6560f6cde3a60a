"""A fork's experiment written for the first interface (docs/EXPERIMENTS.md before 0883d40: ``objectives: tuple``).

Kept unchanged: loading it must fail with one line that names the changes (tests/experiments/test_forks.py).
"""

import dataclasses

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln
from scipy import stats

from gensim_jax.models import get_model
from gensim_jax.training import FunctionTarget, GenSimRegression
from gensim_jax.training.experiment import Experiment, TrainConfig

FEATURES, PER_SOURCE = 8, 4


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    objectives: tuple = ("gensim",)
    num_sources: int = 256  # training sources; each emits PER_SOURCE count vectors
    gamma_shape: float = 2.0  # a
    gamma_rate: float = 0.5  # b
    num_steps: int = 30
    batch_size: int = 32
    learning_rate: float = 3e-3
    log_every: int = 10


def log_similarity(x, y, a, b):
    """``(Bx, By)`` log s of count vectors under the Poisson-Gamma model (the closed form above)."""
    x, y = x[:, None, :], y[None, :, :]
    terms = (
        gammaln(a + x + y)
        + gammaln(a)
        - gammaln(a + x)
        - gammaln(a + y)
        - a * jnp.log(b)
        - (a + x + y) * jnp.log(b + 2.0)
        + (2.0 * a + x + y) * jnp.log(b + 1.0)
    )
    return terms.sum(-1)


def sample_counts(num_sources, a, b, seed):
    """``(num_sources * PER_SOURCE, FEATURES)`` float32 counts, PER_SOURCE per source."""
    rng = np.random.default_rng(seed)
    rates = rng.gamma(a, 1.0 / b, size=(num_sources, 1, FEATURES))
    return rng.poisson(rates, size=(num_sources, PER_SOURCE, FEATURES)).reshape(-1, FEATURES).astype(np.float32)


class PoissonGamma(Experiment):
    Config = Config
    CONFIGS = {"small": Config()}
    OBJECTIVES = ("gensim",)

    def prepare(self, config):  # data shared by every run: training and held-out counts
        a, b = config.gamma_shape, config.gamma_rate
        return sample_counts(config.num_sources, a, b, config.seed), sample_counts(64, a, b, config.seed + 10_000)

    def example_input(self, arm, config):  # one input, for model.init
        return np.zeros((1, FEATURES), np.float32)

    def model(self, arm, config):  # (module, registry name, registry kwargs)
        kw = {"in_features": FEATURES, "hidden": 64, "embed_dim": 16}
        return get_model("mlp", **kw), "mlp", kw

    def objective(self, arm, config):
        a, b = config.gamma_shape, config.gamma_rate
        kernel = lambda x, y: log_similarity(x, y, a, b)  # noqa: E731
        reference = np.asarray(kernel(*(2 * [sample_counts(32, a, b, 12_345)])))  # fixes the target's scale
        target = FunctionTarget(fn=kernel, key="counts").with_transform("affine", reference)
        return GenSimRegression(target=target, input_key="x")

    def metadata_spec(self, arm, config):  # what the target reads, for the runner's check and for plan
        return {"counts": ((FEATURES,), np.float32)}

    def batches(self, arm, config, data, seed, shard):  # position -> this process's rows of every batch
        counts = data[0]

        def stream(position):
            step = position
            while True:  # global batch `step` is one seeded draw; this process keeps its rows
                rows = np.random.default_rng((seed, step)).permutation(len(counts))[: config.batch_size]
                x = counts[rows[shard.rows]]
                yield {"x": np.log1p(x), "counts": x}
                step += 1

        return stream

    def evaluate_run(self, arm, config, data, model, variables, seed):  # held-out rank correlation
        x = data[1]
        z = np.asarray(model.apply(variables, np.log1p(x))["embedding"])
        z = z / (np.linalg.norm(z, axis=1, keepdims=True) + 1e-12)
        upper = np.triu_indices(len(x), 1)
        target = np.asarray(log_similarity(x, x, config.gamma_shape, config.gamma_rate))[upper]
        return {"spearman_vs_log_s": float(stats.spearmanr((z @ z.T)[upper], target)[0])}

    def format_table(self, results):
        rho = [e["spearman_vs_log_s"] for e in results["evaluations"]["gensim"]]
        return f"| held-out Spearman(cosine, log s) | {np.mean(rho):.3f} |"


EXPERIMENT = PoissonGamma()
