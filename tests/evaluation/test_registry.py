"""The protocol registry: every name maps to one module with the shared face, chosen by name."""

from __future__ import annotations

import importlib

import pytest

import gensim_jax.evaluation as ev
from gensim_jax.evaluation import registry

#: What each protocol module defines (module docstring of gensim_jax.evaluation.registry).
FACE = {
    "oddball": ("make_stimuli", "evaluate", "summarize", "format_table", "plot"),
    "geoclidean": ("make_stimuli", "evaluate", "summarize", "format_table", "plot"),
    "hierarchy": ("make_stimuli", "evaluate", "summarize", "format_table", "plot"),
    "odd_one_out": ("evaluate", "plot_odd_one_out"),
    "spurious_digits": ("evaluate", "summarize", "format_table", "plot"),
    "gaussian_mixture": ("evaluate", "format_table", "plot_gaussian_mixture"),
    "folder": ("make_stimuli", "evaluate", "summarize", "format_table", "plot"),
}


def test_every_protocol_is_one_module_with_the_face():
    assert registry.names() == tuple(FACE) and ev.PROTOCOLS is registry.PROTOCOLS
    for name, attrs in FACE.items():
        module = registry.get(name)
        assert module is importlib.import_module(f"gensim_jax.evaluation.{name}") is ev.get_protocol(name)
        assert module.NAME == name
        assert all(callable(getattr(module, a)) for a in attrs), name
        # the one-line description is read without importing, and is the module's own first line
        assert registry.describe(name) == module.__doc__.strip().splitlines()[0]


def test_unknown_protocol_names_the_choices():
    with pytest.raises(ValueError, match="unknown protocol 'fewshot'; protocols: oddball, geoclidean, hierarchy"):
        registry.get("fewshot")
    with pytest.raises(ValueError, match="unknown protocol"):
        registry.describe("figures")


def test_hierarchy_evaluate_is_evaluate_embedding_of_the_embedded_stimuli():
    hierarchy = registry.get("hierarchy")
    stim = hierarchy.make_stimuli(0, per_class=6, image_size=8, branching=(2, 2))
    got = hierarchy.evaluate(lambda x: hierarchy.pixel_embedding(x, 2), stim, folds=3, seed=1)
    want = hierarchy.evaluate_embedding(
        hierarchy.pixel_embedding(stim.images, 2), stim.labels, stim.tree, stim.nodes, folds=3, seed=1
    )
    assert got == want
