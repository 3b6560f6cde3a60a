"""The registry of evaluation protocols: a protocol's name -> the one module that holds it.

A config names its protocol (``eval.protocol``, ``gensim-jax eval <protocol>``, ``gensim-jax score
--protocols ...``) and :func:`get` imports its module, as big_vision's evaluators are found from the
config by name. Modules are imported on demand (a protocol's imports, e.g. scikit-learn for the
hierarchy decoder, are paid only when it is used); :func:`describe` reads a protocol's one-line
description without importing it (``--help`` stays fast).

Every protocol module defines (the shared face; arguments beyond these are the protocol's own and
documented in its module):

* ``NAME`` -- its key here;
* ``evaluate(embed, stimuli, ...) -> dict`` -- the evaluator: an embedding function
  ``images -> (N, D)`` (or what the protocol scores: the odd-one-out table of embeddings, the
  spurious-digits classifier) on its stimuli, returning the results dict a run records;
* ``make_stimuli(...)`` -- its seeded stimuli (oddball, geoclidean, hierarchy; the odd-one-out trials
  are the user's, the spurious-digits test sets come from :mod:`gensim_jax.data.spurious_digits`, the
  Gaussian-mixture points are drawn inside its evaluator from a key);
* ``summarize(...)`` -- the statistics over runs (not the Gaussian mixture, one run per arm);
* ``format_table(results) -> str`` -- Markdown;
* ``plot(results, path)`` -- the figure of a run's results (the Gaussian mixture draws Fig. S1 from
  its arrays: ``plot_gaussian_mixture``; the odd-one-out figure is ``plot_odd_one_out``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["PROTOCOLS", "describe", "get", "names"]

#: Protocol name -> its module, in report order.
PROTOCOLS: dict[str, str] = {
    "oddball": "gensim_jax.evaluation.oddball",
    "geoclidean": "gensim_jax.evaluation.geoclidean",
    "hierarchy": "gensim_jax.evaluation.hierarchy",
    "odd_one_out": "gensim_jax.evaluation.odd_one_out",
    "spurious_digits": "gensim_jax.evaluation.spurious_digits",
    "gaussian_mixture": "gensim_jax.evaluation.gaussian_mixture",
    "folder": "gensim_jax.evaluation.folder",
}


def names() -> tuple[str, ...]:
    """The registered protocol names, in report order."""
    return tuple(PROTOCOLS)


def _module_path(name: str) -> str:
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}; protocols: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def get(name: str) -> ModuleType:
    """The module of protocol ``name`` (imported on first use); ``ValueError`` naming the protocols otherwise.

    Example:
      >>> get("oddball").NAME
      'oddball'
    """
    return importlib.import_module(_module_path(name))


def describe(name: str) -> str:
    """The first line of protocol ``name``'s module docstring, read from the source without importing it.

    Example:
      >>> describe("hierarchy").startswith("The hierarchy-decoding protocol")
      True
    """
    spec = importlib.util.find_spec(_module_path(name))
    doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text())) if spec and spec.origin else None
    return doc.strip().splitlines()[0] if doc else ""
