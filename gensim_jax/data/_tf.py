"""Import TensorFlow once, with every GPU hidden from it (JAX owns the accelerators).

Only modules of :mod:`gensim_jax.data` that need TensorFlow import this one, and
:mod:`gensim_jax.data` itself loads them lazily, so ``import gensim_jax.data`` stays cheap.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gensim_jax._extras import require  # noqa: E402
from gensim_jax._quiet import filtered_native_stderr  # noqa: E402

with filtered_native_stderr():  # TensorFlow's oneDNN notice ignores TF_CPP_MIN_LOG_LEVEL (absl logging)
    tf = require("tensorflow", "data")

try:
    tf.config.set_visible_devices([], "GPU")
except RuntimeError:  # devices were already initialised by an earlier TF user in this process
    pass

__all__ = ["tf"]
