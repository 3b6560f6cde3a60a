"""gensim-jax: generative similarity for human-aligned representations, in JAX/Flax."""

import sys as _sys

__version__ = "0.1.0"

if "jax" not in _sys.modules:  # keep an installed libtpu quiet on a machine without TPUs (gensim_jax._quiet)
    from gensim_jax._quiet import quiet_libtpu_env as _quiet_libtpu_env

    _quiet_libtpu_env()
    del _quiet_libtpu_env
del _sys
