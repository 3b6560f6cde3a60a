"""``python -m eval geoclidean``: Geoclidean few-shot protocol on the official images (paper Sec. 3.2).

``--root DIR`` is the benchmark directory (``elements/`` and ``constraints/``). The embedding is a
model (``--model NAME`` from :func:`gensim_jax.models.get_model`, with ``--checkpoint`` a PyTorch
``.pth``/``.safetensors`` file read by :func:`gensim_jax.models.load_pretrained`, images resized to
``--image-size`` and ImageNet-normalised) or the model-free baseline ``--model pixels`` (grey-scale
pixels average-pooled to 32 x 32). Concepts: ``--concepts test`` (the paper's 7 held-out), ``all``
(37), or a comma-separated list.
"""

from __future__ import annotations

import argparse

from eval._common import emit
from gensim_jax.evaluation import fewshot
from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS


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
    p = argparse.ArgumentParser(prog="python -m eval geoclidean", description=__doc__)
    p.add_argument("--root", required=True, help="Geoclidean benchmark directory")
    p.add_argument("--concepts", default="test", help="'test' (7 held-out), 'all' (37) or name,name,...")
    p.add_argument("--model", default="pixels", help="'pixels' or a registered model name")
    p.add_argument("--checkpoint", default=None, help="PyTorch weights for --model")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threshold", choices=("per_concept", "global", "both"), default="both")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)

    names = (list(TEST_CONCEPTS) if a.concepts == "test" else None if a.concepts == "all"
             else a.concepts.split(","))
    if a.model == "pixels":
        concepts = fewshot.load_geoclidean(a.root, names)
        embed = lambda x: fewshot.pixel_embedding(x, 32)  # noqa: E731
    else:
        concepts = fewshot.load_geoclidean(a.root, names, image_size=a.image_size)
        embed = _model_embedder(a.model, a.checkpoint, a.image_size, a.batch_size)
    embedded = fewshot.embed_concepts(concepts, embed)
    rules = ("per_concept", "global") if a.threshold == "both" else (a.threshold,)
    weights = ("none (model-free)" if a.model == "pixels" else a.checkpoint
               or "random initialisation (no --checkpoint given)")
    result = {"model": a.model, "weights": weights, "concepts": list(concepts)}
    for rule in rules:
        r = fewshot.fewshot_evaluate(embedded, rule)
        result[rule] = {"mean": r.mean, "per_concept": r.per_concept}
    emit(result, a.out)
    return 0
