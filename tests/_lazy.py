"""Modules imported on first attribute access, so that collecting a test file costs nothing.

pytest imports every test file in every worker before any test runs; a test file that imports
TensorFlow at the top (through :mod:`gensim_jax.data.augment` or :mod:`gensim_jax.data.imagenet`)
costs each worker about 5 s of CPU even when ``make test-fast`` runs none of its TensorFlow tests.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """``LazyModule("gensim_jax.data.augment").normalize`` imports the module at that first access.

    Collection probes every object of a test module (``__test__``, ``__wrapped__``, ``__bases__``,
    ``_mock_name``); those probes are answered without importing.
    """

    def __init__(self, name: str, attribute: str | None = None):
        self._name, self._attribute = name, attribute

    def __getattr__(self, attr: str):
        if (attr.startswith("__") and attr.endswith("__")) or attr.startswith("_mock"):
            raise AttributeError(attr)
        target = importlib.import_module(self._name)
        if self._attribute is not None:
            target = getattr(target, self._attribute)
        return getattr(target, attr)
