"""``embed_images`` called again with an equal model: each call's seconds, the first (trace and compile)
against the next ones (the compiled embedding reused).

Usage: python -m bench.functions.embed_calls [--model resnet50] [--size 224] [--images 8] [--calls 3]

Each call builds the model anew (``get_model``), as a script that embeds several image sets does; one
JSON line with the seconds of every call.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from gensim_jax.evaluation.embed import embed_images
from gensim_jax.models import get_model


def calls(model: str = "resnet50", size: int = 224, images: int = 8, num_calls: int = 3) -> dict:
    m = get_model(model, num_classes=None)
    x = np.random.default_rng(0).random((images, size, size, 3)).astype(np.float32)
    variables = jax.jit(m.init)(jax.random.key(0), x[:1])
    seconds = []
    for _ in range(num_calls):
        t0 = time.perf_counter()
        embed_images(get_model(model, num_classes=None), variables, x, batch_size=images)
        seconds.append(time.perf_counter() - t0)
    return {"bench": "embed_calls", "model": model, "size": size, "images": images, "seconds": seconds}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--calls", type=int, default=3)
    a = p.parse_args(argv)
    print(json.dumps(calls(a.model, a.size, a.images, a.calls)))


if __name__ == "__main__":
    main()
