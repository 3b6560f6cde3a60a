"""The quadrilateral oddball protocol (paper Sec. 3.1, Fig. 2, App. J, L, Q): test set, read-outs, table, figure.

One code path for every evaluation of a quadrilaterals encoder: the run's final and periodic
evaluations (:mod:`gensim_jax.experiments.quadrilaterals`) and ``gensim-jax eval oddball --export``
render the same seeded test set (:func:`test_trials`, ``uint8``), embed it with the same encoder
object (:class:`~gensim_jax.evaluation.embed.ExportedEncoder`) and read it out with the same
:func:`evaluate`, so a re-evaluated export reproduces the run's numbers exactly.

Test set and evaluator:

* :func:`test_trials` -- the seeded trials rendered at an image size (``uint8``) with their features;
  :func:`trial_embeddings` embeds them with ``embed(images (N, S, S, 3) uint8) -> (N, D)``.
* :func:`evaluate` -- both read-outs of one embedding function (:func:`readout`): the paper's argmax
  rule and the graded softmax observer at the humans' mean error (:func:`graded_readout`), with the
  GenSim regression error on reference and deviant pairs (:func:`regression_error`).

The observer (:mod:`~gensim_jax.evaluation.oddball_observer`): :func:`oddball_choices` (the
paper's argmax rule), :func:`error_rates_by_shape`, and the graded softmax observer
(:func:`outlier_scores`, :func:`graded_error_rates`, :func:`fit_temperature`,
:func:`graded_readout`, :func:`lowest_error`). Statistics against behaviour
(:mod:`~gensim_jax.evaluation.oddball_behaviour`): :func:`regularity_correlation`,
:func:`behaviour_correlation`, :func:`subject_correlations`, :func:`shape_statistics`,
:func:`compare_across_runs`, :func:`oddball_summary`, :func:`human_ceilings` (the human noise
ceilings), :func:`read_similarity_judgements`, :func:`similarity_judgement_correlation`. Both
modules' names are importable from here.

Over runs: :func:`summarize` (graded and argmax summaries, temperatures, regression errors),
:func:`format_table` (Markdown) and :func:`plot_oddball` (Fig. 2B + 2C).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Sequence

import numpy as np

from gensim_jax._extras import require
from gensim_jax.evaluation.oddball_behaviour import (  # noqa: F401 - re-exported: the protocol's one namespace
    RunComparison,
    behaviour_correlation,
    compare_across_runs,
    human_ceilings,
    human_mean_error,
    oddball_summary,
    population_correlations,
    read_similarity_judgements,
    regularity_correlation,
    shape_statistics,
    similarity_judgement_correlation,
    subject_correlations,
)
from gensim_jax.evaluation.oddball_observer import (  # noqa: F401 - re-exported
    CHANCE_ERROR_RATE,
    GradedReadout,
    error_rates_by_shape,
    fit_temperature,
    graded_error_rates,
    graded_readout,
    lowest_error,
    oddball_choices,
    outlier_scores,
)
from gensim_jax.stimuli import quadrilaterals as quads

__all__ = [
    "EvalConfig",
    "check_eval_config",
    "CHANCE_ERROR_RATE",
    "NAME",
    "GradedReadout",
    "OddballTrials",
    "RunComparison",
    "behaviour_correlation",
    "compare_across_runs",
    "curve_metrics",
    "embed_test_set",
    "error_rates_by_shape",
    "evaluate",
    "fit_temperature",
    "format_table",
    "graded_error_rates",
    "graded_readout",
    "human_ceilings",
    "human_mean_error",
    "lowest_error",
    "make_stimuli",
    "oddball_choices",
    "oddball_summary",
    "outlier_scores",
    "pixel_embedding",
    "plot",
    "plot_oddball",
    "population_correlations",
    "read_similarity_judgements",
    "readout",
    "readout_rates",
    "regression_error",
    "regularity_correlation",
    "shape_statistics",
    "similarity_judgement_correlation",
    "subject_correlations",
    "summarize",
    "test_trials",
    "trial_embeddings",
    "trial_images",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "oddball"

# ------------------------------------------------------------------------------------------------
# the test set
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval`` of the quadrilaterals experiment: the seeded oddball test (:func:`test_trials`) and its read-outs."""

    seed: int = 0
    trials_per_condition: int = 10  # 11 shapes x 4 deviants x 10 = 440 trials
    batch_size: int = 128
    every: int = 0  # ours: > 0 evaluates both read-outs every so many steps (the learning curve)
    readout_target_error: Optional[float] = None  # graded read-out's mean error; None: the humans' 0.249


