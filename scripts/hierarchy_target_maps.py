"""The Eq. 4 target map on cosine, compared on the synthetic hierarchy (issue 13, item 3).

Paper Sec. 3.3 regresses the cosine of two image embeddings onto ``log s`` (Eq. 4); Appendix N onto
``s``. Neither is in a cosine's range. This script trains the ``gensim`` arm of
``imagenet_hierarchy --config cpu_small`` once per target map (``objectives.gensim.target_transform``:
``raw`` = log s, ``exp`` = s, ``unit``, ``standardized``, optionally ``affine``), each with
``--runs`` seeds, then (unless ``--no-baselines``) the ``class_triplet`` and ``simclr`` arms over the
same seeds, every one through the runner::

    python -m train imagenet_hierarchy --config cpu_small --objective gensim \\
        --workdir OUT/gensim_<map> --set num_runs=R num_steps=S objectives.gensim.target_transform=<map>
    python -m train imagenet_hierarchy --config cpu_small --objective class_triplet,simclr \\
        --workdir OUT/contrastive --set num_runs=R num_steps=S

and writes ``OUT/table.md`` (per-level accuracy and the aggregate ``sum_l log(a_l / c_l)``, mean
and 95% t-interval over the seeds, next to uniform and majority chance), ``OUT/summary.json`` and
``OUT/hierarchy_target_maps.png``. A workdir whose ``results.json`` exists is not run again
(``--report`` only re-reads them). Seeds ``seed .. seed + runs - 1`` draw the initialisation and the
batch order; the synthetic images are those of ``seed`` in every run (the runner's ``num_runs``).

Usage::

    python scripts/hierarchy_target_maps.py --steps 80 --runs 5 --out runs/hierarchy_target_maps
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gensim_jax.evaluation import hierarchy  # noqa: E402
from gensim_jax.evaluation.statistics import t_interval, welch_test  # noqa: E402

MAPS = ("raw", "exp", "unit", "standardized")


def train_command(workdir: Path, objectives: str, runs: int, steps: int, seed: int, transform=None) -> list:
    """The runner command line of one workdir."""
    sets = [f"num_runs={runs}", f"num_steps={steps}", f"seed={seed}"]
    if transform is not None:
        sets.append(f"objectives.gensim.target_transform={transform}")
    return [
        sys.executable,
        "-m",
        "train",
        "imagenet_hierarchy",
        "--config",
        "cpu_small",
        "--objective",
        objectives,
        "--workdir",
        str(workdir),
        "--set",
        *sets,
    ]


def run_one(workdir: Path, command: list) -> None:
    """Run ``command`` unless ``workdir/results.json`` exists; record its wall time in ``workdir/wall.json``.

    A workdir that holds checkpoints of a stopped sweep (SIGTERM saves one) is resumed (``--resume``).
    """
    if (workdir / "results.json").exists():
        print(f"[maps] {workdir}: done already", flush=True)
        return
    if any(workdir.glob("*/run*/checkpoints")):
        command = [*command, "--resume"]
    print("[maps] " + " ".join(command[1:]), flush=True)
    t0 = time.time()
    subprocess.run(command, cwd=ROOT, check=True)
    wall = time.time() - t0
    resumed = "--resume" in command
    (workdir / "wall.json").write_text(
        json.dumps({"wall_s": wall, "command": command[1:], "resumed": resumed}, indent=2)
    )


def _row(per_run: list) -> dict:
    """Mean and 95% t-interval over runs of each level's accuracy and the two aggregates."""
    acc = np.array([[lv["accuracy"] for lv in run["levels"]] for run in per_run], float)
    out = {"runs": len(per_run), "accuracy": [], "per_run_score_uniform": [r["score_uniform"] for r in per_run]}
    for j in range(acc.shape[1]):
        out["accuracy"].append(_interval(acc[:, j]))
    for key in ("score_uniform", "score_majority"):
        out[key] = _interval([r[key] for r in per_run])
    return out


def _interval(values) -> list:
    v = np.asarray(values, float)
    if len(v) < 2:
        return [float(v.mean()), None, None]
    return list(t_interval(v))


