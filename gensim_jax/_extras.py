"""Optional dependencies: import one, or say which ``pip install 'gensim-jax[EXTRA]'`` brings it.

``pip install gensim-jax`` installs the core only (jax, numpy, scipy): similarities, losses, kernels,
stimuli and the evaluation protocols. The extras (see pyproject.toml and the README's Install section):

* ``models``: flax (:mod:`gensim_jax.models`);
* ``train``: ``models`` + ``eval`` + optax, orbax-checkpoint, tqdm, tensorboardX (:mod:`gensim_jax.training`:
  a run evaluates its encoder and draws its figures, so training needs what ``eval`` brings);
* ``data``: tensorflow-cpu, tensorflow-datasets (the tf.data parts of :mod:`gensim_jax.data`);
* ``eval``: scikit-learn, matplotlib, pillow (decoding, figures, reading benchmark PNGs);
* ``torch``: torch, safetensors (reading PyTorch checkpoints);
* ``wordnet``: nltk (rebuilding the ImageNet-1k hierarchy from WordNet);
* ``tpu``: the libtpu that matches the installed jax; ``all``: every extra but ``tpu`` and ``docs``;
* ``docs``: sphinx, myst-parser, furo, build, twine (``make docs``: the documentation site; ``make dist``);
* ``test``: ``all`` + ``tpu`` + ``docs`` + pytest, hypothesis (:mod:`gensim_jax.testing` strategies), chex, ruff.

A module that needs an extra calls :func:`require` before its first use of it:

>>> np = require("numpy", "core")
>>> np.__name__
'numpy'
>>> require("gensim_jax_no_such_module", "eval")
Traceback (most recent call last):
...
ImportError: gensim_jax_no_such_module is not installed; it comes with pip install 'gensim-jax[eval]'
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Extras that a :func:`require` call may name (the keys of [project.optional-dependencies]).
EXTRAS = ("models", "train", "data", "eval", "torch", "wordnet", "tpu", "all", "docs", "test", "core")


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` (a dotted name) or raise an ImportError naming the extra that installs it.

    Args:
      module: the module to import, e.g. ``"flax.linen"`` or ``"tensorflow"``.
      extra: the gensim-jax extra whose installation provides it, e.g. ``"models"``.

    Returns:
      The imported module.

    Raises:
      ImportError: the module (or its top-level package) is missing; the message says
        ``pip install 'gensim-jax[EXTRA]'``. An ImportError raised *inside* an installed package
        (a broken installation) propagates unchanged.
      ValueError: ``extra`` is not one of :data:`EXTRAS`.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; expected one of {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        missing = err.name or module
        if not (module == missing or module.startswith(missing + ".")):
            raise  # the package is there but something it imports is not: report that as it is
        raise ImportError(
            f"{missing} is not installed; it comes with pip install 'gensim-jax[{extra}]'", name=missing
        ) from err