def check_eval_config(ev: EvalConfig) -> None:
    """``ValueError`` naming the ``eval.`` field when the section is out of range."""
    if ev.every < 0:
        raise ValueError(f"eval.every must be >= 0 (0: no evaluation during training), got {ev.every}")
    t = ev.readout_target_error
    if t is not None and not 0 < t < CHANCE_ERROR_RATE:
        raise ValueError(f"eval.readout_target_error must lie in (0, 5/6) or be null (the humans' mean), got {t}")
    if ev.trials_per_condition < 1:
        raise ValueError(f"eval.trials_per_condition must be >= 1, got {ev.trials_per_condition}")


class OddballTrials(NamedTuple):
    """The seeded oddball test set as the evaluation sees it (index it like a tuple, too)."""

    images: np.ndarray  #: ``(T, 6, S, S)`` uint8 grey renders
    deviant: np.ndarray  #: ``(T,)`` int64 position of the deviant
    shapes: list  #: ``(T,)`` reference-shape names
    features: np.ndarray  #: ``(T, 6, 22)`` float32 geometric features of every item


def trial_images(test_set, image_size: int) -> np.ndarray:
    """``(T, 6, S, S)`` uint8: the items of an :func:`~gensim_jax.stimuli.quadrilaterals.oddball_test_set` rendered
    at ``image_size`` and rounded to the 256 grey levels (as the training images are)."""
    return np.round(test_set.images(image_size) * 255.0).astype(np.uint8)


def test_trials(seed: int = 0, trials_per_condition: int = 10, image_size: int = 64) -> OddballTrials:
    """The seeded oddball test set (:func:`~gensim_jax.stimuli.quadrilaterals.oddball_test_set`) rendered at
    ``image_size`` and rounded to ``uint8``: the one set a run and ``gensim-jax eval oddball --export`` embed."""
    trials = quads.oddball_test_set(seed=seed, trials_per_condition=trials_per_condition)
    images = trial_images(trials, image_size)
    names = [quads.SHAPE_NAMES[s] for s in trials.shape]
    return OddballTrials(images, trials.deviant_position.astype(np.int64), names, trials.features().astype(np.float32))


def trial_embeddings(embed, trials) -> np.ndarray:
    """``(T, 6, D)`` embeddings of every trial item by ``embed(images (N, S, S, 3) uint8) -> (N, D)``."""
    images = trials[0]
    t, n, s = images.shape[:3]
    flat = np.repeat(images.reshape(t * n, s, s)[..., None], 3, axis=-1)
    return np.asarray(embed(flat)).reshape(t, n, -1)


def pixel_embedding(images: np.ndarray) -> np.ndarray:
    """The model-free baseline: the grey pixels of ``uint8`` images ``(N, S, S, 3)`` in ``[0, 1]``, flattened."""
    return images[..., 0].reshape(len(images), -1).astype(np.float32) / 255.0


def embed_test_set(trials, encoder, batch_size: int, cache: dict) -> np.ndarray:
    """``(T, 6, D)`` embeddings of the test set's items with ``encoder`` (renders cached per size)."""
    s = encoder.image_size
    if s not in cache:  # uint8, as a run renders them (test_trials): the same numbers
        cache[s] = trial_images(trials, s)
    img = cache[s]
    t = img.shape[0]
    return encoder(img.reshape(t * 6, s, s), batch_size).reshape(t, 6, -1)


# ------------------------------------------------------------------------------------------------
# the evaluator
# ------------------------------------------------------------------------------------------------


