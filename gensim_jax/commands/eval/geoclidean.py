"""``python -m eval geoclidean``: Geoclidean few-shot protocol on the official images (paper Sec. 3.2, Fig. 3C).

``--root DIR`` is the benchmark directory (``elements/`` and ``constraints/``). The embedding is

* ``--export DIR [DIR ...]``: trained encoders exported by
  :func:`gensim_jax.training.export.export_variables`, one directory per training run; images
  are read at each export's ``image_size`` and normalised as its ``preprocess`` says. The JSON
  has one entry per run and the mean and s.e.m. over runs;
* ``--model NAME`` from :func:`gensim_jax.models.get_model` (``--checkpoint`` a PyTorch
  ``.pth``/``.safetensors`` file read by :func:`gensim_jax.models.load_pretrained`, images resized
  to ``--image-size`` and ImageNet-normalised);
* ``--model pixels`` (default): the model-free baseline, grey-scale pixels average-pooled to 32 x 32.

Concepts: ``--concepts test`` (the paper's 7 held-out), ``all`` (37), or a comma-separated list.
``--workdir DIR`` writes ``geoclidean.json`` and ``geoclidean.png`` (Fig. 3C style: close/far
accuracy, per-concept threshold rule, s.e.m. over runs; ``--human-close``/``--human-far`` add the
human line; the paper does not print those values). Printed: close/far accuracy and AUC per threshold
rule as Markdown tables (:func:`gensim_jax.evaluation.geoclidean.format_table`, mean +- standard
deviation over runs); ``--json`` prints the full JSON instead.
"""

from __future__ import annotations

import argparse

from gensim_jax.commands.eval._output import add_output_arguments, finish, prog, typed
from gensim_jax.evaluation import geoclidean as geo
from gensim_jax.evaluation.embed import load_encoders, model_label, run_info
from gensim_jax.evaluation.statistics import mean_sem_dict
from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS

_KEYS = ("acc_close", "acc_far", "auc_close", "auc_far", "acc")


def _model_embedder(name: str, checkpoint: str | None, image_size: int, batch_size: int):
    import jax

    from gensim_jax.evaluation.embed import embed_images
    from gensim_jax.models import get_model, load_pretrained, normalize_imagenet

    if checkpoint:
        model, variables = load_pretrained(name, checkpoint)
    else:
        model = get_model(name)
        variables = model.init(jax.random.key(0), model.example_input(minimal=True))
    return lambda x: embed_images(model, variables, normalize_imagenet(x), batch_size)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("geoclidean"), description=typed(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--root", required=True, help="Geoclidean benchmark directory")
    p.add_argument("--concepts", default="test", help="'test' (7 held-out), 'all' (37) or name,name,...")
    p.add_argument(
        "--export",
        nargs="+",
        default=None,
        metavar="DIR",
        help="export directories of trained encoders, one per training run",
    )
    p.add_argument("--model", default="pixels", help="'pixels' or a registered model name (without --export)")
    p.add_argument("--checkpoint", default=None, help="PyTorch weights for --model")
    p.add_argument("--image-size", type=int, default=224, help="input size for --model (exports carry their own)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument(
        "--threshold",
        choices=(*geo.THRESHOLD_RULES, "both", "all"),
        default="all",
        help="threshold rule(s): 'both' = per_concept and global, 'all' (default) = every rule",
    )
    p.add_argument("--label", default=None, help="model name in the figure (default: from the export/--model)")
    p.add_argument("--human-close", type=float, default=None, help="human accuracy, close task (figure line)")
    p.add_argument("--human-far", type=float, default=None, help="human accuracy, far task (figure line)")
    add_output_arguments(p)
    a = p.parse_args(argv)
    if a.export and (a.checkpoint or a.model != "pixels"):
        p.error("--export replaces --model/--checkpoint; give one or the other")

    names = list(TEST_CONCEPTS) if a.concepts == "test" else None if a.concepts == "all" else a.concepts.split(",")
    rules = {"both": ("per_concept", "global"), "all": geo.THRESHOLD_RULES}.get(a.threshold, (a.threshold,))
    fig_rule = rules[0]
    if a.export:
        encoders = load_encoders(a.export)
        cache: dict = {}
        runs = []
        for enc in encoders:
            key = enc.image_size
            if key not in cache:
                cache[key] = geo.load_geoclidean(a.root, names, image_size=enc.image_size)
            concepts = cache[key]
            embedded = geo.embed_episodes(lambda x, enc=enc: enc(x, a.batch_size), geo.concept_episodes(concepts))
            runs.append({**run_info(enc), **geo.evaluate_rules(embedded, rules)})
        label = model_label(a.label, encoders)
        result = {
            "model": label,
            "weights": "exports",
            "concepts": list(concepts),
            "runs": runs,
            "across_runs": {
                rule: {k: mean_sem_dict([r[rule]["mean"][k] for r in runs]) for k in _KEYS} for rule in rules
            },
        }
        per_run = {t: [r[fig_rule]["mean"][f"acc_{t}"] for r in runs] for t in ("close", "far")}
    else:
        if a.model == "pixels":
            concepts = geo.load_geoclidean(a.root, names)
            embed = lambda x: geo.pixel_embedding(x, 32)  # noqa: E731
        else:
            concepts = geo.load_geoclidean(a.root, names, image_size=a.image_size)
            embed = _model_embedder(a.model, a.checkpoint, a.image_size, a.batch_size)
        # pixels: per concept (no copy of all 360 x 360 images); a model: one call, one compilation
        embedded = (
            geo.embed_concepts(concepts, embed)
            if a.model == "pixels"
            else geo.embed_episodes(embed, geo.concept_episodes(concepts))
        )
        weights = (
            "none (model-free)"
            if a.model == "pixels"
            else a.checkpoint or "random initialisation (no --checkpoint given)"
        )
        label = a.label or a.model
        result = {
            "model": label,
            "weights": weights,
            "concepts": list(concepts),
            **geo.evaluate_rules(embedded, rules),
        }
        per_run = {t: [result[fig_rule]["mean"][f"acc_{t}"]] for t in ("close", "far")}

    human = {k: v for k, v in (("close", a.human_close), ("far", a.human_far)) if v is not None} or None

    def plot(path):
        geo.plot_geoclidean(
            {label: per_run},
            path,
            human=human,
            title=f"Geoclidean few-shot, {len(result['concepts'])} concepts, {fig_rule} threshold",
        )

    return finish(result, a, "geoclidean", plot, summary=summary)


def summary(result: dict) -> str:
    """:func:`gensim_jax.evaluation.geoclidean.format_table` of the JSON ``result``: one table per threshold rule."""
    runs = result.get("runs") or [result]
    rules = [k for k in runs[0] if isinstance(runs[0][k], dict) and "mean" in runs[0][k]]
    table = {
        "summary": {
            f"Geoclidean/{rule}": {result["model"]: geo.summarize_runs([r[rule]["mean"] for r in runs])}
            for rule in rules
        },
        "config": {"eval": {"threshold": rules[0] if rules else ""}},
    }
    head = f"Geoclidean few-shot, {len(result['concepts'])} concepts, {result['model']} (weights: {result['weights']})"
    return head + ":\n\n" + geo.format_table(table)
