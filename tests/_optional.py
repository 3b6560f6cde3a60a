"""Optional dependencies of the tests: a test that needs one skips, and its reason names the extra.

``make test-latest`` runs the tests on Python >= 3.12 without torch (the one CPU build of torch on the
machines here is for Python 3.11; PyPI's is the CUDA build), so the comparisons against PyTorch
references import it through this module instead of a bare ``import torch``, which would fail the
collection of the whole file.
"""

from __future__ import annotations

import importlib.util

import pytest


def missing(module: str, extra: str) -> str | None:
    """The skip reason for ``module`` (worded as gensim_jax._extras.require's error), or None if installed."""
    if importlib.util.find_spec(module) is not None:
        return None
    return f"{module} is not installed; it comes with pip install 'gensim-jax[{extra}]'"


def importorskip(module: str, extra: str):
    """Import ``module``, or skip the calling test (or module) with a reason naming ``extra``."""
    return pytest.importorskip(module, reason=missing(module, extra))


#: Why a test that compares against PyTorch skips here; None where torch is installed.
TORCH_MISSING = missing("torch", "torch")
HAS_TORCH = TORCH_MISSING is None
#: Marks a test (or the users of a fixture) that needs torch.
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason=TORCH_MISSING or "torch is installed")
