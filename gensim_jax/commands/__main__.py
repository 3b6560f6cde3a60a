"""``python -m gensim_jax.commands ARGS``: the same as the ``gensim-jax ARGS`` console script."""

import sys

from gensim_jax.commands.main import main

if __name__ == "__main__":
    sys.exit(main())
