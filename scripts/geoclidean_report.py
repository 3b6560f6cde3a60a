"""Tables of docs/results/geoclidean.md from ``python -m train geoclidean`` work directories.

    python scripts/geoclidean_report.py runs/geo_cpu_long [more workdirs ...] [--fit] [--targets] [--out FILE.json]

For every work directory (its ``results.json``): each result key (``"<images>/<rule>"``, e.g.
``official/benchmark``) x row (``pixels``, ``initial``, the trained objectives) x metric, the mean
over runs and its 95% t-interval (``mean +- t_{0.975, n-1} s / sqrt(n)``, ``s`` the sample
standard deviation over the ``n`` runs; no interval for one run), and the paper's order
(gensim > class_triplet > simclr) checked on the means and on Welch t-tests of the differences.

``--fit`` adds the similarity diagnostic of each exported run (``<arm>/run<r>/export``): 8 images
of each of the 37 concepts rendered by our sampler (seed 20,000, never used in training or in
the few-shot episodes), the mean cosine between the embeddings of concept ``a``'s and concept
``b``'s images (``a = b``: distinct images only), and its Spearman correlation with the
cosine-normalised log ST tree kernel (the GenSim target before its map) over the concept pairs
``a != b`` within the 30 training concepts, within the 7 held-out concepts, and across the two
sets; plus ``gap`` = mean same-concept cosine - mean different-concept cosine (held-out concepts).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from gensim_jax.evaluation import statistics
from gensim_jax.evaluation.statistics import welch_test

METRICS = ("acc_close", "acc_far", "auc_close", "auc_far")
ORDER = ("gensim", "class_triplet", "simclr")


def t_interval(values) -> tuple[float, float, int]:
    """``(mean, half-width of the 95% t-interval, n)``; half-width NaN for one value."""
    v = np.asarray(values, float)
    n = len(v)
    if n < 2:
        return float(v.mean()), float("nan"), n
    mean, _, high = statistics.t_interval(v)
    return mean, high - mean, n


def welch(a, b) -> tuple[float, float]:
    """Welch's t statistic and two-sided p of ``mean(a) - mean(b)`` (:func:`gensim_jax.evaluation.statistics.welch_test`)."""
    r = welch_test(a, b)
    return r["t"], r["p"]


def summarize(results: dict) -> dict:
    """``{key: {row: {metric: (mean, half, n)}}}`` from a ``results.json``'s ``per_run``."""
    out = {}
    for key, rows in results["per_run"].items():
        out[key] = {row: {m: t_interval([r[m] for r in runs]) for m in METRICS} for row, runs in rows.items()}
    return out


def order_checks(results: dict) -> dict:
    """Per key and task: the three objectives' means in the paper's order and Welch tests of neighbours."""
    out = {}
    for key, rows in results["per_run"].items():
        if not all(a in rows for a in ORDER):
            continue
        for m in ("acc_close", "acc_far"):
            vals = {a: [r[m] for r in rows[a]] for a in ORDER}
            means = [float(np.mean(vals[a])) for a in ORDER]
            out[f"{key}:{m}"] = {
                "means": dict(zip(ORDER, means)),
                "paper_order_on_means": bool(means[0] > means[1] > means[2]),
                "gensim_vs_class_triplet": welch(vals["gensim"], vals["class_triplet"]),
                "class_triplet_vs_simclr": welch(vals["class_triplet"], vals["simclr"]),
                "gensim_vs_simclr": welch(vals["gensim"], vals["simclr"]),
            }
    return out


_IMAGES: dict = {}


def fit_images(size: int, n_per_concept: int = 8, seed: int = 20_000) -> np.ndarray:
    """``(37 n, size, size)`` float32 in ``[0, 1]``: ``n`` sampler images per concept, concept by concept."""
    from gensim_jax.stimuli.geoclidean import dataset as geo
    from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES

    key = (size, n_per_concept, seed)
    if key not in _IMAGES:
        _IMAGES[key] = (
            np.concatenate(
                [geo.benchmark_images(name, "concept", n=n_per_concept, seed=seed, size=size) for name in CONCEPT_NAMES]
            ).astype(np.float32)
            / 255.0
        )
    return _IMAGES[key]


def similarity_fit(export_dir, n_per_concept: int = 8, seed: int = 20_000) -> dict:
    """The similarity diagnostic of one export (module docstring); ``export_dir="pixels"``: the
    model-free baseline (:func:`~gensim_jax.evaluation.geoclidean.pixel_embedding` of 64 px images)."""
    from gensim_jax.evaluation.embed import load_encoder
    from gensim_jax.evaluation.geoclidean import pixel_embedding
    from gensim_jax.kernels.trees import gram_log_table
    from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES, TEST_CONCEPTS, TRAIN_IDS, concept_parse_trees

    if str(export_dir) == "pixels":
        images = fit_images(64, n_per_concept, seed)
        e = np.asarray(pixel_embedding(images[..., None].repeat(3, -1), 32), np.float64)
    else:
        enc = load_encoder(export_dir)
        images = fit_images(enc.image_size, n_per_concept, seed)
        e = np.asarray(enc(images, 64), np.float64)
    z = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    cos = z @ z.T
    c = len(CONCEPT_NAMES)
    blocks = cos.reshape(c, n_per_concept, c, n_per_concept).transpose(0, 2, 1, 3)
    mean_cos = blocks.mean(axis=(2, 3))
    off = ~np.eye(n_per_concept, dtype=bool)
    for a in range(c):
        mean_cos[a, a] = blocks[a, a][off].mean()
    log_k = gram_log_table(concept_parse_trees(), kind="st", lam=1.0)
    train = np.asarray(TRAIN_IDS)
    test = np.array([CONCEPT_NAMES.index(n) for n in TEST_CONCEPTS])

    def rho(rows, cols, same):
        pairs = [(a, b) for a in rows for b in cols if (a < b if same else True)]
        x = [mean_cos[a, b] for a, b in pairs]
        y = [log_k[a, b] for a, b in pairs]
        return float(stats.spearmanr(x, y).statistic)

    te = mean_cos[np.ix_(test, test)]
    return {
        "rho_train": rho(train, train, True),
        "rho_heldout": rho(test, test, True),
        "rho_cross": rho(test, train, False),
        "gap_heldout": float(np.diag(te).mean() - te[~np.eye(len(test), dtype=bool)].mean()),
        "mean_cos_between": float(mean_cos[~np.eye(c, dtype=bool)].mean()),
    }


