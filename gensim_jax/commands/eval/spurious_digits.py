"""``python -m eval spurious_digits --workdir RUN_DIR``: ID / OOD accuracy against lambda (seed 003 Sec. 4).

Re-evaluates a workdir written by ``python -m train spurious_digits`` (``--runs DIR``, default the
``--workdir``): reads its ``config.json``,
rebuilds the same test splits (same data source, pools and ``data_seed``; tfds data must be
prepared for the ``paper`` config, see ``docs/api/experiment_spurious_digits.md``; the data functions are
:mod:`gensim_jax.data.spurious_digits`'s, the same the training run used), loads every export
``RUN_DIR/lambda_<lam>/run<r>/export`` (:func:`gensim_jax.training.load_exported`), and reports
per run and per lambda the accuracy on digits over their own pool's backgrounds (ID) and over
other pools' backgrounds (OOD) with the mean and Student-t confidence interval over seeds
(:mod:`gensim_jax.evaluation.spurious_digits`). Prints a Markdown table (``--json``: the full JSON instead);
``--workdir DIR`` writes ``spurious_digits.json`` and the figure ``spurious_digits.png`` (ID and
OOD accuracy against lambda with CI bands; in a training workdir this redraws the training run's
figure from the re-evaluated numbers), ``--out FILE`` the JSON.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from gensim_jax.commands.eval._output import add_output_arguments, finish, prog, typed


def find_exports(workdir: Path) -> dict[str, list[Path]]:
    """``{lambda (str): [export dirs in run order]}`` of a training workdir."""
    found: dict[str, list[tuple[int, Path]]] = {}
    for d in sorted(workdir.glob("lambda_*/run*/export")):
        lam = d.parent.parent.name[len("lambda_") :]
        m = re.fullmatch(r"run(\d+)", d.parent.name)
        if m and (d / "model.json").is_file():
            found.setdefault(f"{float(lam):g}", []).append((int(m.group(1)), d))
    return {lam: [d for _, d in sorted(runs)] for lam, runs in found.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog=prog("spurious_digits"), description=typed(__doc__))
    p.add_argument(
        "--runs",
        default=None,
        help=typed("workdir of `python -m train spurious_digits` to evaluate (default: --workdir)"),
    )
    p.add_argument("--data-dir", default=None, help="tfds data directory (overrides the runs' config)")
    p.add_argument("--confidence", type=float, default=None, help="interval level (default: the config's, 0.95)")
    add_output_arguments(p)
    a = p.parse_args(argv)
    if not (a.runs or a.workdir):
        p.error("give --workdir (a training workdir) or --runs")

    from gensim_jax.data import spurious_digits as data
    from gensim_jax.evaluation import spurious_digits as protocol
    from gensim_jax.training import load_exported

    workdir = Path(a.runs or a.workdir)
    cfg_path = workdir / "config.json"
    if not cfg_path.is_file():
        p.error(typed(f"{workdir} has no config.json; is it a `python -m train spurious_digits` workdir?"))
    try:
        stored = json.loads(cfg_path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        p.error(f"{cfg_path} cannot be read as JSON ({err}); the training run writes it at its start")
    if not isinstance(stored, dict):
        p.error(f"{cfg_path} holds a JSON {type(stored).__name__}, not the object a training run writes")
    fields = stored.get("config") if isinstance(stored.get("config"), dict) else {}
    experiment = stored.get("experiment", fields.get("experiment", "spurious_digits"))
    if experiment != "spurious_digits":
        p.error(f"{workdir} is a {experiment!r} workdir, not spurious_digits")
    if a.data_dir is not None:
        fields = {**fields, "data": {**(fields.get("data") or {}), "data_dir": a.data_dir}}
    recorded_eval = fields.get("eval") if isinstance(fields.get("eval"), dict) else {}
    confidence = float(a.confidence if a.confidence is not None else recorded_eval.get("confidence", 0.95))
    eval_batch_size = int(recorded_eval.get("batch_size", 1000))
    try:
        config = data.data_config(fields)
        data.check_data_config(config)
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
        if eval_batch_size < 1:
            raise ValueError(f"eval.batch_size must be >= 1, got {eval_batch_size}")
    except (TypeError, ValueError) as err:
        p.error(f"{cfg_path}: {err}")
    exports = find_exports(workdir)
    if not exports:
        p.error(f"{workdir} holds no exports (lambda_*/run*/export); train first")

    try:
        sets = data.evaluation_sets(data.make_splits(config, data.load_arrays(config)))
    except FileNotFoundError as err:
        p.error(str(err))
    per_run: dict = {}
    predictors: dict = {}
    for lam, dirs in exports.items():
        for d in dirs:
            model, variables, meta = load_exported(d)
            key = json.dumps([meta["model"], meta.get("model_kwargs", {})], sort_keys=True)
            if key not in predictors:  # one compiled forward pass per architecture
                predictors[key] = protocol.make_predictor(model, eval_batch_size)
            acc = protocol.evaluate(predictors[key], variables, sets)
            per_run.setdefault(lam, []).append({"run": d.parent.name, "seed": meta.get("seed"), **acc})
    summary = protocol.summarize(per_run, confidence)
    result = {
        "workdir": str(workdir),
        "data": config.source,
        "ood": config.ood,
        "confidence": confidence,
        "num_test": {k: int(len(v[1])) for k, v in sets.items()},
        "summary": summary,
        "per_run": per_run,
    }

    def plot(path: str) -> None:
        protocol.plot_accuracy_vs_lambda(
            summary,
            path,
            confidence=confidence,
            title=f"Spurious digits ({config.source}), re-evaluated: {workdir.name}",
        )

    def table(result: dict) -> str:
        head = f"Spurious digits ({result['data']}), re-evaluated exports of {result['workdir']}:"
        return head + "\n\n" + protocol.format_table(summary, confidence)

    return finish(result, a, "spurious_digits", plot, summary=table)