def readout(embeddings: np.ndarray, trials, target_error: Optional[float] = None) -> dict:
    """Both read-outs of one model's trial embeddings (:func:`graded_readout`).

    ``argmax``: the paper's rule (the item farthest from the trial mean); ``graded``: a softmax over
    the standardised outlier scores with the temperature that makes the mean error equal
    ``target_error`` (default: the humans' 0.249), so the level is the humans' and the shape across
    shapes stays the model's. ``temperature`` 0 means the argmax error already exceeds the target.
    """
    target = human_mean_error() if target_error is None else float(target_error)
    g = graded_readout(embeddings, trials[1], trials[2], target)
    return {
        "argmax": g.argmax_error_rate,
        "graded": g.graded_error_rate,
        "temperature": g.temperature,
        "regression_error": regression_error(embeddings, trials),
    }


def regression_error(embeddings: np.ndarray, trials) -> dict:
    """How well a model's distances match the GenSim target on the test items, pairs within trials.

    ``mean (||z_i - z_j||_2 - ||f_i - f_j||_2)^2`` (the Appendix L regression loss) over the pairs of
    reference items (the shapes training saw) and over the (reference, deviant) pairs (shapes it
    never saw), with ``f`` the 22 features; ``embeddings`` ``(T, 6, D)`` and ``trials`` from
    :func:`test_trials`. Meaningful for the GenSim arm (the others are not trained on this scale).
    """
    z = np.asarray(embeddings, np.float64)
    f = np.asarray(trials[3], np.float64)
    dev = np.asarray(trials[1])
    dz = np.linalg.norm(z[:, :, None] - z[:, None, :], axis=-1)
    df = np.linalg.norm(f[:, :, None] - f[:, None, :], axis=-1)
    sq = (dz - df) ** 2
    n = z.shape[1]
    is_dev = np.arange(n)[None, :] == dev[:, None]  # (T, N)
    upper = np.triu(np.ones((n, n), bool), 1)[None]
    ref_pair = upper & ~is_dev[:, :, None] & ~is_dev[:, None, :]
    dev_pair = upper & (is_dev[:, :, None] ^ is_dev[:, None, :])
    return {"reference_pairs": float(sq[ref_pair].mean()), "deviant_pairs": float(sq[dev_pair].mean())}


def evaluate(embed, trials: OddballTrials, target_error: Optional[float] = None) -> dict:
    """The oddball evaluation of one embedding function: :func:`readout` of :func:`trial_embeddings`.

    What a quadrilaterals run records for each model and what ``gensim-jax eval oddball --export``
    computes for its export (``embed``: e.g. an :class:`~gensim_jax.evaluation.embed.ExportedEncoder`).
    """
    return readout(trial_embeddings(embed, trials), trials, target_error)


def curve_metrics(evaluation: dict) -> dict:
    """The scalars a periodic evaluation logs: temperature, regression errors, mean and per-shape errors of both read-outs."""
    logged = {"temperature": evaluation["temperature"]}
    logged.update({f"regression_error/{k}": v for k, v in evaluation["regression_error"].items()})
    for rule in ("argmax", "graded"):
        logged[f"{rule}/mean_error"] = float(np.mean(evaluation[rule]))
        logged.update({f"{rule}/{shape}": float(v) for shape, v in zip(quads.SHAPE_NAMES, evaluation[rule])})
    return logged


def readout_rates(embeddings, deviant, shapes: Sequence[str], rule: str, target_error: float) -> dict:
    """Error rates per shape of trial embeddings under one read-out ``rule`` (what ``eval oddball`` reports).

    ``"argmax"``: :func:`error_rates_by_shape` (``error_rate``, ``trials``, ``errors``, ``choices``);
    ``"graded"``: the same with ``error_rate`` replaced by the level-matched softmax observer's
    (:func:`graded_readout` at ``target_error``), its ``temperature`` added and ``errors`` dropped.
    """
    rates = error_rates_by_shape(embeddings, deviant, shapes)
    if rule == "graded":
        g = graded_readout(embeddings, deviant, shapes, target_error)
        rates = {**rates, "error_rate": g.graded_error_rate, "temperature": g.temperature}
        rates.pop("errors")
    elif rule != "argmax":
        raise ValueError(f"rule must be 'graded' or 'argmax', got {rule!r}")
    return rates