def collect(out: Path, maps) -> dict:
    """Rows ``gensim (<map>)``, ``class_triplet``, ``simclr``, ``initial``, ``pixels`` from the workdirs."""
    rows, walls, levels = {}, {}, None
    baseline_source = None
    for m in maps:
        path = out / f"gensim_{m}" / "results.json"
        if not path.exists():
            if (out / f"gensim_{m}").is_dir():  # stopped before the end: the runs whose training finished
                for _arm, per_run in evaluate_exports(out / f"gensim_{m}", ("gensim",)).items():
                    rows[f"gensim ({m}, partial)"] = _row(per_run)
            continue
        res = json.loads(path.read_text())
        rows[f"gensim ({m})"] = _row(res["per_run"]["gensim"])
        walls[f"gensim ({m})"] = _wall(out / f"gensim_{m}")
        levels = levels or res["summary"]["gensim"]
        baseline_source = baseline_source or res
    path = out / "contrastive" / "results.json"
    if path.exists():
        res = json.loads(path.read_text())
        for arm in ("class_triplet", "simclr"):
            if arm in res["per_run"]:
                rows[arm] = _row(res["per_run"][arm])
                walls[arm] = _wall(out / "contrastive")
        levels = levels or res["summary"]["class_triplet"]
        baseline_source = baseline_source or res
    elif (out / "contrastive").is_dir():  # stopped before the end: the runs whose training finished
        for arm, per_run in evaluate_exports(out / "contrastive", ("class_triplet", "simclr")).items():
            rows[f"{arm} (partial)"] = _row(per_run)
    if baseline_source is None:
        raise SystemExit(f"no results.json under {out}")
    for name in ("initial", "pixels"):
        rows[name] = _row(baseline_source["per_run"][name])
    return {
        "levels": levels["levels"],
        "num_labels": levels["num_labels"],
        "chance_uniform": levels["chance_uniform"],
        "chance_majority": levels["chance_majority"],
        "num_steps": baseline_source["num_steps"],
        "num_eval_images": baseline_source["num_eval_images"],
        "rows": rows,
        "wall_s": walls,
        "tests": _tests(rows),
        "targets": target_values(maps),
        "cosine_by_depth": {
            m: cosine_by_depth(out / f"gensim_{m}", "gensim") for m in maps if (out / f"gensim_{m}").is_dir()
        },
    }


def evaluate_exports(workdir: Path, arms) -> dict:
    """``{arm: [evaluation, ...]}`` of the runs of an unfinished workdir whose encoder was exported.

    The runner exports each run's encoder after its training and then evaluates it; this repeats that
    evaluation (``model_embedding`` + ``evaluate_embedding`` of the experiment on its held-out set)
    for a workdir whose ``results.json`` was never written (a sweep stopped at a deadline). Only
    complete runs ``run0 .. run{k-1}`` with an export are used, in order.
    """
    from gensim_jax.experiments import imagenet_hierarchy as exp
    from gensim_jax.training import load_exported

    saved = json.loads((workdir / "config.json").read_text())["config"]
    config = exp.EXPERIMENT.get_config("cpu_small", seed=int(saved["seed"]))
    images, labels = exp.heldout_images(config)
    out = {}
    for arm in arms:
        r, per_run = 0, []
        while (workdir / arm / f"run{r}" / "export" / "variables.msgpack").is_file():
            model, variables, _ = load_exported(workdir / arm / f"run{r}" / "export")
            emb = hierarchy.model_embedding(model, variables, images, config.eval.batch_size)
            per_run.append(exp.evaluate_embedding(emb, labels, config))
            r += 1
        if per_run:
            out[arm] = per_run
    return out


