"""``python -m eval oddball``: the quadrilateral oddball protocol (paper Sec. 3.1, Fig. 2).

Inputs (one of):

* ``--trials FILE.npz`` with arrays ``embeddings`` ``(T, 6, D)``, ``deviant`` ``(T,)`` and ``shapes``
  ``(T,)`` (str), e.g. made with :func:`gensim_jax.evaluation.embed.embed_images`;
* ``--export DIR [DIR ...]``: trained encoders exported by
  :func:`gensim_jax.training.export.export_variables`, one directory per training run. The seeded
  test set :func:`gensim_jax.stimuli.quadrilaterals.oddball_test_set` (``--test-seed``,
  ``--trials-per-condition``) is rendered at each export's ``image_size``, grey repeated to 3
  channels, normalised as its ``preprocess`` says, and embedded. The JSON reports every run and
  the statistics of the error rates averaged over runs.

Both add ``summary`` (:func:`gensim_jax.evaluation.oddball.oddball_summary`: error rate per shape
with s.e.m. over runs, Spearman rho(9) of the mean, per-run correlations with the pooled human
(``--human-populations``, default all five groups) and baboon rates and, with two runs or more,
their t-test) unless a shape has no trials.

Reports error rate per shape, Spearman rho against irregularity rank, and correlations with the
packaged per-population error rates (or ``--error-rates CSV``) and, with ``--behavior FILE ...``,
with every subject of those trial-level files. ``--judgements CSV --stimuli FILE.npz`` (arrays
``ids``, ``embeddings``) adds the correlation with human similarity ratings (``--trials`` only).
Read-outs, as training reports them: by default both, the graded one first (the headline, at the top
level of the JSON: the level-matched softmax observer of
:func:`gensim_jax.evaluation.oddball.graded_readout`, ``--target-error``, default the pooled humans'
mean error 0.249, with each run's temperature) and the paper's argmax rule under ``"argmax"`` (the
same fields); ``--readout graded`` or ``--readout argmax`` gives only that one at the top level.
``--workdir DIR`` writes ``oddball.json`` and ``oddball.png`` (Fig. 2B/2C of the headline read-out,
:func:`gensim_jax.evaluation.oddball.plot_oddball`).

Printed: the tables training prints (:func:`gensim_jax.evaluation.oddball.format_table`: statistics per
read-out, correlation per population, error rate per shape); ``--json`` prints the full JSON instead.
"""

from __future__ import annotations

import argparse

import numpy as np

