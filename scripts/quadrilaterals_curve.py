"""Learning curves of the quadrilateral experiment from its runs' evaluations during training.

``python -m train quadrilaterals --config curve`` evaluates both read-outs every ``eval.every``
steps and logs them per shape in every run's ``metrics.jsonl`` (``eval/argmax/<shape>``,
``eval/graded/<shape>``, ``eval/regression_error/...``). This script reads those lines for one or
more work directories (e.g. the paper's protocol and a variant), computes per step and objective
the statistics of paper Fig. 2C for every run (Spearman rho(9) with the irregularity rank, Pearson
r with the pooled humans and with the baboons) and their means with 95% t-intervals over runs, and
writes a Markdown table and a figure.

    python scripts/quadrilaterals_curve.py runs/quadrilaterals-curve --label references \\
        [runs/quad-variant --label "references + deviants"] --out docs/figures/quadrilaterals_curve.png

Work directories given the same label pool their runs (e.g. one process per seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation.sable_meyer import (
    HUMAN_POPULATIONS,
    packaged_error_rates,
    pooled_error_rates,
    regularity_rank,
)
from gensim_jax.stimuli.quadrilaterals import SHAPE_NAMES

STATS = ("argmax_error", "argmax_shapes_with_errors", "rho", "r_human", "r_baboon", "reg_ref", "reg_dev")


def _corr(fn, a, b):
    return float(fn(a, b).statistic) if np.ptp(a) > 0 else np.nan


def point(graded, argmax, temperature: float, reg: dict) -> dict:
    """One evaluation's statistics: argmax error and erring shapes; the graded curve's Spearman rho(9)
    with the irregularity rank and Pearson r with the pooled humans and the baboons; the regression
    error on reference and deviant pairs (nan when not recorded)."""
    table = packaged_error_rates()
    graded, argmax = np.asarray(graded, np.float64), np.asarray(argmax, np.float64)
    return {
        "graded": graded.tolist(),
        "argmax": argmax.tolist(),
        "temperature": float(temperature),
        "argmax_error": float(argmax.mean()),
        "argmax_shapes_with_errors": float((argmax > 0).sum()),
        "rho": _corr(stats.spearmanr, graded, regularity_rank()),
        "r_human": _corr(stats.pearsonr, graded, pooled_error_rates(table, HUMAN_POPULATIONS)),
        "r_baboon": _corr(stats.pearsonr, graded, table["baboons"]["error_rate"]),
        "reg_ref": float(reg.get("reference_pairs", np.nan)),
        "reg_dev": float(reg.get("deviant_pairs", np.nan)),
    }


def run_curve(run_dir: Path) -> dict[int, dict]:
    """``{step: point}`` of one run's evaluations during training, from its ``metrics.jsonl``."""
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if "eval/graded/square" not in m:
            continue
        reg = {
            k: m[f"eval/regression_error/{k}"]
            for k in ("reference_pairs", "deviant_pairs")
            if f"eval/regression_error/{k}" in m
        }
        out[int(m["step"])] = point(
            [m[f"eval/graded/{s}"] for s in SHAPE_NAMES],
            [m[f"eval/argmax/{s}"] for s in SHAPE_NAMES],
            m.get("eval/temperature", np.nan),
            reg,
        )
    return out


def final_curve(run_dir: Path, results: dict, arm: str, r: int) -> tuple[int, dict] | None:
    """The run's final evaluation (results.json) at the last step."""
    s = results["summary"]["models"].get(arm)
    a = results["summary_argmax"]["models"].get(arm)
    if s is None or r >= s["runs"]:
        return None
    reg = results.get("regression_error", {}).get(arm, [{}] * (r + 1))[r]
    return int(results["num_steps"]), point(
        s["error_rate_runs"][r], a["error_rate_runs"][r], results["temperatures"][arm][r], reg
    )


