"""Tiny deterministic problems shared by the training tests (and the SIGTERM subprocess)."""

from __future__ import annotations

import sys

import numpy as np
import optax

from gensim_jax.models import get_model
from gensim_jax.training import CrossEntropy, create_train_state

IN, CLASSES = 6, 3


def tiny_model(batchnorm: bool = False, **kw):
    """MLP 6 -> 16 -> 4 with a 3-way classifier and an optional BatchNorm projection head."""
    kw.setdefault("num_classes", CLASSES)
    if batchnorm:
        kw.setdefault("projection_dims", (8, 3))
        kw.setdefault("projection_batchnorm", True)
    kw.setdefault("hidden", 16)
    kw.setdefault("embed_dim", 4)
    return get_model("mlp", in_features=IN, **kw)


def tiny_batch(rng: np.random.Generator, b: int = 8) -> dict:
    """Every key any objective reads, for ``b`` examples (labels: each class at least twice when b >= 6)."""
    f = lambda: rng.normal(size=(b, IN)).astype(np.float32)  # noqa: E731
    labels = np.resize(np.arange(CLASSES), b)
    rng.shuffle(labels)
    return {
        "x": f(),
        "image": f(),
        "view1": f(),
        "view2": f(),
        "anchor": f(),
        "positive": f(),
        "negative": f(),
        "features": (rng.random((b, 5)) > 0.5).astype(np.float32),
        "label": labels.astype(np.int32),
    }


def stream(seed: int, b: int = 8):
    """``position -> iterator``: batch ``i`` depends only on ``(seed, i)``, so a resumed stream is exact."""

    def batches(position: int):
        i = position
        while True:
            yield tiny_batch(np.random.default_rng((seed, i)), b)
            i += 1

    return batches


def tiny_state(seed: int = 0, lr: float = 0.05, **kw):
    return create_train_state(tiny_model(**kw), optax.adam(lr), seed)


if __name__ == "__main__":  # used by the SIGTERM test: python -m tests.training._tiny WORKDIR STEPS SLEEP
    import time

    from gensim_jax.training import train

    workdir, steps, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    inner = stream(1)

    def slow(position):
        for k, b in enumerate(inner(position)):
            if k == 2:
                print("READY", flush=True)
            time.sleep(pause)
            yield b

    res = train(
        tiny_state(),
        CrossEntropy(input_key="x"),
        slow,
        num_steps=steps,
        log_every=1,
        workdir=workdir,
        checkpoint_every=1000,
        progress=False,
        config={"name": "tiny"},
        seed=0,
    )
    print("DONE", int(res.state.step), flush=True)
