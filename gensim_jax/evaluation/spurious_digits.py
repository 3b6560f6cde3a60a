"""Spurious-digits protocol: ID / OOD accuracy against the centre-loss weight lambda (seed 003 Sec. 4).

The thesis of seed 003 trains LeNet-5 with ``L_total = CE + lambda L_sim`` (its Eq. 12) for
``lambda in {0, 0.25, 0.5, 0.75, 10, 100}``, 5 seeds each, and reports the accuracy on digits
whose backgrounds come from their own pool (in distribution, ID) and from other digits' pools
(out of distribution, OOD) as the mean over seeds with a 95% confidence interval (its Figs. 2-4).
This module is the numeric part of that protocol:

* :func:`accuracy` -- fraction of correct predictions;
* :func:`t_interval` -- the two-sided Student-t confidence interval of a mean over seeds,
  ``mean +- t_{(1 + c)/2, n - 1} s / sqrt(n)`` with ``s`` the sample standard deviation;
* :func:`summarize` -- per-run accuracies ``{lambda: [run, ...]}`` -> one row per lambda with the
  mean and interval of ``id_accuracy``, ``ood_accuracy`` and their per-run difference ``gap``;
* :func:`format_table` -- the rows as Markdown; :func:`plot_accuracy_vs_lambda` -- ID and OOD
  lines with interval bands on a symmetric-log lambda axis (linear to 1, lambda spans 0 to 100);
* :func:`make_predictor` -- the bridge from a classifier to predictions (jitted once, fixed-size
  batches); :func:`evaluate` -- ID and OOD accuracy of one trained classifier on the test sets of
  :func:`gensim_jax.data.spurious_digits.evaluation_sets`;
* :func:`make_embedder`, :func:`nearest_centre_accuracy`, :func:`evaluate_centres` -- accuracy of
  the *embedding* alone: each test digit is given the class whose training-set centre ``mu_q``
  (thesis Eq. 1, over the whole training split) is nearest in squared Euclidean distance. The
  classifier's accuracy says nothing about the embedding when the cross entropy is off (thesis
  Fig. 5: the classifier then never trains and stays at chance); this read-out does.

Everything but :func:`make_predictor` (JAX) and the plot (matplotlib, imported lazily) is numpy
and scipy on plain numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from gensim_jax.evaluation.plotting import figure, save_figure
from gensim_jax.evaluation.statistics import t_interval

__all__ = [
    "RunData",
    "per_run_rows",
    "NAME",
    "plot",
    "CENTRE_METRICS",
    "METRICS",
    "accuracy",
    "evaluate",
    "evaluate_centres",
    "make_embedder",
    "nearest_centre_accuracy",
    "format_table",
    "initial_losses",
    "make_predictor",
    "plot_accuracy_vs_lambda",
    "plot_results",
    "results_table",
    "summarize",
    "t_interval",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "spurious_digits"

#: Per-run metrics summarised by :func:`summarize` (``gap`` is computed from the other two).
METRICS = ("id_accuracy", "ood_accuracy", "gap")
#: Optional per-run metrics of :func:`evaluate_centres`, summarised when every run has them.
CENTRE_METRICS = ("id_centre_accuracy", "ood_centre_accuracy")


def accuracy(predictions, labels) -> float:
    """Fraction of ``predictions`` equal to ``labels`` (both ``(N,)`` integers, ``N >= 1``).

    Example:
      >>> accuracy(np.array([1, 2, 3, 3]), np.array([1, 2, 0, 3]))
      0.75
    """
    p, y = np.asarray(predictions), np.asarray(labels)
    if p.ndim != 1 or p.shape != y.shape or p.size == 0:
        raise ValueError(f"predictions and labels must be equal non-empty (N,) arrays, got {p.shape} and {y.shape}")
    return float(np.mean(p == y))


def summarize(per_run: Mapping[Any, Sequence[Mapping[str, float]]], confidence: float = 0.95) -> list[dict]:
    """One row per lambda: mean and t-interval over runs of ID and OOD accuracy and their gap.

    Args:
      per_run: ``{lambda: [{"id_accuracy": a, "ood_accuracy": b, ...}, ...]}`` (one dict per seed;
        lambda keys may be numbers or numeric strings, as after a JSON round trip).
      confidence: interval level (0.95 in seed 003).

    Returns:
      Rows sorted by lambda: ``{"lambda", "runs", "<m>_mean", "<m>_low", "<m>_high", "<m>_std"}``
      for ``m`` in :data:`METRICS`, with ``gap = id_accuracy - ood_accuracy`` per run, and for ``m``
      in :data:`CENTRE_METRICS` when every run of the lambda has that key. With a single
      run the interval and standard deviation are ``None`` (undefined), not NaN.

    Example:
      >>> rows = summarize({0.5: [{"id_accuracy": 0.9, "ood_accuracy": 0.5},
      ...                         {"id_accuracy": 0.8, "ood_accuracy": 0.6}]})
      >>> rows[0]["lambda"], round(rows[0]["gap_mean"], 6)
      (0.5, 0.3)
    """
    if not per_run:
        raise ValueError("per_run is empty")
    rows = []
    for lam, runs in sorted(((float(k), v) for k, v in per_run.items()), key=lambda kv: kv[0]):
        runs = list(runs)
        if not runs:
            raise ValueError(f"lambda {lam}: no runs")
        row: dict = {"lambda": lam, "runs": len(runs)}
        for r in runs:
            for key in ("id_accuracy", "ood_accuracy"):
                if key not in r:
                    raise ValueError(f"lambda {lam}: a run lacks {key!r} (has {sorted(r)})")
        values = {
            "id_accuracy": [float(r["id_accuracy"]) for r in runs],
            "ood_accuracy": [float(r["ood_accuracy"]) for r in runs],
        }
        values["gap"] = [a - b for a, b in zip(values["id_accuracy"], values["ood_accuracy"])]
        for key in CENTRE_METRICS:
            if all(key in r for r in runs):
                values[key] = [float(r[key]) for r in runs]
        for m in values:
            v = values[m]
            if len(v) >= 2:
                mean, low, high = t_interval(v, confidence)
                std = float(np.std(v, ddof=1))
            else:
                mean, low, high, std = float(v[0]), None, None, None
            row.update({f"{m}_mean": mean, f"{m}_low": low, f"{m}_high": high, f"{m}_std": std})
        rows.append(row)
    return rows


def _cell(row: Mapping, m: str) -> str:
    if row[f"{m}_low"] is None:
        return f"{row[f'{m}_mean']:.3f}"
    return f"{row[f'{m}_mean']:.3f} [{row[f'{m}_low']:.3f}, {row[f'{m}_high']:.3f}]"


def format_table(rows: Sequence[Mapping], confidence: float = 0.95) -> str:
    """Markdown table of :func:`summarize` rows: mean [CI] of ID, OOD accuracy and gap per lambda.

    When every row has the :data:`CENTRE_METRICS`, two more columns give the nearest-centre accuracy.
    """
    pct = f"{100 * confidence:g}%"
    metrics = list(METRICS)
    heads = [f"ID accuracy [{pct} CI]", f"OOD accuracy [{pct} CI]", f"ID - OOD [{pct} CI]"]
    if rows and all(f"{m}_mean" in r for r in rows for m in CENTRE_METRICS):
        metrics += CENTRE_METRICS
        heads += [f"ID nearest-centre [{pct} CI]", f"OOD nearest-centre [{pct} CI]"]
    lines = ["| lambda | runs | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]
    for r in rows:
        lines.append(f"| {r['lambda']:g} | {r['runs']} | " + " | ".join(_cell(r, m) for m in metrics) + " |")
    return "\n".join(lines)


def _batched(fn, batch_size: int) -> Callable[[Mapping[str, Any], np.ndarray], np.ndarray]:
    """``(variables, images) -> concatenated fn(variables, chunk)`` over fixed-size, zero-padded chunks."""
    import jax.numpy as jnp

    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")

    def run(variables, images) -> np.ndarray:
        x = np.asarray(images, np.float32)
        if x.ndim < 2 or len(x) == 0:
            raise ValueError(f"images must be a non-empty batch (N, ...), got shape {x.shape}")
        b = min(int(batch_size), len(x))
        out = []
        for start in range(0, len(x), b):
            chunk = x[start : start + b]
            n = len(chunk)
            if n < b:
                chunk = np.concatenate([chunk, np.zeros((b - n, *chunk.shape[1:]), chunk.dtype)])
            out.append(np.asarray(fn(variables, jnp.asarray(chunk)))[:n])
        return np.concatenate(out)

    return run


def make_predictor(model, batch_size: int = 1000) -> Callable[[Mapping[str, Any], np.ndarray], np.ndarray]:
    """``predict(variables, images) -> (N,)`` argmax of ``model``'s ``"logits"`` (inference mode).

    The forward pass is jitted once per predictor; the last batch is zero-padded to
    ``batch_size`` so one shape is compiled, and padded rows are dropped.

    Args:
      model: a gensim-jax classifier (``model.apply(v, x)["logits"]``), e.g. ``get_model("lenet5")``.
      batch_size: images per call.

    Example:
      >>> import jax
      >>> from gensim_jax.models import get_model
      >>> m = get_model("mlp", num_classes=3)   # e.g. get_model("lenet5") on (N, 32, 32, 3)
      >>> v = m.init(jax.random.key(0), m.example_input())
      >>> make_predictor(m, 4)(v, np.zeros((5, 2), np.float32)).shape
      (5,)
    """
    import jax
    import jax.numpy as jnp

    run = _batched(jax.jit(lambda v, x: jnp.argmax(model.apply(v, x)["logits"], axis=-1)), batch_size)

    def predict(variables, images) -> np.ndarray:
        return run(variables, images).astype(np.int64)

    return predict


def make_embedder(model, batch_size: int = 1000) -> Callable[[Mapping[str, Any], np.ndarray], np.ndarray]:
    """``embed(variables, images) -> (N, D)`` float32 ``"embedding"`` of ``model`` (inference mode).

    Jitted once, fixed-size zero-padded batches, as :func:`make_predictor`.

    Example:
      >>> import jax
      >>> from gensim_jax.models import get_model
      >>> m = get_model("mlp", num_classes=3)
      >>> v = m.init(jax.random.key(0), m.example_input())
      >>> make_embedder(m, 4)(v, np.zeros((5, 2), np.float32)).shape[0]
      5
    """
    import jax

    run = _batched(jax.jit(lambda v, x: model.apply(v, x)["embedding"]), batch_size)

    def embed(variables, images) -> np.ndarray:
        return run(variables, images).astype(np.float32)

    return embed


def nearest_centre_accuracy(train_embeddings, train_labels, test_embeddings, test_labels) -> float:
    """Accuracy of the nearest class centre: ``argmin_q ||z - mu_q||^2`` with ``mu_q`` of thesis 003 Eq. 1.

    ``mu_q`` is the mean training embedding of class ``q``; classes absent from the training set
    are never predicted. Ties go to the smallest label.

    Args:
      train_embeddings: ``(N, D)``.  train_labels: ``(N,)`` integers.
      test_embeddings: ``(M, D)``.  test_labels: ``(M,)`` integers.

    Example:
      >>> tr = np.array([[0.0], [0.2], [1.0], [1.2]]); yt = np.array([0, 0, 1, 1])
      >>> nearest_centre_accuracy(tr, yt, np.array([[0.0], [0.9], [0.3]]), np.array([0, 1, 1]))
      0.6666666666666666
    """
    zt, yt = np.asarray(train_embeddings, np.float64), np.asarray(train_labels)
    zs, ys = np.asarray(test_embeddings, np.float64), np.asarray(test_labels)
    if zt.ndim != 2 or zs.ndim != 2 or zt.shape[1] != zs.shape[1]:
        raise ValueError(f"embeddings must be (N, D) and (M, D) with one D, got {zt.shape} and {zs.shape}")
    if yt.shape != (len(zt),) or ys.shape != (len(zs),) or len(zt) == 0 or len(zs) == 0:
        raise ValueError(
            f"labels must match the non-empty embeddings: got {yt.shape} for {zt.shape}, {ys.shape} for {zs.shape}"
        )
    classes = np.unique(yt)
    centres = np.stack([zt[yt == q].mean(axis=0) for q in classes])
    d2 = (zs**2).sum(1)[:, None] - 2.0 * zs @ centres.T + (centres**2).sum(1)[None, :]
    return accuracy(classes[np.argmin(d2, axis=1)], ys)


def evaluate_centres(
    embed: Callable[[Mapping[str, Any], np.ndarray], np.ndarray],
    variables,
    train: tuple,
    sets: Mapping[str, tuple],
) -> dict:
    """``{"<name>_centre_accuracy"}``: :func:`nearest_centre_accuracy` with centres from ``train``.

    Args:
      embed: from :func:`make_embedder`.  train: ``(images, labels)`` the centres come from.
      sets: ``{name: (images, labels)}`` (e.g. ``"id"``, ``"ood"``).
    """
    zt = embed(variables, train[0])
    return {
        f"{name}_centre_accuracy": nearest_centre_accuracy(zt, train[1], embed(variables, x), y)
        for name, (x, y) in sets.items()
    }


def evaluate(
    predict: Callable[[Mapping[str, Any], np.ndarray], np.ndarray], variables, sets: Mapping[str, tuple]
) -> dict:
    """``{"<name>_accuracy": accuracy}`` of ``predict(variables, images)`` on every ``sets[name] = (images, labels)``.

    With :func:`gensim_jax.data.spurious_digits.evaluation_sets`: ``{"id_accuracy", "ood_accuracy"}``.
    """
    return {f"{name}_accuracy": accuracy(predict(variables, x), y) for name, (x, y) in sets.items()}


def results_table(results: dict) -> str:
    """The experiment's table (``gensim-jax train spurious_digits``): a line on the data, the objective and the
    run, then :func:`format_table` of its ``summary``; ``results["config"]`` is the nested run config."""
    cfg = results["config"]
    center = cfg["objectives"]["center"]
    objective = (
        f"L_sim {center['sim_reduction']}, CE weight {center['ce_weight']:g}, "
        f"{'PyTorch' if cfg['model']['torch_init'] else 'default'} init"
    )
    head = (
        f"Spurious digits, {results['data']}; {cfg['num_runs']} seeds, {results['num_steps']} steps of "
        f"{cfg['batch_size']} ({results['num_train']} training images), OOD = {cfg['data']['ood']} backgrounds; "
        f"{objective}:"
    )
    return head + "\n" + format_table(results["summary"], cfg["eval"]["confidence"])


def plot_accuracy_vs_lambda(
    rows: Sequence[Mapping], path, *, title: str = "", confidence: float = 0.95, chance: float | None = 0.1
) -> None:
    """Plot ID and OOD accuracy (mean line, CI band) against lambda; symmetric-log x axis.

    The axis is linear on ``[0, 1]`` and logarithmic beyond, so the thesis's grid
    ``0, 0.25, 0.5, 0.75, 10, 100`` is legible. Writes ``path`` (PNG by extension).
    """
    if not rows:
        raise ValueError("rows is empty")
    fig, (ax,) = figure(6.4, 4.2)
    import matplotlib.ticker

    lam = np.array([r["lambda"] for r in rows], float)
    for m, label, colour in (
        ("id_accuracy", "in distribution (own pool)", "tab:blue"),
        ("ood_accuracy", "out of distribution (swapped pools)", "tab:red"),
    ):
        mean = np.array([r[f"{m}_mean"] for r in rows], float)
        ax.plot(lam, mean, "o-", color=colour, label=label)
        if all(r[f"{m}_low"] is not None for r in rows):
            lo = np.array([r[f"{m}_low"] for r in rows], float)
            hi = np.array([r[f"{m}_high"] for r in rows], float)
            ax.fill_between(
                lam,
                np.clip(lo, 0, 1),
                np.clip(hi, 0, 1),
                color=colour,
                alpha=0.2,
                label=f"{100 * confidence:g}% CI over seeds",
            )
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls="--", label="chance")
    ax.set_xscale("symlog", linthresh=1.0, linscale=2.0)
    ax.set_xlim(-0.05 * max(1.0, lam.max()) ** 0.1, max(1.0, lam.max()) * 1.4)
    ax.set_xticks(lam, [f"{v:g}" for v in lam])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(0, 1.02)
    ax.set(xlabel="lambda (weight of the class-centre loss, Eq. 12)", ylabel="test accuracy")
    ax.set_title(title or "Spurious digits: accuracy against lambda", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    save_figure(fig, path, dpi=110)


def plot_results(results: dict, path) -> None:
    """The experiment's figure: :func:`plot_accuracy_vs_lambda` of ``summary``, titled with the data and objective."""
    cfg = results["config"]
    center = cfg["objectives"]["center"]
    data = "procedural stand-ins" if cfg["data"]["source"] == "synthetic" else "MNIST on CIFAR-10"
    plot_accuracy_vs_lambda(
        results["summary"],
        path,
        confidence=cfg["eval"]["confidence"],
        title=(
            f"Spurious digits ({data}): LeNet-5, {center['ce_weight']:g} CE + lambda L_sim "
            f"({center['sim_reduction']}), {cfg['num_runs']} seeds"
        ),
    )