def export_curve(run_dir: Path) -> tuple[int, dict] | None:
    """The final point of a run whose work directory has no results.json (stopped before the other
    runs ended): its exported encoder evaluated again with the experiment's own read-out."""
    from gensim_jax.evaluation import oddball as oe
    from gensim_jax.experiments import quadrilaterals as quad
    from gensim_jax.training.export import load_exported

    if not (run_dir / "export").is_dir():
        return None
    saved = json.loads((run_dir / "config.json").read_text())["config"]
    config = quad.EXPERIMENT.config_from_dict({k: v for k, v in saved.items() if k not in ("arm", "experiment")})
    model, variables, _ = load_exported(run_dir / "export")
    trials = quad.test_trials(config)
    e = oe.trial_embeddings(quad.embedding_fn(config, model, variables), trials)
    out = oe.readout(e, trials, config.eval.readout_target_error)
    return int(saved["num_steps"]), point(out["graded"], out["argmax"], out["temperature"], out["regression_error"])


def collect(workdir: Path) -> dict[str, dict[int, list[dict]]]:
    """``{arm: {step: [per-run statistics]}}`` over every ``workdir/<arm>/run*``."""
    results_path = workdir / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else None
    arms: dict = {}
    for arm_dir in sorted(p for p in workdir.iterdir() if p.is_dir()):
        for run_dir in sorted(arm_dir.glob("run*")):
            if not (run_dir / "metrics.jsonl").exists():
                continue
            curve = run_curve(run_dir)
            last = None
            if results is not None:
                last = final_curve(run_dir, results, arm_dir.name, int(run_dir.name[3:]))
            else:
                last = export_curve(run_dir)
            if last is not None:
                curve[last[0]] = last[1]
            for step, values in curve.items():
                arms.setdefault(arm_dir.name, {}).setdefault(step, []).append(values)
    if not arms:
        raise ValueError(
            f"{workdir} holds no <arm>/run*/metrics.jsonl with eval/graded lines (train with eval_every > 0)"
        )
    return arms


def mean_ci(values: list[float]) -> tuple[float, float, int]:
    """Mean and the half-width of its 95% t-interval over the defined values (nan for fewer than 2)."""
    v = np.array([x for x in values if np.isfinite(x)])
    if v.size == 0:
        return np.nan, np.nan, 0
    if v.size == 1:
        return float(v[0]), np.nan, 1
    return float(v.mean()), float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)), int(v.size)


def _cell(values, spec=".2f") -> str:
    m, h, n = mean_ci(values)
    if n == 0:
        return "n/a"
    return f"{m:{spec}}" + ("" if not np.isfinite(h) else f" ± {h:{spec}}")


