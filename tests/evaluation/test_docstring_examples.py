"""Run the runnable docstring examples of evaluation.figures and evaluation.embed.prepare_images (doctest).

(``embed_images``'s example initialises a model, op by op; it is exercised by test_embed.py instead.)
"""

import doctest

import numpy as np

from gensim_jax.evaluation import embed, figures


def _run(obj, globs):
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(obj, globs=globs) if t.examples]
    assert tests, f"{obj.__name__} has no example"
    for t in tests:
        runner.run(t)
    return runner.summarize(verbose=False)


def test_figures_examples():
    r = _run(figures.mean_sem, {"mean_sem": figures.mean_sem})
    assert r.failed == 0


def test_prepare_images_example():
    r = _run(embed.prepare_images, {"prepare_images": embed.prepare_images, "np": np})
    assert r.failed == 0