#: The registry's face (:mod:`gensim_jax.evaluation.registry`): the run's figure.
plot = plot_results


def initial_losses(experiment, config, data=None, *, num_batches: int = 10) -> list[dict]:
    """Both unweighted terms of Eq. 12 at initialisation, per run: the thesis's "L_sim starts from 1e-5".

    For each run ``r`` (seed ``config.seed + r``): the runner's initial variables of that seed
    (``Arm.init_variables``, honouring ``torch_init``) and its first ``num_batches`` training batches
    (the runner's batch order), L_sim in both forms (:func:`gensim_jax.losses.center_similarity_loss`)
    and the cross entropy, each the mean over those batches.

    Args:
      experiment: the spurious-digits declaration (:data:`gensim_jax.experiments.spurious_digits.EXPERIMENT`).
      config: its validated config.  data: the experiment's prepared data (built when None).
      num_batches: batches per run (>= 1).

    Returns:
      ``[{"seed", "l_sim_sum", "l_sim_mean", "ce"}, ...]``, one dict per run.
    """
    import jax
    import jax.numpy as jnp

    from gensim_jax import losses
    from gensim_jax.parallel import HostShard
    from gensim_jax.preprocessing import normalize_uint8

    if num_batches < 1:
        raise ValueError(f"num_batches must be >= 1, got {num_batches}")
    data = experiment.prepare(config) if data is None else data
    arm = experiment.arm(experiment.arms(config)[0], config, data)
    model = arm.model

    @jax.jit
    def terms(variables, x, y, m):
        out = model.apply(variables, x)
        z = out["embedding"]
        ce, l_sum = losses.center_objective_terms(out["logits"], y, z, num_classes=10, mask=m)
        l_mean = losses.center_similarity_loss(z, y, num_classes=10, mask=m, form="mean")
        return {"l_sim_sum": l_sum, "l_sim_mean": l_mean, "ce": ce}

    rows = []
    for r in range(config.num_runs):
        seed = config.seed + r
        variables = arm.init_variables(seed)
        values: dict = {"l_sim_sum": [], "l_sim_mean": [], "ce": []}
        shard = HostShard(global_batch=config.batch_size)
        for k, batch in enumerate(arm.batches(seed, shard)(0)):
            if k == num_batches:
                break
            x = normalize_uint8(batch["image"], "unit")  # the training step's numbers (one table)
            t = terms(variables, x, jnp.asarray(batch["label"]), jnp.asarray(batch["mask"]))
            for key, v in t.items():
                values[key].append(float(v))
        rows.append({"seed": seed, **{k: float(np.mean(v)) for k, v in values.items()}})
    return rows