def table(curves: dict[str, dict[str, dict[int, list[dict]]]]) -> str:
    lines = [
        "| training | objective | step | runs | argmax error | shapes erring (argmax) | graded rho(9) | "
        "graded r human | graded r baboon | GenSim regression error, reference / deviant pairs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, arms in curves.items():
        for arm, steps in arms.items():
            for step in sorted(steps):
                rows = steps[step]
                col = {k: [r[k] for r in rows] for k in STATS}
                lines.append(
                    f"| {label} | {arm} | {step} | {len(rows)} | {_cell(col['argmax_error'], '.3f')} | "
                    f"{_cell(col['argmax_shapes_with_errors'], '.1f')} | {_cell(col['rho'])} | "
                    f"{_cell(col['r_human'])} | {_cell(col['r_baboon'])} | "
                    + (f"{_cell(col['reg_ref'])} / {_cell(col['reg_dev'])} |" if arm == "gensim" else "- |")
                )
    return "\n".join(lines)


def plot(curves, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("argmax_error", "argmax mean error"),
        ("rho", "graded rho(9)"),
        ("r_human", "graded r, humans (pooled)"),
        ("r_baboon", "graded r, baboons"),
        ("reg", "GenSim regression error (o reference, x deviant pairs)"),
    ]
    if not any("gensim" in arms for arms in curves.values()):
        panels = panels[:-1]  # the regression error is GenSim's alone
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6))
    styles = ["-", "--", ":", "-."]

    def band(ax, xs, steps, key, color, style, marker, label):
        mc = [mean_ci([r[key] for r in steps[x]]) for x in xs]
        m = np.array([c[0] for c in mc])
        h = np.nan_to_num(np.array([c[1] for c in mc]))
        ax.plot(xs, m, style, color=color, marker=marker, ms=4, label=label)
        ax.fill_between(xs, m - h, m + h, color=color, alpha=0.15)

    for li, (label, arms) in enumerate(curves.items()):
        for arm, steps in arms.items():
            xs = sorted(steps)
            color = {"gensim": "C0", "supervised": "C3", "simclr": "C2"}.get(arm, "C7")
            style = styles[li % 4]
            for ax, (key, title) in zip(axes, panels):
                ax.set_title(title, fontsize=9)
                ax.set_xlabel("training step")
                if key == "reg":
                    if arm == "gensim":
                        band(ax, xs, steps, "reg_ref", color, style, "o", f"{label}, reference")
                        band(ax, xs, steps, "reg_dev", color, style, "x", f"{label}, deviant")
                    continue
                band(ax, xs, steps, key, color, style, "o", f"{arm}, {label}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def summary_step(arms: dict[str, dict[int, list[dict]]]) -> int:
    """The last step at which every objective has all of its runs."""
    full = None
    for steps in arms.values():
        most = max(len(v) for v in steps.values())
        ok = {s for s, v in steps.items() if len(v) == most}
        full = ok if full is None else full & ok
    if not full:
        raise ValueError("no step has every run of every objective; pass --at-step")
    return max(full)


def final_summary(arms: dict[str, dict[int, list[dict]]], step: int) -> dict | None:
    """Fig. 2B/2C statistics over the runs at ``step``, in the form of the experiment's results
    (``quadrilaterals.format_table``)."""
    from gensim_jax.evaluation import oddball as oe

    graded, argmax, taus = {}, {}, {}
    for arm, steps in arms.items():
        rows = [r for r in steps.get(step, []) if "graded" in r]
        if rows:
            graded[arm] = np.array([r["graded"] for r in rows])
            argmax[arm] = np.array([r["argmax"] for r in rows])
            taus[arm] = [r["temperature"] for r in rows]
    if not graded:
        return None
    return {
        "num_trials": 440,
        "readout": {"headline": "graded", "target_error": oe.human_mean_error()},
        "summary": ob.oddball_summary(graded),
        "summary_argmax": ob.oddball_summary(argmax),
        "temperatures": taus,
        "config": {"model": {"pretrained": None}},  # as results.json nests it (the note on no pretrained weights)
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workdirs", nargs="+", type=Path)
    p.add_argument("--label", action="append", default=None, help="one per work directory (default: its name)")
    p.add_argument("--out", type=Path, default=Path("quadrilaterals_curve.png"), help="figure path")
    p.add_argument(
        "--at-step", type=int, default=None, help="step of the Fig. 2B/2C summary (default: the last with every run)"
    )
    a = p.parse_args(argv)
    labels = a.label or [w.name for w in a.workdirs]
    if len(labels) != len(a.workdirs):
        print("error: give one --label per work directory", file=sys.stderr)
        return 2
    curves: dict = {}
    try:
        for label, w in zip(labels, a.workdirs):  # work directories under one label pool their runs
            for arm, steps in collect(w).items():
                for step, rows in steps.items():
                    curves.setdefault(label, {}).setdefault(arm, {}).setdefault(step, []).extend(rows)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table(curves))
    plot(curves, a.out)
    print(f"\nwrote {a.out}")
    from gensim_jax.evaluation.oddball import plot_oddball
    from gensim_jax.experiments.quadrilaterals import format_table

    for label, arms in curves.items():
        try:
            step = a.at_step if a.at_step is not None else summary_step(arms)
        except ValueError as e:
            print(f"error: {label}: {e}", file=sys.stderr)
            return 2
        results = final_summary(arms, step)
        if results is None:
            continue
        print(f"\n## {label}: the runs at step {step}\n")
        print(format_table(results))
        path = a.out.with_name(f"{a.out.stem}_{label.replace(' ', '_')}_final.png")
        plot_oddball(results["summary"], path, title=f"{label}: graded read-out, step {step}")
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