# ------------------------------------------------------------------------------------------------
# over runs: summary, table, figure
# ------------------------------------------------------------------------------------------------


def summarize(evaluations: dict, num_trials: int, target_error: Optional[float] = None) -> dict:
    """The results of several models x runs: ``summary`` (graded, the headline) and ``summary_argmax``
    (:func:`oddball_summary`), ``temperatures`` and ``regression_error``
    per model and run; ``evaluations = {model: [evaluate(...) per run]}``."""
    return {
        "num_trials": int(num_trials),
        "readout": {
            "headline": "graded",
            "target_error": human_mean_error() if target_error is None else target_error,
            "humans": "pooled (five groups); per population in summary.models.*.populations",
        },
        "summary": oddball_summary({n: np.stack([e["graded"] for e in v]) for n, v in evaluations.items()}),
        "summary_argmax": oddball_summary({n: np.stack([e["argmax"] for e in v]) for n, v in evaluations.items()}),
        "temperatures": {n: [e["temperature"] for e in v] for n, v in evaluations.items()},
        "regression_error": {n: [e["regression_error"] for e in v] for n, v in evaluations.items()},
    }


def _fmt(v, spec=".3f") -> str:
    return "n/a" if v is None else format(v, spec)


def _stats_rows(summary: dict, temperatures: Optional[dict] = None) -> list[str]:
    rows = []
    for name, m in summary["models"].items():
        reg, cmp_ = m["regularity"], m["comparison"]
        taus = (temperatures or {}).get(name)
        tau = "" if taus is None else f" {np.mean(taus):.3g} |"
        rows.append(
            f"| {name} | {m['runs']} | {np.mean(m['error_rate_mean']):.3f} |{tau} "
            f"{_fmt(reg and reg['rho'], '.2f')} | {_fmt(reg and reg['p'], '.3g')} | "
            f"{_fmt(m['r_human_mean'], '.2f')} | {_fmt(m['r_baboon_mean'], '.2f')} | "
            + (f"{cmp_['t']:.2f} ({cmp_['dof']}) | {cmp_['p']:.3g} |" if cmp_ else "n/a | n/a |")
        )
    return rows