def cosine_by_depth(workdir: Path, arm: str) -> list:
    """Mean held-out cosine per distinct ``log s`` (low to high), averaged over the exported runs.

    For each finished run: the penultimate-layer embedding of the held-out images (as evaluated),
    the cosine of every pair of distinct images, averaged within each value of the Eq. 4 table
    (the separation depth of the two classes); then the mean over runs. What the regression reached,
    to set beside each map's targets.
    """
    from gensim_jax.experiments import imagenet_hierarchy as exp
    from gensim_jax.training import load_exported

    if not (workdir / arm / "run0" / "export" / "variables.msgpack").is_file():
        return []
    saved = json.loads((workdir / "config.json").read_text())["config"]
    config = exp.EXPERIMENT.get_config("cpu_small", seed=int(saved["seed"]))
    images, labels = exp.heldout_images(config)
    table = np.round(exp.hierarchy_log_table(config), 12)
    values = np.unique(table)
    pair = table[labels][:, labels]
    off = ~np.eye(len(labels), dtype=bool)
    per_run, r = [], 0
    while (workdir / arm / f"run{r}" / "export" / "variables.msgpack").is_file():
        model, variables, _ = load_exported(workdir / arm / f"run{r}" / "export")
        z = hierarchy.model_embedding(model, variables, images, config.eval.batch_size).astype(np.float64)
        z = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
        cos = z @ z.T
        per_run.append([float(cos[(pair == v) & off].mean()) for v in values])
        r += 1
    return np.mean(per_run, axis=0).tolist() if per_run else []


def target_values(maps, **overrides) -> dict:
    """Each map's target for each distinct ``log s`` of the cpu_small class table (Eq. 4), low to high.

    Returns ``{"log_s": [...], "pairs": [...], map: [...]}``: ``pairs`` counts the ordered class pairs
    holding each value (the weight a value gets in the table's statistics).
    """
    from gensim_jax.experiments import imagenet_hierarchy as exp
    from gensim_jax.kernels.targets import transform_table

    config = exp.EXPERIMENT.get_config("cpu_small", **overrides)
    table = exp.hierarchy_log_table(config)
    values, inverse, counts = np.unique(np.round(table, 12), return_inverse=True, return_counts=True)
    first = [int(np.flatnonzero(inverse.ravel() == k)[0]) for k in range(len(values))]
    out = {"log_s": values.tolist(), "pairs": counts.tolist()}
    for m in maps:
        out[m] = [float(transform_table(table, m).ravel()[i]) for i in first]
    return out


def _wall(workdir: Path):
    p = workdir / "wall.json"
    return json.loads(p.read_text())["wall_s"] if p.exists() else None


def _tests(rows: dict) -> dict:
    """Welch t-tests of the aggregate (uniform chance) of each gensim map against the other rows."""
    out = {}
    for a in [r for r in rows if r.startswith("gensim")]:
        for b in rows:
            if b == a or rows[b]["runs"] < 2:
                continue
            x, y = rows[a]["per_run_score_uniform"], rows[b]["per_run_score_uniform"]
            out[f"{a} vs {b}"] = welch_test(x, y)
    return out


def _fmt(iv, digits=3) -> str:
    m, lo, hi = iv
    if lo is None:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def table(summary: dict) -> str:
    """Markdown: rows x (per-level accuracy, aggregate with uniform and majority chance, wall)."""
    head = " | ".join(f"L{lv} ({n})" for lv, n in zip(summary["levels"], summary["num_labels"]))
    lines = [
        f"| row | runs | {head} | Σ log(a/c), uniform | Σ log(a/c), majority | wall (s) |",
        "|---|---|" + "---|" * len(summary["levels"]) + "---|---|---|",
        "| chance (uniform) | | " + " | ".join(f"{c:.3f}" for c in summary["chance_uniform"]) + " | 0 | | |",
        "| chance (majority) | | " + " | ".join(f"{c:.3f}" for c in summary["chance_majority"]) + " | | 0 | |",
    ]
    for name, r in summary["rows"].items():
        wall = summary["wall_s"].get(name)
        lines.append(
            f"| {name} | {r['runs']} | "
            + " | ".join(_fmt(a) for a in r["accuracy"])
            + f" | {_fmt(r['score_uniform'], 2)} | {_fmt(r['score_majority'], 2)} | "
            + (f"{wall:.0f}" if wall else "")
            + " |"
        )
    t = summary["targets"]
    lines.append("")
    lines.append("Targets on the class table (Eq. 4, by distinct log s; pairs = ordered class pairs holding it):")
    lines.append("")
    lines.append("| log s | " + " | ".join(f"{v:.3f}" for v in t["log_s"]) + " |")
    lines.append("|---|" + "---|" * len(t["log_s"]))
    lines.append("| pairs | " + " | ".join(str(c) for c in t["pairs"]) + " |")
    for m in [k for k in t if k not in ("log_s", "pairs")]:
        lines.append(f"| {m} | " + " | ".join(f"{v:.3f}" for v in t[m]) + " |")
    for m, cos in summary.get("cosine_by_depth", {}).items():
        if cos:
            lines.append(f"| reached by {m}: held-out cosine | " + " | ".join(f"{v:.3f}" for v in cos) + " |")
    lines.append("")
    lines.append("Welch t-tests of the aggregate (uniform chance):")
    lines.append("")
    lines.append("| comparison | t | dof | p |")
    lines.append("|---|---|---|---|")
    for k, v in summary["tests"].items():
        lines.append(f"| {k} | {v['t']:.2f} | {v['dof']:.1f} | {v['p']:.3g} |")
    return "\n".join(lines)


