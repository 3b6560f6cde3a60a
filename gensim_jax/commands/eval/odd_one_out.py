"""``python -m eval odd_one_out``: likelihood of human odd-one-out choices (paper Sec. 3.3, Fig. 4D).

``--trials CSV`` (columns ``image_1, image_2, image_3, choice, rt, participant``) and
``--embeddings FILE.npz`` (arrays ``ids`` ``(N,)`` str and ``embeddings`` ``(N, D)``). alpha of
``tau = alpha * rt`` is grid-searched per participant (``--alphas LO HI COUNT``: a log-spaced grid
``10**LO .. 10**HI``, default -4 2 121). The JSON adds the objective over the grid averaged over
participants (``curve``); ``--workdir DIR`` writes ``odd_one_out.json`` and ``odd_one_out.png``
(objective vs alpha per participant, their mean, the fitted alphas, chance). Printed: the mean
likelihood over participants and a Markdown table of the fitted alpha per participant (the first
:data:`MAX_PARTICIPANTS`); ``--json`` prints the full JSON instead.
"""

from __future__ import annotations

import argparse

import numpy as np

from gensim_jax.commands.eval._output import add_output_arguments, finish, fmt, markdown_table, prog, typed
from gensim_jax.evaluation.embed import load_npz
from gensim_jax.evaluation.odd_one_out import objective_curves, odd_one_out_likelihood, plot_odd_one_out, read_trials

#: Participants listed in the printed table (all of them are in the JSON).
MAX_PARTICIPANTS = 20


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("odd_one_out"), description=typed(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--trials", required=True)
    p.add_argument("--embeddings", required=True)
    p.add_argument("--objective", choices=("mean_likelihood", "log_likelihood"), default="mean_likelihood")
    p.add_argument(
        "--alphas",
        nargs=3,
        type=float,
        default=(-4.0, 2.0, 121),
        metavar=("LO", "HI", "COUNT"),
        help="log10 range and size of the alpha grid",
    )
    add_output_arguments(p)
    a = p.parse_args(argv)
    lo, hi, count = a.alphas
    if int(count) < 2 or not hi > lo:
        p.error(f"--alphas needs HI > LO and COUNT >= 2, got {lo} {hi} {count}")
    alphas = np.logspace(lo, hi, int(count))
    z = load_npz(a.embeddings, ("ids", "embeddings"))
    trials = read_trials(a.trials, [str(i) for i in z["ids"]])
    result = odd_one_out_likelihood(z["embeddings"], trials, alphas=alphas, objective=a.objective)
    curves = objective_curves(z["embeddings"], trials, alphas, a.objective)
    result["objective"] = a.objective
    result["curve"] = {"alpha": alphas, "mean": np.mean(np.stack(list(curves.values())), axis=0)}

    def plot(path):
        mean_lik = a.objective == "mean_likelihood"
        plot_odd_one_out(
            alphas,
            curves,
            path,
            fitted={k: f.alpha for k, f in result["participants"].items()},
            chance=1.0 / 3.0 if mean_lik else float(np.log(1.0 / 3.0)),
            ylabel="mean likelihood of the human choices" if mean_lik else "mean log-likelihood of the human choices",
        )

    return finish(result, a, "odd_one_out", plot, summary=summary)


def summary(result: dict) -> str:
    """The mean likelihood of the human choices over participants and each participant's fit."""
    fits = list(result["participants"].values())
    rows = [
        [f["participant"], f["num_trials"], fmt(f["alpha"]), fmt(f["mean_likelihood"]), fmt(f["mean_log_likelihood"])]
        for f in fits[:MAX_PARTICIPANTS]
    ]
    lines = [
        f"Odd-one-out: mean likelihood of the human choices {fmt(result['mean_likelihood'])} "
        f"(s.e.m. {fmt(result['sem'], 3)}) over {len(fits)} participants; chance {fmt(result['chance'])}; "
        f"alpha fitted per participant by {result['objective']}.",
        "",
        markdown_table(["participant", "trials", "alpha", "mean likelihood", "mean log-likelihood"], rows),
    ]
    if len(fits) > MAX_PARTICIPANTS:
        lines.append(f"({len(fits) - MAX_PARTICIPANTS} more participants in the JSON)")
    return "\n".join(lines)
