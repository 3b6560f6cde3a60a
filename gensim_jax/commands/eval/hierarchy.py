"""``python -m eval hierarchy``: decode every class-tree level from embeddings (paper Sec. 3.3, Fig. 4B, Appendix N).

Inputs (one of):

* ``--embeddings FILE.npz`` (arrays ``embeddings`` ``(N, D)`` and ``classes`` ``(N,)``, ImageNet-1k
  labels in tensorflow-datasets order): the tree is the packaged WordNet tree of ImageNet-1k;
* ``--export DIR [DIR ...]`` (trained encoders exported by
  :func:`gensim_jax.training.export.export_variables`, one per training run) with
  ``--images FILE.npz`` (arrays ``images`` ``(N, H, W[, C])`` in ``[0, 1]`` and ``classes`` ``(N,)``,
  ImageNet-1k labels; WordNet tree) or, without ``--images``, the synthetic set below; each run is
  decoded separately and the JSON adds the mean and s.e.m. over runs;
* nothing: offline, :func:`~gensim_jax.evaluation.hierarchy.synthetic_stimuli` (the grating images
  of a 2 x 3 x 3 tree that ``gensim-jax score`` and the ``imagenet_hierarchy`` experiment's synthetic
  data use, ``uint8``) embedded as raw pixels (``--shuffle-embeddings`` breaks the image-label link
  to show chance).

``--workdir DIR`` writes ``hierarchy.json`` and ``hierarchy.png`` (accuracy per level with chance,
and the aggregate ``sum_l log(a_l / c_l)``). Printed: the accuracy per level as a Markdown table (one
column per run and their mean +- s.e.m.) and the aggregate; ``--json`` prints the full JSON instead.
"""

from __future__ import annotations

import argparse

import numpy as np

from gensim_jax.commands.eval._output import add_output_arguments, finish, fmt, markdown_table, prog, typed
from gensim_jax.evaluation.embed import load_encoders, load_npz, model_label, run_info
from gensim_jax.evaluation.hierarchy import decode_levels, plot_hierarchy, synthetic_stimuli
from gensim_jax.evaluation.statistics import mean_sem_dict


def _decode(x, y, tree, nodes, a, rng) -> dict:
    if a.shuffle_embeddings:
        x = x[rng.permutation(len(x))]
    r = decode_levels(x, y, tree, nodes, seed=a.seed, chance=a.chance, n_jobs=a.n_jobs)
    return {"score": r.score, "levels": list(r.levels)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("hierarchy"), description=typed(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--embeddings", default=None, help="npz with embeddings (N,D) and classes (N,)")
    p.add_argument(
        "--export",
        nargs="+",
        default=None,
        metavar="DIR",
        help="export directories of trained encoders, one per training run",
    )
    p.add_argument("--images", default=None, help="with --export: npz with images (N,H,W[,C]) and classes (N,)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-leaf", type=int, default=12, help="synthetic images per leaf")
    p.add_argument("--noise", type=float, default=0.1, help="synthetic pixel noise (standard deviation, [0, 1] scale)")
    p.add_argument("--size", type=int, default=16, help="synthetic image side (pixels)")
    p.add_argument("--shuffle-embeddings", action="store_true")
    p.add_argument("--chance", choices=("uniform", "majority"), default="uniform")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel one-vs-all SVM fits")
    p.add_argument("--label", default=None, help="model name in the figure")
    add_output_arguments(p)
    a = p.parse_args(argv)
    if a.embeddings and a.export:
        p.error("give --embeddings or --export, not both")
    if a.images and not a.export:
        p.error("--images needs --export (an encoder to embed them)")

    rng = np.random.default_rng(a.seed)
    if a.embeddings or a.images:
        from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy

        h = imagenet1k_hierarchy()
        tree, nodes = h.tree, h.class_nodes
        z = load_npz(a.embeddings or a.images, ("embeddings" if a.embeddings else "images", "classes"))
        y = z["classes"].astype(np.int64)
        data, source = z.get("embeddings", z.get("images")), a.embeddings or a.images
    else:
        data, y, tree, nodes = synthetic_stimuli(a.seed, per_class=a.per_leaf, image_size=a.size, noise=a.noise)
        source = "synthetic images" if a.export else "synthetic pixels"
    head = {"source": source, "shuffled": a.shuffle_embeddings, "chance": a.chance}
    if a.export:
        encoders = load_encoders(a.export)
        runs = [{**run_info(enc), **_decode(enc(data, a.batch_size), y, tree, nodes, a, rng)} for enc in encoders]
        label = model_label(a.label, encoders)
        levels = [lv.level for lv in runs[0]["levels"]]
        acc = [[lv.accuracy for lv in r["levels"]] for r in runs]
        chance = [lv.chance for lv in runs[0]["levels"]]
        result = {
            **head,
            "model": label,
            "runs": runs,
            "across_runs": {
                "levels": levels,
                "accuracy": mean_sem_dict(acc),
                "score": mean_sem_dict([r["score"] for r in runs]),
            },
        }
        scores = [r["score"] for r in runs]
    else:
        x = data.reshape(len(data), -1) if not a.embeddings else data
        r = _decode(x, y, tree, nodes, a, rng)
        label = a.label or ("embeddings" if a.embeddings else "pixels")
        result = {**head, **r}
        levels = [lv.level for lv in r["levels"]]
        acc, chance, scores = [[lv.accuracy for lv in r["levels"]]], [lv.chance for lv in r["levels"]], [r["score"]]

    def plot(path):
        plot_hierarchy(
            {label: {"levels": levels, "accuracy": acc, "chance": chance, "score": scores}},
            path,
            title=f"Hierarchy decoding ({source}, chance {a.chance})",
        )

    return finish(result, a, "hierarchy", plot, summary=summary)


def summary(result: dict) -> str:
    """Accuracy per level (chance, majority, each run, mean +- s.e.m. over runs) and ``sum_l log(a_l / c_l)``."""
    runs = result.get("runs") or [result]
    levels = runs[0]["levels"]
    names = [f"seed {r['seed']}" if "seed" in r else "accuracy" for r in runs] if "runs" in result else ["accuracy"]
    across = result.get("across_runs")
    header = ["level", "labels", "chance", "majority", *names, *(["mean +- s.e.m."] if across else [])]
    rows = []
    for i, lv in enumerate(levels):
        cells = [lv["level"], lv["num_labels"], fmt(lv["chance"], 3), fmt(lv["majority"], 3)]
        cells += [fmt(r["levels"][i]["accuracy"], 3) for r in runs]
        if across:
            acc = across["accuracy"]
            cells.append(f"{fmt(acc['mean'][i], 3)} +- {fmt(acc['sem'][i], 3)}")
        rows.append(cells)
    score = (
        f"{fmt(across['score']['mean'], 4)} +- {fmt(across['score']['sem'], 3)} over {len(runs)} runs"
        if across
        else fmt(result["score"], 4)
    )
    what = (
        (f"{result['model']} on " if "model" in result else "")
        + result["source"]
        + (" (shuffled)" if result.get("shuffled") else "")
    )
    return "\n".join(
        [
            f"Hierarchy decoding, {what}: accuracy per level of the class tree ({result['chance']} chance).",
            "",
            markdown_table(header, rows),
            "",
            f"sum over levels of log(accuracy / chance): {score}",
        ]
    )
