"""``python -m eval PROTOCOL ...``: the checkout's entry point, the same as ``gensim-jax eval``.

The protocol commands live in :mod:`gensim_jax.commands.eval`; see ``python -m eval --help``.  Errors
are one line on stderr (``--debug`` shows the traceback).
"""

import sys

from gensim_jax.commands.main import module_main

if __name__ == "__main__":
    sys.exit(module_main("eval", "python -m eval"))
