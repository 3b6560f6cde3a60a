"""Experiment: GenSim by Monte Carlo triplets on a Gaussian mixture (paper Appendices F-H).

A two-layer perceptron (2 -> 32 -> 1) is trained on triplets sampled from the generative process of
Eq. A3 (anchor and positive from one component, negative from a component drawn independently)
with the quadratic triplet loss of Eq. H1, then evaluated as in Fig. S1 (accuracy, Spearman against
the closed-form similarity of Eq. H2, confidence intervals of same/different pair distances).

Entry point: ``train_and_evaluate(config, workdir)``; ``python -m train gaussian_mixture``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from gensim_jax.evaluation import gaussian_mixture as protocol
from gensim_jax import losses
from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.kernels import monte_carlo
from gensim_jax.models.mlp import TwoLayerPerceptron
from gensim_jax.experiments import _common


@dataclasses.dataclass(frozen=True)
class Config:
    """Appendix H: 10,000 triplets, hidden 32, batch 256, learning rate 1e-5, 300 epochs."""

    seed: int = 0
    num_triplets: int = 10_000
    hidden: int = 32
    batch_size: int = 256
    learning_rate: float = 1e-5
    epochs: int = 300
    optimizer: str = "adam"  # the paper does not name it
    loss_form: str = "quadratic"  # Eq. H1
    num_test_points: int = 2_000
    num_pairs: int = 100_000
    num_bins: int = 500


#: The paper's run is already CPU-sized (12,000 steps of a 129-parameter model, ~15 s here).
CONFIGS = {"paper": Config()}


def get_config(name: str = "paper", **overrides) -> Config:
    """The named config with ``overrides`` applied; an unknown name or field is a ``ValueError``."""
    return _common.select_config(CONFIGS, name, overrides)


def _optimizer(config: Config) -> optax.GradientTransformation:
    if config.optimizer == "adam":
        return optax.adam(config.learning_rate)
    if config.optimizer == "sgd":
        return optax.sgd(config.learning_rate)
    raise ValueError(f"optimizer must be 'adam' or 'sgd', got {config.optimizer!r}")


def train_and_evaluate(config: Config, workdir: str | Path, progress: bool = True) -> dict:
    """Train, evaluate, and write ``config.json``, ``results.json`` and ``gaussian_mixture.png``."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    mixture = gm.appendix_h_mixture()
    key = jax.random.key(config.seed)
    k_data, k_init, k_shuffle, k_test = jax.random.split(key, 4)

    trip = monte_carlo.sample_gaussian_mixture_triplets(k_data, config.num_triplets, mixture)
    model = TwoLayerPerceptron(hidden=config.hidden)
    params = model.init(k_init, jnp.zeros((1, 2)))["params"]
    tx = _optimizer(config)
    opt_state = tx.init(params)

    def embed(p, x):
        return model.apply({"params": p}, x)["embedding"]

    def loss_fn(p, a, pos, neg):
        return losses.triplet_loss(embed(p, a), embed(p, pos), embed(p, neg), form=config.loss_form)

    steps = config.num_triplets // config.batch_size
    if steps < 1:
        raise ValueError(f"batch_size={config.batch_size} exceeds num_triplets={config.num_triplets}")

    @jax.jit
    def run_epoch(params, opt_state, key):
        perm = jax.random.permutation(key, config.num_triplets)[: steps * config.batch_size]
        idx = perm.reshape(steps, config.batch_size)

        def step(carry, batch_idx):
            p, s = carry
            loss, grads = jax.value_and_grad(loss_fn)(
                p, trip.anchor[batch_idx], trip.positive[batch_idx], trip.negative[batch_idx]
            )
            updates, s = tx.update(grads, s, p)
            return (optax.apply_updates(p, updates), s), loss

        (params, opt_state), epoch_losses = jax.lax.scan(step, (params, opt_state), idx)
        return params, opt_state, jnp.mean(epoch_losses)

    history = []
    start = time.perf_counter()
    bar = tqdm(range(config.epochs), desc="train", unit="epoch", disable=not progress)
    for epoch, k in zip(bar, jax.random.split(k_shuffle, config.epochs)):
        params, opt_state, loss = run_epoch(params, opt_state, k)
        history.append(float(loss))
        bar.set_postfix(loss=f"{history[-1]:.3f}")
    train_seconds = time.perf_counter() - start

    # ---- evaluation (paper Fig. S1)
    rng = np.random.default_rng(config.seed + 1)
    k_fit, k_eval = jax.random.split(k_test)
    fit = monte_carlo.sample_gaussian_mixture_triplets(k_fit, config.num_test_points, mixture)
    test = monte_carlo.sample_gaussian_mixture_triplets(k_eval, config.num_test_points, mixture)
    fit_x, fit_c = np.asarray(fit.anchor), np.asarray(fit.theta_positive)
    test_x, test_c = np.asarray(test.anchor), np.asarray(test.theta_positive)
    fit_e, test_e = np.asarray(embed(params, fit_x)), np.asarray(embed(params, test_x))
    accuracy = protocol.threshold_accuracy(fit_e, fit_c, test_e, test_c)

    i = rng.integers(0, len(test_x), config.num_pairs)
    j = rng.integers(0, len(test_x), config.num_pairs)
    keep = i != j
    i, j = i[keep], j[keep]
    dist = np.linalg.norm(test_e[i] - test_e[j], axis=1)
    log_s = np.asarray(gm.log_similarity(test_x[i], test_x[j], mixture))
    rho, p_value, dof = protocol.binned_spearman(dist, np.exp(log_s), config.num_bins)
    same = test_c[i] == test_c[j]
    report = protocol.MixtureReport(
        accuracy=accuracy,
        spearman_rho=rho,
        spearman_p=p_value,
        spearman_dof=dof,
        same_ci=protocol.mean_ci(dist[same]),
        different_ci=protocol.mean_ci(dist[~same]),
        num_test_points=len(test_x),
        num_pairs=int(len(i)),
    )
    results = {
        "experiment": "gaussian_mixture",
        "config": dataclasses.asdict(config),
        "report": report.as_dict(),
        "final_loss": history[-1],
        "train_seconds": train_seconds,
        "paper": {"accuracy": 0.997, "spearman_rho": -0.99, "same_ci": [1.62, 1.66], "different_ci": [4.77, 4.91]},
    }
    (workdir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2))
    (workdir / "results.json").write_text(json.dumps(results, indent=2))
    _plot(workdir / "gaussian_mixture.png", test_x, test_c, test_e, dist, np.exp(log_s), history, config.num_bins)
    return results


