"""Deprecated alias of :mod:`gensim_jax.commands.main` (the ``gensim-jax`` command moved there).

Kept for one release so that a ``gensim-jax`` console script written by an install of an earlier
release (it runs ``from gensim_jax.cli import main``) and ``python -m gensim_jax.cli`` keep working
until the package is installed again; new code uses :mod:`gensim_jax.commands`.
"""

import sys

from gensim_jax.commands.main import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
