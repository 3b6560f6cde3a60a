"""Exports of trained variables: :mod:`gensim_jax.models.export` under the training package's name.

The implementation lives with the models so that reading an export (evaluation) needs only the
``models`` extra (flax), not ``train`` (optax, orbax).
"""

from gensim_jax.models.export import (  # noqa: F401
    MODEL_FILE,
    VARIABLES_FILE,
    __all__,
    export_variables,
    gather_to_host,
    load_exported,
    read_export_metadata,
)
