"""Accelerator throughput of GenSim training on ResNet-50: images/s and model FLOP utilisation.

The production path of issue 8 on one accelerator: the library's jitted step
(:func:`gensim_jax.training.make_train_step`, train state donated) on
:class:`~gensim_jax.training.objectives.GenSimRegression` (paper Eq. 2; cosine similarity of the
embeddings regressed onto the quadrilateral Beta-Bernoulli limit kernel ``-||f_i - f_j||^2`` of
the 22 binary features, paper Eq. I10), ``optax.adam``, bfloat16 compute with float32 parameters
(``--dtype``), and input batches put on the device ``--prefetch`` steps ahead
(:func:`prefetch_to_device`) so that the host-to-device copy of batch ``t + 1`` overlaps step ``t``.

Inputs (``--input``): ``synthetic`` cycles through a few random host batches (measures the step
alone); ``quadrilaterals`` renders real stimuli on the host while the device trains
(:func:`gensim_jax.stimuli.quadrilaterals.training_batches`, grayscale expanded to 3 channels on
the device), which measures whether the host keeps up.

Reported (one JSON line): compile seconds (excluded), step seconds (the mean over ``--steps``
asynchronously dispatched steps after ``--warmup``), images/s, the step's FLOPs per image as counted
by XLA's cost analysis of the
compiled step (forward + backward + optimizer), achieved TFLOP/s = FLOPs per image x images/s,
and, with ``--peak-tflops`` (the chip's dense peak for the compute dtype, e.g. 989 for an H100
SXM in bfloat16), the model FLOP utilisation ``achieved / peak``.

Usage::

    python -m bench.step.gpu_throughput --batch 256 --size 224 --peak-tflops 989          # on a GPU
    python -m bench.step.gpu_throughput --input quadrilaterals --batch 256 --size 224
    python -m bench.step.gpu_throughput --tiny --batch 4 --size 32 --steps 2               # CPU smoke run

``--tiny`` uses a one-block-per-stage ResNet-50 (``stage_sizes=(1, 1, 1, 1)``) for CPU smoke runs;
``--model`` picks another registered encoder (the smoke test uses ``lenet5`` at 32 x 32, whose
step compiles in seconds).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import time
from typing import Iterable, Iterator, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gensim_jax.models import get_model
from gensim_jax.training import create_train_state, make_train_step
from gensim_jax.training.objectives import BetaBernoulliTarget, GenSimRegression
from gensim_jax.training.step import train_step

N_FEATURES = 22  # quadrilateral features (paper Appendix L)


def prefetch_to_device(batches: Iterable[dict], size: int = 2, device=None) -> Iterator[dict]:
    """Yield the batches of ``batches`` as device arrays, ``size`` batches ahead of the consumer.

    ``jax.device_put`` is asynchronous: keeping ``size`` transfers in flight lets the copy of the
    next batches overlap the running step.  ``size >= 1``; ``device`` defaults to the first device.

    Example:
      >>> it = prefetch_to_device(iter([{"x": np.ones(2)}] * 3), size=2)
      >>> [type(b["x"]).__name__ for b in it]
      ['ArrayImpl', 'ArrayImpl', 'ArrayImpl']
    """
    if size < 1:
        raise ValueError(f"prefetch size must be >= 1, got {size}")
    device = jax.devices()[0] if device is None else device
    queue: collections.deque = collections.deque()
    batches = iter(batches)

    def enqueue(n):
        for b in itertools.islice(batches, n):
            queue.append(jax.device_put(b, device))

    enqueue(size)
    while queue:
        yield queue.popleft()
        enqueue(1)


def synthetic_batches(batch: int, size: int, seed: int = 0, distinct: int = 4) -> Iterator[dict]:
    """Endless cycle over ``distinct`` random host batches ``{"image": (B, size, size, 3) float32,
    "features": (B, 22) uint8}`` (fresh host arrays are not generated per step: this measures the step)."""
    rng = np.random.default_rng(seed)
    pool = [
        {
            "image": rng.standard_normal((batch, size, size, 3)).astype(np.float32),
            "features": (rng.random((batch, N_FEATURES)) < 0.5).astype(np.uint8),
        }
        for _ in range(distinct)
    ]
    return itertools.cycle(pool)


def quadrilateral_batches(batch: int, size: int, seed: int = 0) -> Iterator[dict]:
    """Real stimuli rendered on the host: ``{"image": (B, size, size) uint8, "features": (B, 22) uint8}``."""
    from gensim_jax.stimuli import quadrilaterals

    for b in quadrilaterals.training_batches(seed, batch, size=size):
        yield {
            "image": np.round(np.asarray(b["image"]) * 255.0).astype(np.uint8),
            "features": np.asarray(b["features"], np.uint8),
        }


@jax.jit
def _to_model_input(batch: dict) -> dict:
    """On the device: uint8 grayscale ``(B, H, W)`` -> float32 ``(B, H, W, 3)`` in [0, 1]."""
    img = batch["image"]
    if img.ndim == 3:
        img = jnp.repeat(img[..., None], 3, axis=-1)
    if img.dtype == jnp.uint8:
        img = img.astype(jnp.float32) / 255.0
    return {"image": img, "features": batch["features"]}


def objective() -> GenSimRegression:
    """GenSim with the quadrilateral kernel (Beta-Bernoulli limit, paper Eq. I10) as the target."""
    return GenSimRegression(
        target=BetaBernoulliTarget(limit=True, key="features"), output="embedding", similarity="cosine"
    )


def step_flops(state, batch: dict, obj) -> Optional[float]:
    """FLOPs of one training step: the compiler's cost analysis, never below the HLO count of dots and
    convolutions (:func:`gensim_jax.training.timing.compiled_flops`; None if unavailable)."""
    from gensim_jax.training.timing import compiled_flops

    return compiled_flops(jax.jit(lambda s, b: train_step(s, b, obj)), state, batch)


def measure(
    batch: int = 256,
    size: int = 224,
    steps: int = 20,
    warmup: int = 3,
    dtype: str = "bfloat16",
    input_kind: str = "synthetic",
    prefetch: int = 2,
    peak_tflops: Optional[float] = None,
    tiny: bool = False,
    lr: float = 1e-3,
    seed: int = 0,
    model_name: str = "resnet50",
) -> dict:
    """Run the benchmark and return its JSON-able result (see the module docstring)."""
    if batch < 2:
        raise ValueError(f"batch must be >= 2 (GenSim needs pairs), got {batch}")
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    if input_kind not in ("synthetic", "quadrilaterals"):
        raise ValueError(f"input must be 'synthetic' or 'quadrilaterals', got {input_kind!r}")
    compute = {"bfloat16": jnp.bfloat16, "float32": jnp.float32}[dtype]
    kw = {"num_classes": None, "dtype": compute}
    if tiny:
        if not model_name.startswith("resnet"):
            raise ValueError(f"--tiny applies to ResNets only, got model {model_name!r}")
        kw["stage_sizes"] = (1, 1, 1, 1)
    model = get_model(model_name, **kw)
    state = create_train_state(model, optax.adam(lr), seed, example_input=jnp.zeros((1, size, size, 3), jnp.float32))
    obj = objective()
    step = make_train_step(obj)  # jitted, state donated

    host = (
        synthetic_batches(batch, size, seed) if input_kind == "synthetic" else quadrilateral_batches(batch, size, seed)
    )
    stream = (_to_model_input(b) for b in prefetch_to_device(host, prefetch))

    first = next(stream)
    flops = step_flops(state, first, obj)
    t0 = time.perf_counter()
    state, metrics = step(state, first)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t0
    for _ in range(warmup):
        state, metrics = step(state, next(stream))
    jax.block_until_ready(state)
    # Steady state: steps are dispatched asynchronously, as in a training loop (the next batch's
    # transfer and the next dispatch overlap the running step); the whole run is timed.
    t_all = time.perf_counter()
    for _ in range(steps):
        state, metrics = step(state, next(stream))
    jax.block_until_ready(state)
    total_s = time.perf_counter() - t_all
    step_s = total_s / steps
    ips = batch / step_s
    out = {
        "bench": f"gpu_throughput_{model_name}_gensim",
        "model": model_name,
        "device": str(jax.devices()[0].device_kind),
        "backend": jax.default_backend(),
        "batch": batch,
        "size": size,
        "dtype": dtype,
        "input": input_kind,
        "prefetch": prefetch,
        "tiny": tiny,
        "steps": steps,
        "warmup": warmup,
        "compile_s": round(compile_s, 3),
        "step_s": float(f"{step_s:.4g}"),
        "images_per_s": round(ips, 2),
        "loss": float(metrics["loss"]),
        "loss_finite": bool(np.isfinite(float(metrics["loss"]))),
    }
    if flops is not None:
        per_image = flops / batch
        out["step_flops"] = float(f"{flops:.4g}")
        out["flops_per_image"] = float(f"{per_image:.4g}")
        out["achieved_tflops"] = float(f"{per_image * ips / 1e12:.4g}")
        if peak_tflops:
            out["peak_tflops"] = peak_tflops
            out["mfu"] = float(f"{per_image * ips / 1e12 / peak_tflops:.4g}")
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    ap.add_argument("--input", choices=("synthetic", "quadrilaterals"), default="synthetic")
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument(
        "--peak-tflops", type=float, default=None, help="the chip's dense peak TFLOP/s for --dtype (reports MFU)"
    )
    ap.add_argument("--tiny", action="store_true", help="one block per stage (CPU smoke runs)")
    ap.add_argument(
        "--model", default="resnet50", help="registered encoder (resnet50; a small one such as lenet5 for smoke tests)"
    )
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    out = measure(
        batch=a.batch,
        size=a.size,
        steps=a.steps,
        warmup=a.warmup,
        dtype=a.dtype,
        input_kind=a.input,
        prefetch=a.prefetch,
        peak_tflops=a.peak_tflops,
        tiny=a.tiny,
        seed=a.seed,
        model_name=a.model,
    )
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
