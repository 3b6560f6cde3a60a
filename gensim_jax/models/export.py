"""Export of trained variables for evaluation: one msgpack file plus a JSON description.

A checkpoint (``training.checkpoints``) holds everything needed to *resume* a run (optimizer state,
RNG, data position) in orbax's directory layout; evaluation needs only the model's variables and
how to rebuild the model. :func:`export_variables` writes

* ``<directory>/variables.msgpack`` -- ``flax.serialization.msgpack_serialize`` of
  ``{"params": ..., "batch_stats": ...}`` as host numpy arrays (gathered from any device layout);
* ``<directory>/model.json`` -- ``{"model": name, "model_kwargs": {...}, "image_size": S,
  "preprocess": "imagenet" | "none", ...}``: the registry name and keyword overrides that
  :func:`gensim_jax.models.get_model` takes to rebuild the module, plus free-form metadata.

:func:`load_exported` reads both back and rebuilds ``(model, variables, metadata)``.

Example:
    >>> import tempfile, numpy as np
    >>> from gensim_jax.models import get_model
    >>> from gensim_jax.training import create_train_state
    >>> import optax
    >>> s = create_train_state(get_model("mlp"), optax.sgd(0.1), 0)
    >>> d = tempfile.mkdtemp()
    >>> _ = export_variables(d, s.variables, model="mlp")
    >>> model, variables, meta = load_exported(d)
    >>> meta["model"]
    'mlp'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional

import flax.serialization
import jax
import numpy as np

VARIABLES_FILE = "variables.msgpack"
MODEL_FILE = "model.json"

__all__ = [
    "MODEL_FILE",
    "VARIABLES_FILE",
    "export_variables",
    "gather_to_host",
    "load_exported",
    "read_export_metadata",
]

from gensim_jax.parallel import gather_to_host  # noqa: E402  (re-exported: exports gather with it)


def export_variables(
    directory,
    variables: Mapping[str, Any],
    *,
    model: str,
    model_kwargs: Optional[Mapping[str, Any]] = None,
    **metadata: Any,
) -> Path:
    """Write ``variables`` and the model description to ``directory``; returns the directory.

    Args:
      directory: created if missing; existing export files are replaced.
      variables: ``{"params": ..., "batch_stats": ...}`` (e.g. ``TrainState.variables``).
      model: registry name (:func:`gensim_jax.models.list_models`).
      model_kwargs: JSON-serialisable keyword overrides for :func:`gensim_jax.models.get_model`
        (tuples are stored as lists and given back as tuples).
      **metadata: further JSON-serialisable fields (``image_size``, ``preprocess``, ``seed``, ...);
        ``input_shape`` (one example's shape, e.g. ``[2]`` or ``[64, 64, 3]``), or else ``image_size``,
        lets :func:`load_exported` check the stored shapes against the rebuilt model.

    In a multi-process run call it on every process: variables sharded across processes are
    gathered (:func:`gather_to_host`, a collective) and only process 0 writes the files.
    """
    from gensim_jax.models import list_models

    if model not in list_models():
        raise ValueError(f"model {model!r} is not registered; known: {list_models()}")
    variables = dict(variables)
    if "params" not in variables:
        raise ValueError(f"variables must contain 'params', got collections {sorted(variables)}")
    directory = Path(directory)
    payload = {
        "params": gather_to_host(variables["params"]),
        "batch_stats": gather_to_host(variables.get("batch_stats", {})),
    }
    description = {"model": model, "model_kwargs": dict(model_kwargs or {}), **metadata}
    text = json.dumps(description, indent=2)  # fails here, before writing, if not serialisable
    if jax.process_index() != 0:
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (VARIABLES_FILE + ".tmp")
    tmp.write_bytes(flax.serialization.msgpack_serialize(payload))
    tmp.replace(directory / VARIABLES_FILE)
    (directory / MODEL_FILE).write_text(text + "\n")
    return directory


def _tuples(value):
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _not_an_export(directory: Path, missing: str) -> FileNotFoundError:
    """``DIR is not an export (FILE is missing)``, with the exports that lie below ``DIR`` when there are some
    (a run or a workdir given where its export was meant: ``did you mean DIR/export?``)."""
    below = sorted(p.parent for p in directory.glob("**/" + MODEL_FILE) if len(p.relative_to(directory).parts) <= 5)
    hint = ""
    if len(below) == 1:
        hint = f"; did you mean {below[0]}?"
    elif below:
        more = f" and {len(below) - 2} more" if len(below) > 2 else ""
        hint = f"; did you mean one of the {len(below)} exports below it: {', '.join(map(str, below[:2]))}{more}?"
    return FileNotFoundError(f"{directory} is not an export ({missing} is missing){hint}")


def read_export_metadata(directory) -> dict:
    """The metadata (``model.json``) of an export made by :func:`export_variables`, without loading its variables.

    Raises ``FileNotFoundError`` (``no such directory: DIR``, or ``DIR is not an export (model.json is missing)``, naming
    the exports below ``DIR`` if there are any).
    """
    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"no such directory: {directory}")
    if not (directory / MODEL_FILE).is_file():
        raise _not_an_export(directory, MODEL_FILE)
    return json.loads((directory / MODEL_FILE).read_text())


def load_exported(directory) -> tuple[Any, dict, dict]:
    """``(model, variables, metadata)`` of an export made by :func:`export_variables`.

    Raises:
      FileNotFoundError: ``directory`` does not exist (``no such directory: DIR``), is a file, or lacks
        ``variables.msgpack`` or ``model.json``.
      ValueError: the stored variables do not fit the rebuilt model's structure and shapes.
    """
    from gensim_jax.models import get_model

    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"no such directory: {directory}")
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not an export: it is a file, not a directory")
    for name in (VARIABLES_FILE, MODEL_FILE):
        if not (directory / name).is_file():
            raise _not_an_export(directory, name)
    metadata = json.loads((directory / MODEL_FILE).read_text())
    kwargs = _tuples(metadata.get("model_kwargs", {}))
    model = get_model(metadata["model"], **kwargs)
    restored = flax.serialization.msgpack_restore((directory / VARIABLES_FILE).read_bytes())
    variables = {"params": restored["params"]}
    if restored.get("batch_stats"):
        variables["batch_stats"] = restored["batch_stats"]
    example = None
    if "input_shape" in metadata:
        example = np.zeros((1, *map(int, metadata["input_shape"])), np.float32)
    elif "image_size" in metadata:
        s = int(metadata["image_size"])
        example = np.zeros((1, s, s, int(metadata.get("channels", 3))), np.float32)
    if example is not None:
        shapes = jax.eval_shape(model.init, jax.random.key(0), example)
        expected = {k: shapes[k] for k in variables if k in shapes}
        got = jax.tree_util.tree_map(lambda x: x.shape, variables)
        want = jax.tree_util.tree_map(lambda x: x.shape, expected)
        if got != want or set(variables) != set(expected):
            raise ValueError(
                f"{directory}: stored variables do not match model {metadata['model']!r} "
                f"with {kwargs}; check model_kwargs"
            )
    return model, variables, metadata
