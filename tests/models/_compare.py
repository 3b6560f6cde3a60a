"""Shared helpers for the encoder equivalence tests (PyTorch reference vs Flax import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import numpy as np

if TYPE_CHECKING:
    import torch

RTOL = 1e-4


def nchw_to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def assert_close_relative(actual, expected, rtol: float = RTOL, what: str = "") -> float:
    """``max|actual - expected| <= rtol * max|expected|`` (relative to the output's scale).

    Element-wise relative error is meaningless for logits that happen to be near zero, so the
    tolerance is taken relative to the largest magnitude of the reference output. Returns the
    achieved relative error.
    """
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    scale = np.max(np.abs(expected))
    assert scale > 1e-3, f"{what}: reference output is degenerate (max |.| = {scale})"
    err = float(np.max(np.abs(actual - expected)) / scale)
    assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol}"
    return err


def torch_outputs(model: torch.nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logits, embedding) of a reference model with ``embed`` and a final linear layer."""
    import torch  # here, not at the top: the torch-free tests of tests/models import this module too

    head = model.fc if hasattr(model, "fc") else model.decoder.linear
    with torch.no_grad():
        emb = model.embed(torch.from_numpy(x))
        logits = head(emb)
    return logits.numpy(), emb.numpy()


def flax_outputs(model, variables, x_nhwc: np.ndarray, train: bool = False):
    with jax.default_matmul_precision("highest"):
        return jax.jit(lambda v, x: model.apply(v, x, train=train))(variables, x_nhwc)


def random_variables(model, seed: int = 0, batch_size: int = 1, example=None):
    """Random, non-trivial variables of ``model`` drawn with numpy (fan-in scaled kernels, random
    biases and BatchNorm statistics). Avoids ``model.init``, whose threefry random-number kernels take
    seconds to compile per parameter shape on a CPU; ``model.init`` itself is tested separately."""
    from flax import traverse_util

    if example is None:
        example = model.example_input(batch_size, minimal=True)
    template = jax.eval_shape(lambda: model.init(jax.random.key(0), example))
    rng = np.random.default_rng(seed)
    out = {}
    for key, spec in traverse_util.flatten_dict(template).items():
        leaf, shape = key[-1], spec.shape
        if leaf == "kernel":
            v = rng.standard_normal(shape) / np.sqrt(np.prod(shape[:-1]))
        elif leaf == "scale":
            v = 1.0 + 0.1 * rng.standard_normal(shape)
        elif leaf in ("bias", "mean"):
            v = 0.1 * rng.standard_normal(shape)
        elif leaf == "var":
            v = rng.uniform(0.5, 1.5, shape)
        else:
            raise AssertionError(f"unexpected variable {key}")
        out[key] = np.asarray(v, dtype=spec.dtype)
    return traverse_util.unflatten_dict(out)
