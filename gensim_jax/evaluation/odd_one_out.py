"""Odd-one-out likelihood of human choices (paper Sec. 3.3, Fig. 4D; Levels data of Muttenthaler et al.).

For a trial with images ``(a, b, c)`` where the participant chose ``a`` as the odd one out, the
model's probability of that choice is the softmax entry of the *remaining* pair:

    P(odd = a) = exp(s(b, c) / tau) / [exp(s(a, b) / tau) + exp(s(a, c) / tau) + exp(s(b, c) / tau)]

with ``s`` the cosine similarity of the model's embeddings (the odd one out of ``(i, j, k)`` is
``k`` when the pair ``(i, j)`` is the most similar) and the temperature ``tau = alpha * rt`` (paper:
"the softmax temperature was chosen as tau = alpha * rt"; slower responses are noisier). ``alpha``
is grid-searched per participant (and per model) to maximise the participant's mean likelihood of
their choices (the paper's objective). The mean likelihood is not a proper scoring rule (it rewards
over-confident predictions), so ``objective="log_likelihood"`` is offered too: it recovers the
``alpha`` of simulated choices.

Trials CSV: header with ``image_1, image_2, image_3, choice, rt, participant`` (``choice`` is the
id of the odd image and must be one of the three; ``rt`` > 0 in any unit, alpha absorbs it).

The trials are the user's data (no seeded stimuli): :func:`read_trials` reads them against the ids of
an embedding table, :func:`odd_one_out_likelihood` (the evaluator, also ``evaluate``) fits and scores,
:func:`objective_curves` gives each participant's objective over the ``alpha`` grid and
:func:`plot_odd_one_out` draws it.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np
from scipy.special import log_softmax

from gensim_jax.evaluation.plotting import COLORS, figure, save_figure

__all__ = [
    "NAME",
    "evaluate",
    "objective_curves",
    "plot_odd_one_out",
    "Trials",
    "read_trials",
    "trials_from_arrays",
    "choice_log_probs",
    "fit_alpha",
    "ParticipantFit",
    "odd_one_out_likelihood",
    "DEFAULT_ALPHAS",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "odd_one_out"

#: Default grid of alpha values (log-spaced).
DEFAULT_ALPHAS = np.logspace(-4, 2, 121)


@dataclass(frozen=True)
class Trials:
    """Odd-one-out trials: ``items (T, 3)`` int index into an embedding table, ``choice (T,)`` in
    ``{0, 1, 2}`` (position of the chosen odd item), ``rt (T,)`` > 0, ``participant (T,)`` str."""

    items: np.ndarray
    choice: np.ndarray
    rt: np.ndarray
    participant: np.ndarray


def read_trials(path: str | os.PathLike, ids: Sequence[str]) -> Trials:
    """Read a trials CSV (see module docstring) against the list of embedded image ``ids``.

    Args:
      path: CSV file.
      ids: image id of each row of the embedding table.
    """
    index = {str(k): i for i, k in enumerate(ids)}
    if len(index) != len(ids):
        raise ValueError("ids contains duplicates")
    items, choice, rt, part = [], [], [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"image_1", "image_2", "image_3", "choice", "rt", "participant"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{path}: trials CSV needs columns {sorted(need)}, got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            trio = [row["image_1"], row["image_2"], row["image_3"]]
            for k in trio:
                if k not in index:
                    raise ValueError(f"{path}:{line}: image {k!r} has no embedding")
            if row["choice"] not in trio:
                raise ValueError(f"{path}:{line}: choice {row['choice']!r} is not one of {trio}")
            items.append([index[k] for k in trio])
            choice.append(trio.index(row["choice"]))
            rt.append(float(row["rt"]))
            part.append(row["participant"])
    if not items:
        raise ValueError(f"{path}: no trials")
    return _make_trials(items, choice, rt, part)


def _make_trials(items, choice, rt, participant) -> Trials:
    items = np.asarray(items)
    choice = np.asarray(choice)
    rt = np.asarray(rt, np.float64)
    participant = np.asarray(participant).astype(str)
    t = len(items)
    if items.shape != (t, 3) or not np.issubdtype(items.dtype, np.integer):
        raise ValueError(f"items must be an integer array (T, 3), got {items.dtype} {items.shape}")
    if choice.shape != (t,) or rt.shape != (t,) or participant.shape != (t,):
        raise ValueError(f"choice {choice.shape}, rt {rt.shape}, participant {participant.shape} must all be ({t},)")
    if np.any((choice < 0) | (choice > 2)):
        raise ValueError("choice must be 0, 1 or 2 (position of the odd item)")
    if not np.all(np.isfinite(rt)) or np.any(rt <= 0):
        raise ValueError("rt must be finite and > 0")
    return Trials(items.astype(np.int64), choice.astype(np.int64), rt, participant)


def _cosine_pairs(embeddings: np.ndarray, items: np.ndarray) -> np.ndarray:
    """``(T, 3)`` similarities of the pair left when item 0, 1, 2 is the odd one: (s12, s02, s01)."""
    e = np.asarray(embeddings, np.float64)
    n = np.linalg.norm(e, axis=1)
    if np.any(n == 0):
        raise ValueError("cosine similarity is undefined for a zero embedding")
    u = e / n[:, None]
    a, b, c = u[items[:, 0]], u[items[:, 1]], u[items[:, 2]]
    return np.stack([np.sum(b * c, 1), np.sum(a * c, 1), np.sum(a * b, 1)], axis=1)


def choice_log_probs(embeddings, trials: Trials, alpha) -> np.ndarray:
    """``log P(odd = chosen)`` of every trial for every ``alpha`` (paper Sec. 3.3).

    Args:
      embeddings: ``(N, D)`` embedding table (rows indexed by ``trials.items``).
      trials: :class:`Trials`.
      alpha: scalar or ``(A,)`` positive temperatures per unit rt.

    Returns:
      ``(A, T)`` log-probabilities (``(T,)`` for a scalar ``alpha``), computed with a stable
      log-softmax.
    """
    e = np.asarray(embeddings, np.float64)
    if e.ndim != 2:
        raise ValueError(f"embeddings must be (N, D), got {e.shape}")
    if trials.items.max() >= len(e):
        raise ValueError(f"trials index item {trials.items.max()} but embeddings has {len(e)} rows")
    al = np.asarray(alpha, np.float64)
    if np.any(~np.isfinite(al)) or np.any(al <= 0):
        raise ValueError("alpha must be finite and > 0")
    s = _cosine_pairs(e, trials.items)  # (T, 3)
    tau = np.atleast_1d(al)[:, None] * trials.rt[None, :]  # (A, T)
    logp = log_softmax(s[None] / tau[..., None], axis=-1)  # (A, T, 3)
    out = np.take_along_axis(logp, trials.choice[None, :, None], axis=-1)[..., 0]
    return out[0] if al.ndim == 0 else out


@dataclass(frozen=True)
class ParticipantFit:
    participant: str
    alpha: float
    mean_likelihood: float  # mean over the participant's trials of P(choice) at alpha
    mean_log_likelihood: float
    num_trials: int


def fit_alpha(embeddings, trials: Trials, alphas=DEFAULT_ALPHAS, objective: str = "mean_likelihood") -> ParticipantFit:
    """Grid-search ``alpha`` for one participant's trials.

    Args:
      embeddings: ``(N, D)``.
      trials: trials of one participant.
      alphas: ``(A,)`` grid; ties go to the first grid value.
      objective: ``"mean_likelihood"`` (paper: mean of ``P(choice)``) or ``"log_likelihood"``.
    """
    if objective not in ("mean_likelihood", "log_likelihood"):
        raise ValueError(f"objective must be 'mean_likelihood' or 'log_likelihood', got {objective!r}")
    alphas = np.asarray(alphas, np.float64)
    if alphas.ndim != 1 or len(alphas) == 0:
        raise ValueError(f"alphas must be a non-empty 1-D grid, got shape {alphas.shape}")
    parts = np.unique(trials.participant)
    if len(parts) != 1:
        raise ValueError(f"fit_alpha takes the trials of one participant, got {len(parts)}")
    lp = choice_log_probs(embeddings, trials, alphas)  # (A, T)
    ml = np.exp(lp).mean(axis=1)
    mll = lp.mean(axis=1)
    k = int(np.argmax(ml if objective == "mean_likelihood" else mll))
    return ParticipantFit(str(parts[0]), float(alphas[k]), float(ml[k]), float(mll[k]), len(trials.choice))


def _subset(trials: Trials, mask: np.ndarray) -> Trials:
    return Trials(trials.items[mask], trials.choice[mask], trials.rt[mask], trials.participant[mask])


def odd_one_out_likelihood(
    embeddings, trials: Trials, alphas=DEFAULT_ALPHAS, objective: str = "mean_likelihood"
) -> dict[str, object]:
    """Fit ``alpha`` per participant and report the model's likelihood of the human choices (Fig. 4D).

    Returns:
      ``{"participants": {id: ParticipantFit}, "mean_likelihood": mean over participants,
      "sem": standard error over participants, "chance": 1/3}``.
    """
    fits = {}
    for p in np.unique(trials.participant):
        fits[str(p)] = fit_alpha(embeddings, _subset(trials, trials.participant == p), alphas, objective)
    ml = np.array([f.mean_likelihood for f in fits.values()])
    sem = float(ml.std(ddof=1) / np.sqrt(len(ml))) if len(ml) > 1 else float("nan")
    return {"participants": fits, "mean_likelihood": float(ml.mean()), "sem": sem, "chance": 1.0 / 3.0}


def trials_from_arrays(items, choice, rt, participant) -> Trials:
    """Validated :class:`Trials` from arrays (``items (T, 3)``, ``choice (T,)`` in {0,1,2}, ``rt``, ``participant``)."""
    return _make_trials(items, choice, rt, participant)


def objective_curves(embeddings, trials: Trials, alphas, objective: str) -> dict[str, np.ndarray]:
    """``{participant: (A,)}`` mean likelihood (or mean log-likelihood) of their choices at each alpha."""
    out = {}
    for p in np.unique(trials.participant):
        lp = choice_log_probs(embeddings, _subset(trials, trials.participant == p), alphas)  # (A, T_p)
        out[str(p)] = (np.exp(lp) if objective == "mean_likelihood" else lp).mean(axis=1)
    return out


def plot_odd_one_out(
    alphas,
    curves: Mapping[str, Sequence[float]],
    path: Optional[str | os.PathLike] = None,
    *,
    fitted: Optional[Mapping[str, float]] = None,
    chance: float = 1.0 / 3.0,
    ylabel: str = "mean likelihood of the human choices",
    title: str = "Odd-one-out likelihood vs temperature factor",
):
    """Likelihood of the human odd-one-out choices as a function of ``alpha`` (``tau = alpha * rt``).

    One thin line per participant, their mean in black, each participant's fitted ``alpha`` as a
    dot on its curve (the grid search of paper Sec. 3.3; Fig. 4D reports the value at that dot,
    averaged over participants), chance ``1/3`` dashed. The x axis is logarithmic.

    Args:
      alphas: ``(A,)`` positive grid.
      curves: ``{participant: (A,) objective over the grid}`` (e.g. mean likelihood).
      path: write the PNG here when given.
      fitted: optional ``{participant: alpha}``; the value must lie on the grid's range.
      chance: horizontal reference line (``None`` for none; e.g. for log-likelihood curves pass
        ``log(1/3)``).
      ylabel, title: labels.

    Returns:
      the matplotlib ``Figure``.
    """
    a = np.asarray(alphas, np.float64)
    if a.ndim != 1 or len(a) < 2 or np.any(a <= 0):
        raise ValueError(f"alphas must be a 1-D grid of >= 2 positive values, got shape {a.shape}")
    if not curves:
        raise ValueError("curves is empty")
    ys = {}
    for p, c in curves.items():
        c = np.asarray(c, np.float64)
        if c.shape != a.shape:
            raise ValueError(f"curve of participant {p!r} has shape {c.shape}, alphas has {a.shape}")
        ys[p] = c
    fig, (ax,) = figure(5.0, 3.4)
    for p, c in ys.items():
        ax.plot(a, c, lw=0.7, alpha=0.5, color=COLORS[0])
        if fitted is not None and p in fitted:
            ax.plot([fitted[p]], [np.interp(np.log(fitted[p]), np.log(a), c)], "o", ms=3, color=COLORS[1])
    ax.plot(
        a,
        np.mean(np.stack(list(ys.values())), axis=0),
        lw=2,
        color="black",
        label=f"mean over {len(ys)} participant{'s' if len(ys) != 1 else ''}",
    )
    if fitted:
        ax.plot([], [], "o", ms=3, color=COLORS[1], label=r"fitted $\alpha$")
    if chance is not None:
        ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\alpha$ ($\tau = \alpha \cdot rt$)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    if path is not None:
        save_figure(fig, path)
    return fig


#: The registry's face (:mod:`gensim_jax.evaluation.registry`): the evaluator, on an embedding table.
evaluate = odd_one_out_likelihood
