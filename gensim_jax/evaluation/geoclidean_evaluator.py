"""The Geoclidean few-shot evaluator (paper Sec. 3.2, Fig. 3C, Appendix M): episodes embedded, scored, tabulated.

What :mod:`gensim_jax.experiments.geoclidean` records for every run and baseline: the episodes of
the 7 held-out concepts, rendered by our sampler (:func:`sampler_episodes`) or read from the
official benchmark (:func:`official_episodes`), embedded by one call per suite
(:func:`embed_episodes`), scored by :func:`~gensim_jax.evaluation.fewshot.fewshot_evaluate` under
one or every threshold rule (:func:`evaluate_suites`, :func:`evaluate_embedding`), the results over
runs (:func:`summarize_runs`) and their Markdown table (:func:`format_table`); the figure is
:func:`gensim_jax.evaluation.figures.plot_geoclidean_summary`.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.evaluation import fewshot
from gensim_jax.evaluation.statistics import mean_std

__all__ = [
    "METRICS",
    "embed_episodes",
    "evaluate_embedding",
    "evaluate_suites",
    "format_table",
    "official_episodes",
    "result_key",
    "sampler_episodes",
    "summarize_runs",
]


METRICS = ("acc_close", "acc_far", "auc_close", "auc_far")


def sampler_episodes(image_size: int, seed: int) -> dict:
    """Few-shot episodes of the 7 held-out concepts rendered by our sampler.

    Returns ``{name: (support (5, S, S, 3), test (15, S, S, 3), kind (15,))}``, uint8 RGB; support
    and in-concept test images are the first and last 5 of 10 concept images, negatives 5 close and
    5 far images (:func:`~gensim_jax.stimuli.geoclidean.dataset.benchmark_images` streams of ``seed``).
    """
    from gensim_jax.stimuli.geoclidean import dataset as geo
    from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS

    out = {}
    for name in TEST_CONCEPTS:
        pos = geo.benchmark_images(name, "concept", n=10, seed=seed, size=image_size)
        close = geo.benchmark_images(name, "close", n=5, seed=seed, size=image_size)
        far = geo.benchmark_images(name, "far", n=5, seed=seed, size=image_size)
        test = np.concatenate([pos[5:], close, far])
        kind = np.array(["in"] * 5 + ["close"] * 5 + ["far"] * 5)
        out[name] = (np.repeat(pos[:5, ..., None], 3, -1), np.repeat(test[..., None], 3, -1), kind)
    return out


def official_episodes(benchmark_dir, image_size: int) -> dict:
    """The official benchmark images of the held-out concepts in ``benchmark_dir``, as :func:`sampler_episodes`."""
    from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS

    loaded = fewshot.load_geoclidean(benchmark_dir, concepts=list(TEST_CONCEPTS), image_size=image_size)
    return {n: (c.train, c.test, np.asarray(c.test_kind)) for n, c in loaded.items()}


def result_key(suite: str, rule: str, rules: tuple) -> str:
    """The key of a suite's result: the suite's name with one rule, ``"<suite>/<rule>"`` with several."""
    return suite if len(rules) == 1 else f"{suite}/{rule}"


def evaluate_suites(embed, suites: dict, rules: tuple) -> dict:
    """``{result_key: means}`` of ``embed(images) -> (N, D)`` on every suite of episodes under every threshold rule
    (one embedding call per suite)."""
    out = {}
    for suite, episodes in suites.items():
        embedded = embed_episodes(embed, episodes)
        for rule in rules:
            res = fewshot.fewshot_evaluate(embedded, threshold=rule)
            out[result_key(suite, rule, rules)] = {k: float(v) for k, v in res.mean.items()}
    return out


def summarize_runs(per_run: list) -> dict:
    """Mean and standard deviation over runs of the close/far accuracies and AUCs (``<metric>_std``), and ``runs``."""
    out = {}
    for m in METRICS:
        out[m], out[m + "_std"] = mean_std([r[m] for r in per_run])
    out["runs"] = len(per_run)
    return out


def embed_episodes(embed, episodes: dict) -> dict:
    """``{name: (support (5, D), test (15, D), kind)}``: ``embed(images) -> (N, D)`` called once on all images."""
    names = list(episodes)
    images = np.concatenate([np.concatenate([episodes[n][0], episodes[n][1]]) for n in names])
    e = embed(images)  # one call: the embedding function is compiled once per model
    embedded, start = {}, 0
    for name in names:
        support, test, kind = episodes[name]
        embedded[name] = (
            e[start : start + len(support)],
            e[start + len(support) : start + len(support) + len(test)],
            kind,
        )
        start += len(support) + len(test)
    return embedded


def evaluate_embedding(embed, episodes: dict, threshold: str) -> dict:
    """``fewshot_evaluate`` of ``embed(images) -> (N, D)`` on ``episodes``; returns the mean dict."""
    res = fewshot.fewshot_evaluate(embed_episodes(embed, episodes), threshold=threshold)
    return {k: float(v) for k, v in res.mean.items()}


def format_table(results: dict) -> str:
    """Objective x held-out accuracy (close, far) and AUC, mean +- std over runs, as Markdown."""
    lines = []
    for suite, rows in results["summary"].items():
        images, _, rule = suite.partition("/")
        rule = rule or results["config"]["eval"]["threshold"]
        lines.append(f"Held-out concepts ({images} images), {rule} threshold:")
        lines.append("| objective | runs | acc close | acc far | AUC close | AUC far |")
        lines.append("|---|---|---|---|---|---|")
        for name, s in rows.items():
            cells = [f"{s[m]:.3f} +- {s[m + '_std']:.3f}" if s["runs"] > 1 else f"{s[m]:.3f}" for m in METRICS]
            lines.append(f"| {name} | {s['runs']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()