def _plot(path, x, comp, emb, dist, s_gen, history, num_bins):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    sc = ax[0].scatter(x[:, 0], x[:, 1], c=emb[:, 0], s=4, cmap="coolwarm")
    fig.colorbar(sc, ax=ax[0], label="embedding phi(x)")
    ax[0].set(title="Points coloured by their learned 1-D embedding", xlabel="x1", ylabel="x2")
    for c, colour in zip(np.unique(comp), ("tab:blue", "tab:orange")):
        ax[1].hist(emb[comp == c, 0], bins=60, alpha=0.6, color=colour, label=f"component {c}")
    ax[1].set(title="Embedding per generating component", xlabel="phi(x)")
    ax[1].legend()
    order = np.argsort(dist)
    bins = np.array_split(order, num_bins)
    ax[2].plot([dist[b].mean() for b in bins], [s_gen[b].mean() for b in bins], ".", ms=3)
    ax[2].set(title="s_gen (Eq. H2) vs embedding distance", xlabel="|phi(x1) - phi(x2)|",
              ylabel="mean s_gen per quantile bin")
    inset = ax[2].inset_axes([0.55, 0.55, 0.4, 0.4])
    inset.plot(history)
    inset.set_title("train loss", fontsize=8)
    inset.tick_params(labelsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def format_table(results: dict) -> str:
    """The report next to the paper's numbers, as a Markdown table."""
    r, p = results["report"], results["paper"]
    rows = [
        ("test accuracy", f"{r['accuracy']:.3f}", f"{p['accuracy']:.3f}"),
        (f"Spearman rho({r['spearman_dof']}) distance vs s_gen", f"{r['spearman_rho']:.3f} (p={r['spearman_p']:.1e})",
         f"{p['spearman_rho']:.2f}"),
        ("95% CI mean distance, same pairs", "[{:.2f}, {:.2f}]".format(*r["same_ci"]), "[1.62, 1.66]"),
        ("95% CI mean distance, different pairs", "[{:.2f}, {:.2f}]".format(*r["different_ci"]), "[4.77, 4.91]"),
    ]
    w = max(len(a) for a, _, _ in rows)
    lines = [f"| {'metric':<{w}} | ours | paper |", f"|{'-' * (w + 2)}|------|-------|"]
    lines += [f"| {a:<{w}} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)
