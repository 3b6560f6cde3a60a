"""``python -m train EXPERIMENT ...``: the checkout's entry point, the same as ``gensim-jax train``.

The experiments are declared in :mod:`gensim_jax.experiments`; this shim keeps the command short in a
checkout. See ``python -m train --help``.  Errors are one line on stderr (``--debug`` shows the traceback).
"""

import sys

from gensim_jax.commands.main import module_main

if __name__ == "__main__":
    sys.exit(module_main("train", "python -m train"))
