"""``python -m eval export``: re-evaluate a run's exports with their experiment's own evaluation (the run's numbers).

Each ``--export DIR`` (``WORKDIR/<arm>/run<r>/export``, written by ``gensim-jax train``) names its
experiment, arm, seed and the run's resolved config; the experiment's evaluation of the run
(:attr:`~gensim_jax.training.experiment.Arm.evaluate`) is called again on the same
stimuli with the exported encoder (:func:`gensim_jax.training.runner.evaluate_export`), so the JSON
equals the run's ``results.json`` ``evaluations[arm][r]``. Printed: one column per export with the numbers
of its evaluation (lists of more than 4 numbers as their mean); ``--json`` prints the full JSON
(``{"runs": [{"export", "experiment", "arm", "seed", "evaluation"}]}``). The protocols (``oddball``,
``geoclidean``, ...) evaluate any export or precomputed embeddings with options of their own.
"""

from __future__ import annotations

import argparse

from gensim_jax.commands.eval._output import add_output_arguments, finish, prog, runs_table, typed


def summary(result: dict) -> str:
    """The re-evaluated numbers of every export as a metric x run Markdown table."""
    runs = result["runs"]
    experiments = sorted({r["experiment"] for r in runs})
    lines = [
        f"Re-evaluated {len(runs)} export(s) of {', '.join(experiments)} (the numbers of results.json evaluations):"
    ]
    lines += [f"  {r['arm']} seed {r['seed']}: {r['export']}" for r in runs]
    return "\n".join(lines) + "\n\n" + runs_table(result, field="evaluation")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("export"), description=typed(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--export", nargs="+", required=True, metavar="DIR", help="export directories of runs")
    add_output_arguments(p)
    a = p.parse_args(argv)
    from gensim_jax.experiments import evaluate_export

    return finish({"runs": [evaluate_export(d) for d in a.export]}, a, "export", summary=summary)
