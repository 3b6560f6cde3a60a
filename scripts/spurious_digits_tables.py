"""Tables of docs/results/spurious_digits.md from finished ``python -m train spurious_digits`` workdirs.

For each ``LABEL=WORKDIR``: the runner's table (mean and 95% t-interval over seeds of ID / OOD
accuracy, and of the nearest-centre accuracy when the run has it); the paired difference of every
lambda against lambda = 0 over the seeds they share (seed ``r`` of every lambda has the same
initialisation and batch order), as mean [95% t-interval] and the paired t-test's p; and L_sim
(the unweighted term the runs log) at the first logged window and at the end.

    python scripts/spurious_digits_tables.py mean=runs/spur/mean_torch sum=runs/spur/sum_default ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from gensim_jax.evaluation.statistics import t_interval
from gensim_jax.experiments import spurious_digits as sd


def _cell(values) -> str:
    if len(values) < 2:
        return f"{np.mean(values):.3g}"
    mean, low, high = t_interval(values)
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def _sci(values) -> str:
    v = np.asarray(values, float)
    return f"{v.mean():.2e} (range {v.min():.1e}..{v.max():.1e})"


def paired_table(results: dict) -> str:
    per_run = results["per_run"]
    if "0" not in per_run:
        return "(no lambda = 0 arm: no paired differences)"
    base = {r["seed"]: r for r in per_run["0"]}
    lines = [
        "| lambda | seeds | ID - ID(0) [95% CI] | p | OOD - OOD(0) [95% CI] | p |",
        "|---|---|---|---|---|---|",
    ]
    for lam in sorted(per_run, key=float):
        if lam == "0":
            continue
        runs = [r for r in per_run[lam] if r["seed"] in base]
        cells = []
        for key in ("id_accuracy", "ood_accuracy"):
            d = [r[key] - base[r["seed"]][key] for r in runs]
            same = np.allclose(d, d[0])
            p = 1.0 if same and d[0] == 0 else (0.0 if same else stats.ttest_1samp(d, 0.0).pvalue)
            cells += [_cell(d), f"{p:.3f}"]
        lines.append(f"| {float(lam):g} | {len(runs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def lsim_table(workdir: Path, results: dict) -> str:
    lines = ["| lambda | L_sim, first logged window | L_sim, last logged window |", "|---|---|---|"]
    for lam in sorted(results["per_run"], key=float):
        first, last = [], []
        for r in range(len(results["per_run"][lam])):
            path = workdir / sd.lambda_dir(float(lam)) / f"run{r}" / "metrics.jsonl"
            logged = [m for m in map(json.loads, path.read_text().splitlines()) if "l_sim" in m]
            if logged:
                first.append(logged[0]["l_sim"])
                last.append(logged[-1]["l_sim"])
        if first:
            lines.append(f"| {float(lam):g} | {_sci(first)} | {_sci(last)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=WORKDIR")
    args = parser.parse_args(argv)
    for item in args.runs:
        label, _, path = item.partition("=")
        workdir = Path(path)
        if not (workdir / "results.json").is_file():
            print(f"error: {workdir} has no results.json", file=sys.stderr)
            return 2
        results = json.loads((workdir / "results.json").read_text())
        cfg = results["config"]
        print(f"## {label}: {workdir}\n")
        print(sd.format_table(results) + "\n")
        print(
            f"train_seconds {results.get('train_seconds', float('nan')):.0f}, steps {results['num_steps']}, "
            f"seeds {[r['seed'] for r in next(iter(results['per_run'].values()))]}, lambdas {cfg['lambdas']}\n"
        )
        print("Paired against lambda = 0 (same seeds):\n\n" + paired_table(results) + "\n")
        print("L_sim (unweighted, as logged; mean over seeds, range):\n\n" + lsim_table(workdir, results) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
