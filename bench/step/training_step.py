"""Training-step throughput (images/s): CORnet-S, CORnet-Z and ResNet-50, ours (Flax + optax) vs PyTorch.

Ours: the Flax model from :mod:`gensim_jax.models`, ``optax.adam(1e-3)``, and the library's own
jitted step :func:`gensim_jax.training.make_train_step` (state donated) with the
:class:`~gensim_jax.training.objectives.CrossEntropy` objective on the 1000-way logits (BatchNorm in
train mode, its statistics updated), float32, NHWC input, compiled on the CPU with
:data:`gensim_jax.training.step.CPU_EIGEN_CONV_OPTIONS` (convolutions through XLA's Eigen path
rather than YNNPACK; measured 0.85x the step time, docs/PERFORMANCE.md).  Each timed call is one full step on a
fixed batch, waited for with ``jax.block_until_ready`` on the new state.

Reference: the same architectures in PyTorch (:mod:`tests.reference.torch_models`, the definitions the model
equivalence tests use), ``torch.optim.Adam(lr=1e-3)``, ``model.train()``,
``zero_grad(set_to_none=True)``, ``F.cross_entropy(model(x), y)``, ``backward()``, ``step()``,
float32, NCHW input, timed under ``torch.set_num_threads`` 2 and 1 (the faster counts).

The two alternate in one process (:func:`bench._harness.compare`); the first (compiling) call of ours
is reported as ``compile_s`` and the first PyTorch step as ``reference_first_s``; both are excluded
and serve as the warm-up (no further warm-up steps: one step costs seconds).
``ratio = ours_s / reference_s`` (seconds per step, lower is
better for ours); ``images_per_s = batch / seconds``.

Sizes: the default suite runs ResNet-50 at batch 32 and CORnet-S at batch 8, 64 x 64 (2 timed steps
of each, alternated, PyTorch under 2 and 1 threads), and CORnet-Z at 48 x 48, batch 32 (the
quadrilaterals demo's step; 10 timed steps: one takes a tenth of a second); ``--full`` adds 224 x 224 (2 timed steps; one step of either model takes
minutes on the shared 2-core machine).
``--quick`` runs tiny variants (``stage_sizes=(1, 1, 1, 1)`` ResNet-50, ``times=(1, 1, 1)``
CORnet-S, 32 x 32, batch 4) for the smoke test.

Usage: python -m bench.step.training_step [--full] [--quick] [--models resnet50 cornet_s]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bench._harness import TORCH_THREADS, block, compare, emit, record, setup_torch
from gensim_jax.models import get_model
from gensim_jax.training import create_train_state, make_train_step
from gensim_jax.training.objectives import CrossEntropy
from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS

NUM_CLASSES = 1000
LR = 1e-3
MODELS = ("resnet50", "cornet_s", "cornet_z")


def _torch_model(name: str, quick: bool):
    from tests.reference import torch_models as tm

    if name == "resnet50":
        if quick:
            return tm.TVResNet(tm.TVBottleneck, (1, 1, 1, 1), NUM_CLASSES)
        return tm.tv_resnet(50, NUM_CLASSES)
    if name == "cornet_z":
        return tm.RefCORnetZ()
    if name == "cornet_s":
        m = tm.RefCORnetS()
        if quick:
            m.V2, m.V4, m.IT = tm.RefBlockS(64, 128, 1), tm.RefBlockS(128, 256, 1), tm.RefBlockS(256, 512, 1)
        return m
    raise ValueError(f"model must be one of {MODELS}, got {name!r}")


def _flax_model(name: str, quick: bool, dtype=None):
    kw = {"num_classes": NUM_CLASSES, "dtype": dtype}
    if quick and name != "cornet_z":  # CORnet-Z (2M parameters) has no smaller variant
        kw.update({"stage_sizes": (1, 1, 1, 1)} if name == "resnet50" else {"times": (1, 1, 1)})
    return get_model(name, **kw)


def _compiler_options():
    """:data:`CPU_EIGEN_CONV_OPTIONS` on the CPU backend (measured faster; docs/PERFORMANCE.md), else none."""
    return CPU_EIGEN_CONV_OPTIONS if jax.default_backend() == "cpu" else None


def _batch(batch: int, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    y = rng.integers(0, NUM_CLASSES, size=batch)
    return x, y


class _OursStep:
    """Holds the (donated, replaced every call) train state of our jitted step."""

    def __init__(self, name: str, size: int, x: np.ndarray, y: np.ndarray, quick: bool, dtype=None):
        model = _flax_model(name, quick, dtype)
        self.state = create_train_state(
            model, optax.adam(LR), 0, example_input=jnp.zeros((1, size, size, 3), jnp.float32)
        )
        self.step = make_train_step(CrossEntropy(), compiler_options=_compiler_options())
        self.batch = {"image": jnp.asarray(x), "label": jnp.asarray(y, jnp.int32)}
        self.losses: list[float] = []

    def __call__(self):
        self.state, metrics = self.step(self.state, self.batch)
        block(self.state)
        self.losses.append(float(metrics["loss"]))


class _TorchStep:
    def __init__(self, name: str, x: np.ndarray, y: np.ndarray, quick: bool):
        torch = setup_torch()
        torch.manual_seed(0)
        self.torch = torch
        self.model = _torch_model(name, quick).train()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.x = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        self.y = torch.from_numpy(y.astype(np.int64))
        self.losses: list[float] = []

    def __call__(self):
        self.opt.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        self.losses.append(float(loss.detach()))


def case(
    name: str, size: int, batch: int = 32, repeats: int = 3, quick: bool = False, torch_threads=TORCH_THREADS
) -> dict:
    """One training-step comparison; returns the JSON line (see the module docstring)."""
    x, y = _batch(batch, size)
    ours = _OursStep(name, size, x, y, quick)
    ref = _TorchStep(name, x, y, quick)
    t0 = time.perf_counter()
    ours()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref()
    ref_first_s = time.perf_counter() - t0
    # the first calls above are the warm-up of both (no further warm-up: a step costs seconds)
    t = compare(ours, ref, repeats=repeats, warmup=0, compile_s=compile_s, torch_threads=torch_threads)
    n_params = sum(int(np.prod(p.shape)) for p in jax.tree.leaves(ours.state.params))
    line = record(
        f"train_step_{name}",
        {
            "model": name,
            "size": size,
            "batch": batch,
            "objective": "CrossEntropy",
            "optimizer": "adam",
            "dtype": "float32",
            "xla_options": "eigen_conv" if _compiler_options() else "default",
            **({"variant": "tiny"} if quick else {}),
        },
        t,
        f"torch {ref.torch.__version__}: same architecture (tests/reference/torch_models.py), Adam, "
        "cross_entropy + backward + step, NCHW",
        1.0,
        images_per_s=round(batch / t["ours_s"], 2),
        reference_images_per_s=round(batch / t["reference_s"], 2),
        reference_first_s=round(ref_first_s, 3),
        n_params=n_params,
    )
    # both losses start near log(1000) and stay finite (a by-product check, bounded by the smoke test)
    line["first_loss_ours"] = round(ours.losses[0], 4)
    line["first_loss_reference"] = round(ref.losses[0], 4)
    line["all_finite"] = bool(np.all(np.isfinite(ours.losses + ref.losses)))
    return line


#: The default suite's cases, sized so that ``make bench`` stays near 5 minutes on 2 cores: CORnet-S
#: at batch 32 alone takes ~6 minutes there (its 2 x 2 top-area convolutions are slow on XLA:CPU),
#: so the default times it at batch 8; ``--full`` runs the issue's matrix, batch 32 at 64 and 224.
#: CORnet-Z at 48 px and batch 32 is the quadrilaterals demo's step (issue 41's row).
DEFAULT_CASES = (("resnet50", 64, 32), ("cornet_s", 64, 8), ("cornet_z", 48, 32))


def run(quick: bool = False, full: bool = False) -> list[dict]:
    if quick:
        return [case(m, 32, batch=4, repeats=1, quick=True, torch_threads=(1,)) for m in MODELS]
    if not full:
        return [case(m, size, batch=b, repeats=10 if m == "cornet_z" else 2) for m, size, b in DEFAULT_CASES]
    return [case(m, size, batch=32, repeats=2) for size in (64, 224) for m in MODELS]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="add the 224 x 224 cases")
    ap.add_argument("--quick", action="store_true", help="tiny models (smoke run)")
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--sizes", nargs="+", type=int, help="image sizes (default 64, and 224 with --full)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int)
    args = ap.parse_args(argv)
    if args.quick:
        for m in args.models:
            emit(case(m, 32, batch=4, repeats=1, quick=True, torch_threads=(1,)))
        return
    sizes = args.sizes or ([64, 224] if args.full else [64])
    for size in sizes:
        for m in args.models:
            reps = args.repeats or 2
            emit(case(m, size, batch=args.batch, repeats=reps))


if __name__ == "__main__":
    main()
