"""Helpers shared by the evaluation protocols run on exports and files: npz inputs, exports, run entries."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np


def load_npz(path: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Arrays ``keys`` of an ``.npz`` file (``ValueError`` naming the file and the missing arrays).

    A missing file is ``FileNotFoundError``, a file that is not an ``.npz`` archive of arrays (no
    pickles are loaded) ``ValueError``; both name the file.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (expected an .npz archive with arrays {', '.join(keys)})")
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{path} is not an .npz archive of arrays (np.savez writes one)") from err
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} is a single .npy array, not an .npz archive with arrays {', '.join(keys)}")
    with z:
        missing = [k for k in keys if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}; it has {z.files}")
        return {k: z[k] for k in keys}


def load_encoders(dirs):
    """One :class:`~gensim_jax.evaluation.embed.ExportedEncoder` per export directory (one per run).

    A missing directory or file is ``FileNotFoundError`` naming it; an export whose files cannot be
    read (a truncated ``variables.msgpack``, a ``model.json`` that is not JSON) is ``ValueError``
    naming the directory and how to write it again.
    """
    from gensim_jax.evaluation.embed import load_encoder

    encoders = []
    for d in dirs:
        try:
            encoders.append(load_encoder(d))
        except (FileNotFoundError, ImportError):
            raise
        except Exception as err:  # noqa: BLE001 - msgpack, JSON and flax errors name no file
            raise ValueError(
                f"{d} is a damaged export ({type(err).__name__}: {' '.join(str(err).split())}); write it again "
                "by running the training command again with --resume (a finished run only re-exports)"
            ) from err
    return encoders


def run_info(encoder) -> dict:
    """What a run's JSON entry says about its export."""
    m = encoder.metadata
    return {
        "export": encoder.directory,
        "model": m.get("model"),
        "seed": m.get("seed"),
        "image_size": encoder.image_size,
        "preprocess": encoder.preprocess,
    }


def model_label(label: Optional[str], encoders) -> str:
    """The figure label: ``label`` or the exports' model name(s)."""
    if label:
        return label
    return "+".join(sorted({str(e.metadata.get("model")) for e in encoders}))


def mean_sem_dict(values) -> dict:
    """``{"mean", "sem", "runs"}`` over runs (axis 0); s.e.m. 0 for one run."""
    from gensim_jax.evaluation.statistics import mean_sem

    m, s = mean_sem(values)
    return {"mean": m, "sem": s, "runs": len(np.asarray(values))}
