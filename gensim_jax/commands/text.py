"""Docstrings as terminal text: the commands' ``--help`` is built from docstrings written for Sphinx.

:func:`plain_text` drops the reStructuredText markup a reader of ``--help`` should not see (double
backticks, roles such as ``:func:`name``` and ``:class:`~pkg.Name```) and keeps the words.
"""

from __future__ import annotations

import re

__all__ = ["plain_text"]

# :role:`target` or :role:`title <target>` (Sphinx cross-references), with an optional leading ~ or .
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?\.?([^`<]*?)(?:\s*<[^`>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``", re.S)


def plain_text(text: str) -> str:
    """``text`` without reStructuredText inline markup: ``:func:`pkg.f``` -> ``pkg.f``, a literal in double
    backticks -> its content, ``:class:`~pkg.Name``` -> ``pkg.Name`` (the ``~`` dropped).

    >>> plain_text("see :func:`gensim_jax.losses.gensim_loss` and ``--set key=value``")
    'see gensim_jax.losses.gensim_loss and --set key=value'
    >>> plain_text(":class:`title <gensim_jax.training.Arm>`")
    'title'
    """
    text = _ROLE.sub(lambda m: m.group(1).strip(), text)
    return _LITERAL.sub(lambda m: m.group(1), text)