def plot(summary: dict, path: Path) -> None:
    """Aggregate per row (95% t-interval) and the per-level accuracies (Fig. 4B / S3 style)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["rows"])
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.4), gridspec_kw={"width_ratios": [1.2, 1]})
    for i, n in enumerate(names):
        m, lo, hi = summary["rows"][n]["score_uniform"]
        err = None if lo is None else [[m - lo], [hi - m]]
        ax[0].bar(i, m, yerr=err, capsize=3, color="C0" if n.startswith("gensim") else "C7")
    levels = np.array(summary["levels"])
    ceiling = float(np.sum(np.log(1.0 / np.asarray(summary["chance_uniform"]))))
    ax[0].axhline(ceiling, color="k", ls=":", lw=1, label=f"ceiling (all levels correct) {ceiling:.2f}")
    ax[0].set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax[0].set(ylabel="Σ_l log(a_l / c_l), uniform chance", title="Aggregate (mean, 95% t-interval over seeds)")
    ax[0].legend(fontsize=8, loc="lower right")
    for k, n in enumerate(names):
        r = summary["rows"][n]
        m = np.array([a[0] for a in r["accuracy"]])
        if r["accuracy"][0][1] is None:
            err = None
        else:
            err = np.array([[a[0] - a[1] for a in r["accuracy"]], [a[2] - a[0] for a in r["accuracy"]]])
        ax[1].errorbar(levels + 0.04 * (k - len(names) / 2), m, yerr=err, marker="o", ms=3, lw=1, capsize=2, label=n)
    ax[1].plot(levels, summary["chance_uniform"], "r--", lw=1, label="chance 1/n_l")
    ax[1].set(xlabel="tree level", ylabel="accuracy", ylim=(0, 1.02), title="Per-level decoding accuracy")
    ax[1].set_xticks(levels)
    ax[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=80, help="training steps of every run (cpu_small: batch 32)")
    p.add_argument("--runs", type=int, default=5, help="seeds per arm")
    p.add_argument("--seed", type=int, default=0, help="first seed (and the synthetic images' seed)")
    p.add_argument("--maps", default=",".join(MAPS), help="comma list of target_transform values")
    p.add_argument("--no-baselines", action="store_true", help="skip the class_triplet and simclr arms")
    p.add_argument("--report", action="store_true", help="only read the finished workdirs and write the table")
    p.add_argument("--out", default="runs/hierarchy_target_maps")
    args = p.parse_args(argv)
    out = Path(args.out)
    if not out.is_absolute():
        out = ROOT / out
    maps = [m for m in args.maps.split(",") if m]
    if args.steps < 1 or args.runs < 1:
        print("error: --steps and --runs must be >= 1", file=sys.stderr)
        return 2
    if not args.report:
        for m in maps:
            run_one(
                out / f"gensim_{m}", train_command(out / f"gensim_{m}", "gensim", args.runs, args.steps, args.seed, m)
            )
        if not args.no_baselines:
            run_one(
                out / "contrastive",
                train_command(out / "contrastive", "class_triplet,simclr", args.runs, args.steps, args.seed),
            )
    summary = collect(out, maps)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    text = table(summary)
    (out / "table.md").write_text(text + "\n")
    plot(summary, out / "hierarchy_target_maps.png")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