def target_table() -> str:
    """Markdown: the GenSim target's training-block statistics per (kernel normalisation, map).

    Over the uniform distribution of training-program pairs ``(a, b)`` (what a batch of images of
    uniformly drawn programs averages over; ``a = b`` included): range, mean, the loss of the best
    constant cosine (the target's variance) and the least loss any cosine in ``[0, 1]`` can reach
    (the embeddings are post-ReLU averages, so their cosines are never negative).
    """
    from gensim_jax.experiments import geoclidean as exp
    from gensim_jax.stimuli.geoclidean.concepts import TRAIN_IDS

    lines = [
        "| kernel | map | target range | mean | best constant: loss | least loss with cos in [0, 1] |",
        "|---|---|---|---|---|---|",
    ]
    for normalize, transform in ((True, "unit"), (True, "raw"), (False, "raw"), (False, "unit")):
        config = exp.EXPERIMENT.get_config(
            "cpu_long",
            **{"objectives.gensim.tree_kernel_normalize": normalize, "objectives.gensim.target_transform": transform},
        )
        t = np.asarray(exp.gensim_target(config).table, float)[np.ix_(TRAIN_IDS, TRAIN_IDS)].ravel()
        best = float(np.mean((t - t.mean()) ** 2))
        floor = float(np.mean((t - np.clip(t, 0, 1)) ** 2))
        kernel = "normalised" if normalize else "raw count"
        lines.append(
            f"| {kernel} | {transform} | [{t.min():.2f}, {t.max():.2f}] | {t.mean():.3f} | {best:.4f} | {floor:.4f} |"
        )
    return "\n".join(lines)


def fmt(mean, half) -> str:
    return f"{mean:.3f}" if np.isnan(half) else f"{mean:.3f} +- {half:.3f}"


def markdown(workdir: Path, results: dict) -> str:
    lines = [f"### {workdir}", ""]
    for key, rows in summarize(results).items():
        lines += [
            f"`{key}`",
            "",
            "| row | runs | acc close | acc far | AUC close | AUC far |",
            "|---|---|---|---|---|---|",
        ]
        for row, ms in rows.items():
            n = ms["acc_close"][2]
            lines.append(f"| {row} | {n} | " + " | ".join(fmt(*ms[m][:2]) for m in METRICS) + " |")
        lines.append("")
    checks = order_checks(results)
    if checks:
        lines += [
            "| key:task | means g / c / s | paper order | g-c t, p | c-s t, p | g-s t, p |",
            "|---|---|---|---|---|---|",
        ]
        for k, v in checks.items():
            m = v["means"]
            tests = " | ".join(
                f"{v[name][0]:.2f}, {v[name][1]:.2f}"
                for name in ("gensim_vs_class_triplet", "class_triplet_vs_simclr", "gensim_vs_simclr")
            )
            means = f"{m['gensim']:.3f} / {m['class_triplet']:.3f} / {m['simclr']:.3f}"
            lines.append(f"| {k} | {means} | {v['paper_order_on_means']} | {tests} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workdirs", nargs="*", type=Path)
    p.add_argument("--targets", action="store_true", help="print the GenSim target statistics per variant")
    p.add_argument("--fit", action="store_true", help="similarity diagnostic of every exported run")
    p.add_argument("--out", type=Path, default=None, help="also write everything as JSON")
    a = p.parse_args(argv)
    if a.targets:
        print(target_table() + "\n")
    everything = {}
    for wd in a.workdirs:
        path = wd / "results.json"
        if not path.is_file():
            print(f"error: {path} does not exist (run python -m train geoclidean first)", file=sys.stderr)
            return 2
        results = json.loads(path.read_text())
        print(markdown(wd, results))
        entry = {"summary": summarize(results), "order": order_checks(results), "wall_s": results.get("wall_s")}
        if a.fit:
            fits = {"pixels/run0": similarity_fit("pixels")}
            for export in sorted(wd.glob("*/run*/export")):
                fits[f"{export.parent.parent.name}/{export.parent.name}"] = similarity_fit(export)
            entry["fit"] = fits
            arms = sorted({k.split("/")[0] for k in fits})
            print("| arm | runs | rho train | rho held-out | rho cross | same - different cos (held-out) |")
            print("|---|---|---|---|---|---|")
            for arm in arms:
                vals = [v for k, v in fits.items() if k.split("/")[0] == arm]
                cells = [
                    fmt(*t_interval([v[m] for v in vals])[:2])
                    for m in ("rho_train", "rho_heldout", "rho_cross", "gap_heldout")
                ]
                print(f"| {arm} | {len(vals)} | " + " | ".join(cells) + " |")
            print()
        everything[str(wd)] = entry
    if a.out:
        a.out.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