@dataclasses.dataclass
class RunData:
    """What every run of the experiment shares: the three splits (:func:`gensim_jax.data.spurious_digits.make_splits`),
    the composed test sets (:func:`~gensim_jax.data.spurious_digits.evaluation_sets`), the seconds they took,
    and one compiled predictor and embedder per model."""

    splits: dict
    sets: dict
    seconds: float
    predictors: dict = dataclasses.field(default_factory=dict)
    embedders: dict = dataclasses.field(default_factory=dict)
    train_set: Optional[tuple] = None

    def centre_train_set(self, limit: int) -> tuple:
        """``(images, labels)`` of at most ``limit`` evenly spaced training examples (the nearest-centre
        read-out's centres; the whole split when it is smaller), composed once."""
        if self.train_set is None or len(self.train_set[1]) != min(limit, len(self.splits["train"])):
            from gensim_jax.data.spurious_digits import preprocess

            train = self.splits["train"]
            index = np.unique(np.linspace(0, len(train) - 1, min(int(limit), len(train))).astype(np.int64))
            ex = train.examples(index)
            self.train_set = (preprocess(ex["image"]), ex["label"])
        return self.train_set

    def embedder(self, model, batch_size: int):
        """One :func:`make_embedder` per model."""
        key = (model, batch_size)
        try:
            if key not in self.embedders:
                self.embedders[key] = make_embedder(model, batch_size)
            return self.embedders[key]
        except TypeError:  # an unhashable module
            return make_embedder(model, batch_size)

    def predictor(self, model, batch_size: int):
        """One :func:`make_predictor` per model (compiled once for all runs)."""
        key = (model, batch_size)
        try:
            if key not in self.predictors:
                self.predictors[key] = make_predictor(model, batch_size)
            return self.predictors[key]
        except TypeError:  # an unhashable module
            return make_predictor(model, batch_size)


def per_run_rows(lambdas: Mapping[str, float], evaluations: Mapping, training: Mapping) -> dict:
    """``{lambda (str): [row per run]}``: each run's evaluation (:func:`evaluate`, :func:`evaluate_centres`) beside its
    training record (seed, seconds, losses) and, when the record has the runner's ``eval/`` lines, the learning
    curve; ``lambdas`` maps the arm names to their lambdas (``evaluations`` and ``training`` are keyed by arm)."""
    per_run: dict = {}
    for arm, lam in lambdas.items():
        rows = per_run.setdefault(f"{lam:g}", [])
        for acc, record in zip(evaluations.get(arm, []), training.get(arm, [])):
            row = {"seed": record["seed"], **acc, "seconds": record["seconds"]}
            row.update(final_loss=record["final_loss"], losses=record["losses"])
            if "evals" in record:  # the runner's eval/ lines, when it passes them on
                keys = ("id_accuracy", "ood_accuracy")
                row["curve"] = [{"step": m["step"], **{k: m[f"eval/{k}"] for k in keys}} for m in record["evals"]]
            rows.append(row)
    return per_run
