"""The quadrilateral oddball evaluator (paper Sec. 3.1, Fig. 2B/2C): test set, read-outs, results, table.

One code path for every evaluation of a quadrilaterals encoder: the run's final and periodic
evaluations (:mod:`gensim_jax.experiments.quadrilaterals`) and ``gensim-jax eval oddball --export``
render the same seeded test set (:func:`test_trials`, ``uint8``), embed it with the same encoder
object (:class:`~gensim_jax.evaluation.embed.ExportedEncoder`) and read it out with the same
:func:`evaluate`, so a re-evaluated export reproduces the run's numbers exactly.

* :func:`test_trials` -- the seeded trials rendered at an image size (``uint8``) with their features.
* :func:`evaluate` -- both read-outs of one embedding function: the paper's argmax rule and the graded
  softmax observer at the humans' mean error (:func:`~gensim_jax.evaluation.oddball.graded_readout`),
  with the GenSim regression error on reference and deviant pairs (:func:`regression_error`).
* :func:`summarize` / :func:`format_table` -- Fig. 2B/2C statistics over models x runs, as a dict and
  as Markdown tables.

The statistics themselves live in :mod:`gensim_jax.evaluation.oddball`.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from gensim_jax.evaluation.oddball import CHANCE_ERROR_RATE, graded_readout, oddball_summary
from gensim_jax.stimuli import quadrilaterals as quads

__all__ = [
    "CHANCE_ERROR_RATE",
    "OddballTrials",
    "curve_metrics",
    "evaluate",
    "format_table",
    "human_mean_error",
    "pixel_embedding",
    "readout",
    "regression_error",
    "summarize",
    "test_trials",
    "trial_images",
    "trial_embeddings",
    "trial_error_rates",
]


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


def human_mean_error() -> float:
    """The pooled humans' mean error over the 11 shapes (0.249): the level the graded read-out matches."""
    from gensim_jax.evaluation import sable_meyer

    return float(
        np.mean(sable_meyer.pooled_error_rates(sable_meyer.packaged_error_rates(), sable_meyer.HUMAN_POPULATIONS))
    )


def trial_embeddings(embed, trials) -> np.ndarray:
    """``(T, 6, D)`` embeddings of every trial item by ``embed(images (N, S, S, 3) uint8) -> (N, D)``."""
    images = trials[0]
    t, n, s = images.shape[:3]
    flat = np.repeat(images.reshape(t * n, s, s)[..., None], 3, axis=-1)
    return np.asarray(embed(flat)).reshape(t, n, -1)


def readout(embeddings: np.ndarray, trials, target_error: Optional[float] = None) -> dict:
    """Both read-outs of one model's trial embeddings (:func:`~gensim_jax.evaluation.oddball.graded_readout`).

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


def trial_error_rates(embed, trials) -> np.ndarray:
    """``(11,)`` argmax error rates of ``embed(images (N, S, S, 3) uint8) -> (N, D)`` on ``trials``."""
    return readout(trial_embeddings(embed, trials), trials)["argmax"]


def evaluate(embed, trials: OddballTrials, target_error: Optional[float] = None) -> dict:
    """The oddball evaluation of one embedding function: :func:`readout` of :func:`trial_embeddings`.

    What a quadrilaterals run records for each model and what ``gensim-jax eval oddball --export``
    computes for its export (``embed``: e.g. an :class:`~gensim_jax.evaluation.embed.ExportedEncoder`).
    """
    return readout(trial_embeddings(embed, trials), trials, target_error)


def pixel_embedding(images: np.ndarray) -> np.ndarray:
    """The model-free baseline: the grey pixels of ``uint8`` images ``(N, S, S, 3)`` in ``[0, 1]``, flattened."""
    return images[..., 0].reshape(len(images), -1).astype(np.float32) / 255.0


def curve_metrics(evaluation: dict) -> dict:
    """The scalars a periodic evaluation logs: temperature, regression errors, mean and per-shape errors of both read-outs."""
    logged = {"temperature": evaluation["temperature"]}
    logged.update({f"regression_error/{k}": v for k, v in evaluation["regression_error"].items()})
    for rule in ("argmax", "graded"):
        logged[f"{rule}/mean_error"] = float(np.mean(evaluation[rule]))
        logged.update({f"{rule}/{shape}": float(v) for shape, v in zip(quads.SHAPE_NAMES, evaluation[rule])})
    return logged


def summarize(evaluations: dict, num_trials: int, target_error: Optional[float] = None) -> dict:
    """The results of several models x runs: ``summary`` (graded, the headline) and ``summary_argmax``
    (:func:`~gensim_jax.evaluation.oddball.oddball_summary`), ``temperatures`` and ``regression_error``
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
