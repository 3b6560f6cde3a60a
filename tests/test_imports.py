"""The library's core imports stay light: jax, numpy and scipy only (DESIGN.md; pyproject's extras)."""

import json
import subprocess
import sys

import pytest

#: top-level modules of the extras (pyproject.toml [project.optional-dependencies]) and of the tests
EXTRA_MODULES = (
    "flax",
    "optax",
    "orbax",
    "chex",
    "tensorflow",
    "tensorflow_datasets",
    "torch",
    "safetensors",
    "matplotlib",
    "sklearn",
    "PIL",
    "tqdm",
    "tensorboardX",
    "nltk",
    "hypothesis",
)


CORE = (
    "gensim_jax",
    "gensim_jax.similarity",
    "gensim_jax.losses",
    "gensim_jax.kernels",
    "gensim_jax.stimuli.quadrilaterals",
    "gensim_jax.stimuli.gaussian_mixture",
    "gensim_jax.stimuli.geoclidean.dataset",
    "gensim_jax.data",
    "gensim_jax.evaluation",
)


@pytest.mark.slow
def test_core_modules_import_no_extra():
    # one fresh interpreter per module would cost ~5 s each on a loaded 2-core machine: import them in turn
    # and record which extras' modules each one added
    code = f"""
import importlib, json, sys
seen = {{}}
for name in {CORE!r}:
    importlib.import_module(name)
    seen[name] = sorted(m for m in {EXTRA_MODULES!r} if m in sys.modules)
print(json.dumps(seen))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    seen = json.loads(out)
    assert list(seen) == list(CORE)
    assert all(v == [] for v in seen.values()), f"core modules pulled in the extras' modules: {seen}"