from gensim_jax.commands.eval._output import add_output_arguments, finish, prog, runs_table, typed
from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm
from gensim_jax.evaluation.embed import load_encoders, load_npz, model_label, run_info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("oddball"), description=typed(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trials", help="npz with embeddings (T,6,D), deviant (T,), shapes (T,)")
    src.add_argument(
        "--export", nargs="+", metavar="DIR", help="export directories of trained encoders, one per training run"
    )
    p.add_argument("--test-seed", type=int, default=0, help="seed of the rendered oddball test set (--export)")
    p.add_argument(
        "--trials-per-condition",
        type=int,
        default=10,
        help="test-set trials per (shape, deviant) (--export; 10 -> 440 trials)",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--human-populations",
        default=",".join(sm.HUMAN_POPULATIONS),
        help="comma-separated populations pooled as 'human' in the summary (Fig. 2C, t-test); "
        "default: all five human groups",
    )
    p.add_argument(
        "--readout",
        choices=("both", "graded", "argmax"),
        default="both",
        help="both (default, as training reports them): graded at the top level, argmax under 'argmax'; "
        "graded: softmax observer at the target error; argmax: the paper's rule (farthest from the trial mean)",
    )
    p.add_argument(
        "--target-error",
        type=float,
        default=None,
        help="mean error the graded read-out matches (default: the pooled humans' mean over the 11 shapes)",
    )
    p.add_argument("--label", default=None, help="model name in the outputs")
    p.add_argument("--error-rates", default=None, help="per-population CSV (default: packaged data)")
    p.add_argument(
        "--behavior",
        nargs="+",
        default=None,
        help="trial-level CSV files for per-subject correlations (give each subject once: "
        "e.g. baboons_target.csv or the per-baboon files, not both)",
    )
    p.add_argument("--judgements", default=None, help="CSV stimulus_a,stimulus_b,rating")
    p.add_argument("--stimuli", default=None, help="npz with ids (S,) and embeddings (S,D) for --judgements")
    add_output_arguments(p)
    a = p.parse_args(argv)
    if a.judgements and not a.stimuli:
        p.error("--judgements needs --stimuli")
    if a.judgements and not a.trials:
        p.error("--judgements needs embeddings of the rated stimuli: use it with --trials")

    table = sm.read_error_rates(a.error_rates) if a.error_rates else sm.packaged_error_rates()
    behavior = [t for f in a.behavior for t in sm.read_behavior(f)] if a.behavior else None
    humans = [h for h in a.human_populations.split(",") if h]
    target = a.target_error
    if target is None:
        target = float(np.mean(sm.pooled_error_rates(table, humans)))
    if not 0 < target < ob.CHANCE_ERROR_RATE:
        raise ValueError(f"--target-error must lie in (0, 5/6), got {target}")

    rules = ("graded", "argmax") if a.readout == "both" else (a.readout,)

    def rates_of(embeddings, deviant, shapes, rule: str) -> dict:
        return ob.readout_rates(embeddings, deviant, shapes, rule, target)

    def summarize(label: str, per_run) -> dict:
        # Fig. 2B/2C numbers over runs (one run: s.e.m. 0, no t-test); None where a correlation is undefined
        if not np.all(np.isfinite(per_run)):
            return {}
        return {"summary": ob.oddball_summary({label: per_run}, table, human_populations=humans)}

    results = {}  # read-out rule -> its part of the JSON
    if a.trials:
        z = load_npz(a.trials, ("embeddings", "deviant", "shapes"))
        emb, dev, shapes = z["embeddings"], z["deviant"].astype(np.int64), [str(s) for s in z["shapes"]]
        label = a.label or "model"
        for rule in rules:
            rates = rates_of(emb, dev, shapes, rule)
            results[rule] = {
                "readout": rule,
                "error_rate": rates["error_rate"],
                "trials": rates["trials"],
                **({"temperature": rates["temperature"]} if "temperature" in rates else {}),
                **ob.shape_statistics(rates["error_rate"], table, behavior),
                **summarize(label, rates["error_rate"][None]),
            }
        head = {"shapes": list(sm.SHAPES)}
    else:
        from gensim_jax.stimuli import quadrilaterals as q

        test = q.oddball_test_set(seed=a.test_seed, trials_per_condition=a.trials_per_condition)
        shapes = [q.SHAPE_NAMES[i] for i in test.shape]
        encoders = load_encoders(a.export)
        cache: dict = {}
        embedded = [ob.embed_test_set(test, enc, a.batch_size, cache) for enc in encoders]
        label = model_label(a.label, encoders)
        for rule in rules:
            runs = []
            for enc, emb in zip(encoders, embedded):
                rates = rates_of(emb, test.deviant_position, shapes, rule)
                runs.append(
                    {
                        **run_info(enc),
                        "error_rate": rates["error_rate"],
                        **{k: rates[k] for k in ("errors", "temperature") if k in rates},
                        **ob.shape_statistics(rates["error_rate"], table),
                    }
                )
            per_run = np.stack([r["error_rate"] for r in runs])
            results[rule] = {
                "readout": rule,
                "runs": runs,
                "mean_over_runs": ob.shape_statistics(per_run.mean(axis=0), table, behavior),
                **summarize(label, per_run),
            }
        head = {
            "model": label,
            "shapes": list(sm.SHAPES),
            "test_set": {
                "seed": a.test_seed,
                "trials_per_condition": a.trials_per_condition,
                "trials": len(test),
                "trials_per_shape": np.bincount(test.shape, minlength=11),
            },
        }
    # the first rule is the headline (graded, as in training); the other one is nested under its name
    result = {**head, **results[rules[0]]}
    if len(rules) > 1:
        result["readout"] = "graded"
        result["readouts"] = list(rules)
        result[rules[1]] = results[rules[1]]
    summary = result.get("summary")
    if a.judgements:
        s = load_npz(a.stimuli, ("ids", "embeddings"))
        emb = {str(k): v for k, v in zip(s["ids"], s["embeddings"])}
        rho, pval, n = ob.similarity_judgement_correlation(ob.read_similarity_judgements(a.judgements), emb)
        result["judgement_spearman"] = {"rho": rho, "p": pval, "pairs": n}

    def plot(path):
        ob.plot_oddball(summary, path)

    return finish(
        result, a, "oddball", plot if summary is not None else None, summary=lambda r: summary_text(r, target)
    )


def summary_text(result: dict, target_error=None) -> str:
    """The tables of :func:`gensim_jax.evaluation.oddball.format_table` for the JSON ``result`` of this command
    (graded statistics, argmax under ``"argmax"``); a metric table where no summary could be made."""
    if "summary" not in result:
        return "Oddball: no summary (a shape has no trials or a rate is not finite).\n\n" + runs_table(result)
    label = next(iter(result["summary"]["models"]))
    runs = result.get("runs")
    headline = result.get("readout", "graded")
    taus = [r.get("temperature") for r in runs] if runs else [result.get("temperature")]
    taus = taus if all(t is not None for t in taus) else None
    view = {
        "num_trials": result["test_set"]["trials"] if "test_set" in result else int(np.sum(result.get("trials", 0))),
        "readout": {"target_error": target_error},
        "summary": result["summary"],
        **({"temperatures": {label: taus}} if headline == "graded" and taus else {}),
    }
    if isinstance(result.get("argmax"), dict) and "summary" in result["argmax"]:
        view["summary_argmax"] = result["argmax"]["summary"]
    text = ob.format_table(view)
    if headline != "graded":  # --readout argmax: the one table is the argmax rule's
        text = text.replace("Graded read-out (headline)", "Read-out: argmax (the paper's rule); not the graded one")
    extra = result.get("judgement_spearman")
    if extra:
        text += (
            f"\n\nSimilarity judgements: Spearman rho {extra['rho']:.3f} (p {extra['p']:.3g}, {extra['pairs']} pairs)."
        )
    return text