def format_table(results: dict, note: Optional[str] = None) -> str:
    """Markdown tables: the headline (graded) and argmax statistics per model (Fig. 2C), the
    correlation with every population, and the error rate per shape (Fig. 2B)."""
    s = results["summary"]
    models = s["models"]
    head = "| model | runs | mean error |{} rho(9) | p | r human | r baboon | t (dof) | p(t) |"
    target = results.get("readout", {}).get("target_error")
    lines = [
        f"Oddball test: {results['num_trials']} trials (chance error {s['chance_error_rate']:.3f}). "
        "rho = Spearman with the irregularity rank (paper: GenSim 0.88, supervised 0.472); "
        "r = Pearson with the pooled human (five groups) / baboon error rates, mean over runs; "
        "t = human vs baboon likeness across runs (paper: t(18) = 12.45 GenSim, -17.43 supervised).",
        "",
        f"Graded read-out (headline): softmax over the six items' standardised outlier scores, temperature "
        f"tau set per run so the mean error is the humans' {_fmt(target)} (tau 0: the argmax error is "
        "already higher).",
        "",
        head.format(" tau |"),
        "|---|---|---|---|---|---|---|---|---|---|",
        *_stats_rows(s, results.get("temperatures")),
    ]
    if "summary_argmax" in results:
        lines += [
            "",
            "Argmax read-out (the paper's rule: the item farthest from the trial mean):",
            "",
            head.format(""),
            "|---|---|---|---|---|---|---|---|---|",
            *_stats_rows(results["summary_argmax"]),
        ]
    pops = next(iter(models.values())).get("populations")
    if pops:
        lines += [
            "",
            "Graded read-out, mean r over runs with each population (t vs baboons in brackets; "
            "the populations' own r with the baboons in the header):",
            "",
            "| model | " + " | ".join(f"{p} ({pops[p]['r_with_baboons']:.2f})" for p in pops) + " |",
            "|---|" + "---|" * len(pops),
        ]
        for name, m in models.items():
            cells = []
            for p in pops:
                e = m["populations"][p]
                c = e["comparison"]
                cells.append(_fmt(e["r_mean"], ".2f") + (f" (t {c['t']:.2f})" if c else ""))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Error rate per shape, graded read-out (most to least regular):",
        "",
        "| shape | humans | baboons | " + " | ".join(models) + " |",
        "|---|---|---|" + "---|" * len(models),
    ]
    if note:
        lines.insert(1, "\n" + note + "\n")
    for i, shape in enumerate(s["shapes"]):
        cells = [f"{models[n]['error_rate_mean'][i]:.3f}" for n in models]
        lines.append(
            f"| {shape} | {s['human_error_rate'][i]:.3f} | {s['baboon_error_rate'][i]:.3f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


_MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")


def plot_oddball(summary: Mapping, path, title: str | None = None) -> Path:
    """Write paper Fig. 2B + 2C for ``summary`` (:func:`~gensim_jax.evaluation.oddball.oddball_summary`).

    Left: mean error rate per shape (x: most to least regular, as Fig. 2B) for every model with
    s.e.m. error bars over runs, the pooled human and the baboon rates (dashed), and the chance
    error rate 5/6 (red). The legend gives each model's Spearman rho(9) with regularity. Right:
    mean over runs of the correlation with human and with baboon error rates, s.e.m. bars and each
    run's value as a dot (Fig. 2C). Returns the path.
    """
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shapes = list(summary["shapes"])
    models = summary["models"]
    x = np.arange(len(shapes))
    fig = Figure(figsize=(13, 4.6))
    FigureCanvasAgg(fig)
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
    for k, (name, m) in enumerate(models.items()):
        reg = m.get("regularity")
        label = f"{name} (rho(9)={reg['rho']:.2f}, p={reg['p']:.3g})" if reg else f"{name} (rho undefined)"
        ax.errorbar(
            x,
            m["error_rate_mean"],
            yerr=m["error_rate_sem"],
            marker="o",
            ms=4,
            capsize=2,
            lw=1.5,
            color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)],
            label=label,
        )
    ax.plot(x, summary["human_error_rate"], "k--", marker="s", ms=3, lw=1, label="humans (pooled)")
    ax.plot(x, summary["baboon_error_rate"], color="grey", ls=":", marker="^", ms=3, lw=1, label="baboons")
    ax.axhline(summary["chance_error_rate"], color="red", lw=1, label="chance (5/6)")
    ax.set_xticks(x, shapes, rotation=40, ha="right")
    ax.set_ylim(0, 1)
    ax.set(
        ylabel="error rate",
        xlabel="reference shape (most to least regular)",
        title=title or "Oddball error rate per quadrilateral (Fig. 2B)",
    )
    ax.legend(fontsize=7, loc="upper left")

    names = list(models)
    width = 0.38
    for j, (who, colour) in enumerate((("human", "black"), ("baboon", "grey"))):
        means = [models[n][f"r_{who}_mean"] for n in names]
        sems = [models[n][f"r_{who}_sem"] for n in names]
        pos = np.arange(len(names)) + (j - 0.5) * width
        bx.bar(
            pos,
            [0.0 if v is None else v for v in means],
            width,
            yerr=sems,
            color=colour,
            alpha=0.55,
            capsize=3,
            label=who,
        )
        for p_, n in zip(pos, names):
            vals = [v for v in models[n][f"r_{who}"] if v is not None]
            bx.plot(np.full(len(vals), p_), vals, ".", color=colour, ms=4)
    bx.axhline(0, color="k", lw=0.6)
    bx.set_xticks(np.arange(len(names)), names, rotation=20)
    bx.set_ylim(-1, 1)
    bx.set(ylabel="correlation with error rates", title="Human vs baboon likeness (Fig. 2C)")
    bx.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def plot(results: Mapping, path, title: str | None = None) -> Path:
    """The figure of :func:`summarize`'s ``results``: :func:`plot_oddball` of its headline (graded) ``summary``."""
    return plot_oddball(results["summary"], path, title)


#: The registry's face (:mod:`gensim_jax.evaluation.registry`): the seeded stimuli of :func:`evaluate`.
make_stimuli = test_trials
