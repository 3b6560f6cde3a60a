"""gensim-jax: generative similarity for human-aligned representations, in JAX/Flax."""

__version__ = "0.1.0"

# Keep an installed libtpu quiet on a machine without TPUs (gensim_jax._quiet). libtpu reads these
# variables when JAX starts its first backend, not when jax is imported: `import jax, gensim_jax` is
# as quiet as `import gensim_jax, jax`.
from gensim_jax._quiet import quiet_libtpu_env as _quiet_libtpu_env

_quiet_libtpu_env()
del _quiet_libtpu_env
