"""A fork's experiment that spells one renamed name the previous way: a run-level ``learning_rate`` in its Config.

docs/EXPERIMENTS.md's example (Poisson-Gamma counts, a GenSim and a supervised arm) with ``learning_rate``
where the current interface has ``optim.learning_rate``, and the import paths it had before
``gensim_jax.fork``. Kept unchanged: it must train, with a deprecation warning naming
``optim.learning_rate``, until 0.3.0 removes the old spelling (tests/experiments/test_forks.py).
"""

import dataclasses

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln
from scipy import stats

from gensim_jax.evaluation.plotting import figure, save_figure
from gensim_jax.models import get_model
from gensim_jax.training import CrossEntropy, FunctionTarget, GenSimRegression
from gensim_jax.training.experiment import Arm, ArmConfig, Experiment, TrainConfig

FEATURES, PER_SOURCE = 8, 4
ARMS = ("gensim", "supervised")


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model's parameters and the training set's size
    num_sources: int = 256  # training sources; each emits PER_SOURCE count vectors
    gamma_shape: float = 2.0  # a
    gamma_rate: float = 0.5  # b


@dataclasses.dataclass(frozen=True)
class Objectives:  # one section per arm (--set objectives.supervised.learning_rate=1e-2)
    gensim: ArmConfig = ArmConfig()
    supervised: ArmConfig = ArmConfig()


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    arms: tuple[str, ...] = ARMS  # the arms trained (--objective); any number of names
    num_steps: int = 30
    batch_size: int = 32
    learning_rate: float = 3e-3  # the previous spelling of optim.learning_rate (deprecated in 0.2.0)
    log_every: int = 10
    data: Data = Data()
    objectives: Objectives = Objectives()


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
    """``(num_sources * PER_SOURCE, FEATURES)`` float32 counts, PER_SOURCE per source (row // PER_SOURCE)."""
    rng = np.random.default_rng(seed)
    rates = rng.gamma(a, 1.0 / b, size=(num_sources, 1, FEATURES))
    return rng.poisson(rates, size=(num_sources, PER_SOURCE, FEATURES)).reshape(-1, FEATURES).astype(np.float32)


class PoissonGamma(Experiment):
    Config = Config
    CONFIGS = {"small": Config()}
    OBJECTIVES = ARMS

    def prepare(self, config, training=True):  # data shared by every run: training and held-out counts
        a, b = config.data.gamma_shape, config.data.gamma_rate
        return sample_counts(config.data.num_sources, a, b, config.seed), sample_counts(64, a, b, config.seed + 10_000)

    def arm(self, name, config, data):  # everything the runner needs for one arm
        a, b = config.data.gamma_shape, config.data.gamma_rate
        kernel = lambda x, y: log_similarity(x, y, a, b)  # noqa: E731
        kw = {"in_features": FEATURES, "hidden": 64, "embed_dim": 16}
        if name == "gensim":  # regression of the cosine onto the target computed in the step (paper Eq. 2)
            # log s is unbounded, and its range depends on a, b and FEATURES, while a cosine lies in [-1, 1]:
            # regressed onto log s as it is, the loss would be the scale mismatch. with_transform maps the
            # range of log s over a reference sample onto [-1, 1], with two constants fixed here, not per batch
            reference = np.asarray(kernel(*(2 * [sample_counts(32, a, b, 12_345)])))
            target = FunctionTarget(fn=kernel, key="counts").with_transform("affine", reference)
            objective = GenSimRegression(target=target, input_key="x")
        else:  # the non-GenSim baseline: which training source emitted the counts (a classifier head)
            kw["num_classes"] = config.data.num_sources
            objective = CrossEntropy(input_key="x", label_key="label")

        def batches(seed, shard):  # position -> this process's rows of every global batch
            def stream(position):
                counts, step = data[0], position
                while True:  # global batch `step` is one seeded draw; this process keeps its rows
                    rows = np.random.default_rng((seed, step)).permutation(len(counts))[: config.batch_size][shard.rows]
                    x = counts[rows]
                    yield {"x": np.log1p(x), "counts": x, "label": (rows // PER_SOURCE).astype(np.int32)}
                    step += 1

            return stream

        def evaluate(model, variables, seed):  # held-out rank correlation of the cosine with log s
            x = data[1]
            z = np.asarray(model.apply(variables, np.log1p(x))["embedding"])
            z = z / (np.linalg.norm(z, axis=1, keepdims=True) + 1e-12)
            upper = np.triu_indices(len(x), 1)
            return {"spearman_vs_log_s": float(stats.spearmanr((z @ z.T)[upper], np.asarray(kernel(x, x))[upper])[0])}

        return Arm(
            model=get_model("mlp", **kw),
            model_name="mlp",  # the registry name and arguments rebuild the model from its export
            model_kwargs=kw,
            objective=objective,
            example_input=np.zeros((1, FEATURES), np.float32),  # one input, for model.init
            metadata={"counts": ((FEATURES,), np.float32)},  # what the target reads: the runner's check, plan
            batches=batches,
            evaluate=evaluate,
        )

    def baselines(self, config, data):  # the untrained encoder: the reference row of the table and figure
        arm = self.arm("gensim", config, data)
        return {"untrained": [arm.evaluation(arm.model, arm.init_variables(config.seed), config.seed)]}

    def plot(self, results, path):  # the figure: each encoder's held-out Spearman, a bar and one dot per run
        names = list(results["evaluations"])
        fig, (ax,) = figure(4.0, 3.0)
        for i, name in enumerate(names):
            rho = [e["spearman_vs_log_s"] for e in results["evaluations"][name]]
            ax.bar(i, np.mean(rho), color="#4C72B0")
            ax.plot([i] * len(rho), rho, "k.")
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel("held-out Spearman(cosine, log s)")
        save_figure(fig, path)

    def format_table(self, results):
        rows = [
            f"| {n} | {np.mean([e['spearman_vs_log_s'] for e in v]):.3f} |" for n, v in results["evaluations"].items()
        ]
        return "\n".join(["| encoder | held-out Spearman(cosine, log s) |", "|---|---|", *rows])


EXPERIMENT = PoissonGamma()
