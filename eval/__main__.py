"""``python -m eval PROTOCOL ...``: the checkout's entry point, the same as ``gensim-jax eval``.

The protocols live in :mod:`gensim_jax.evaluation.protocols`; see ``python -m eval --help``.  Errors
are one line on stderr (``--debug`` shows the traceback).
"""

import sys

from gensim_jax.cli import module_main

if __name__ == "__main__":
    sys.exit(module_main("eval", "python -m eval"))
