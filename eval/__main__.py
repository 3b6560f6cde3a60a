"""``python -m eval PROTOCOL ...``: the checkout's entry point, the same as ``gensim-jax eval``.

The protocols live in :mod:`gensim_jax.evaluation.protocols`; see ``python -m eval --help``.
"""

import sys

from gensim_jax.evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
