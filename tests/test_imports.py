"""The library's core imports stay light: no TensorFlow (DESIGN.md), no torch (optional)."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["gensim_jax.similarity", "gensim_jax.losses", "gensim_jax.kernels"])
def test_core_modules_import_neither_tensorflow_nor_torch(module):
    code = f"import sys, {module}; print('tensorflow' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"], f"{module} pulled in heavy dependencies: {out}"
