"""The Geoclidean few-shot protocol on exports and files (``gensim-jax eval geoclidean``,
:mod:`gensim_jax.commands.eval.geoclidean`): every concept's images embedded in one call."""

from __future__ import annotations

import numpy as np


def embed_all(concepts, embed) -> dict:
    """:func:`fewshot.embed_concepts` with one call of ``embed`` on all images (one compilation)."""
    names = list(concepts)
    chunks = [a for n in names for a in (concepts[n].train, concepts[n].test)]
    e = np.asarray(embed(np.concatenate(chunks)))
    out, start = {}, 0
    for n in names:
        c = concepts[n]
        tr, te = e[start : start + len(c.train)], e[start + len(c.train) : start + len(c.train) + len(c.test)]
        start += len(c.train) + len(c.test)
        out[n] = (tr, te, c.test_kind)
    return out
