"""Readers for the Sable-Meyer et al. (2021) oddball behaviour (paper Sec. 3.1, Fig. 2, Appendix Q).

Three sources:

* the per-population error rates, shipped as package data
  (``gensim_jax/assets/sable_meyer_error_rates.csv``, columns ``population, shape, trials, errors,
  error_rate``; counted from the authors' trial-level files) or read from any CSV of that format;
* the per-participant counts, shipped as package data (``gensim_jax/assets/sable_meyer_participants.csv``,
  one row per participant: ``population, participant, trials_<shape>..., errors_<shape>...``; derived from
  the authors' trial-level files by ``scripts/sable_meyer_participants.py``), from which the human
  noise ceilings are computed (:func:`packaged_participants`);
* the trial-level files (``behavior/*.csv`` of the reference data, one row per trial with columns
  ``ID`` (subject), ``shape``, ``success`` (``TRUE``/``FALSE`` or ``1``/``0``), ``population``, ...),
  from which per-subject error rates are counted. The user passes the directory; nothing here
  needs the reference data at run time except those explicit paths.

Shapes are always ordered as :data:`SHAPES` (most to least geometrically regular, paper Fig. 2B /
Table 1), so a rate vector ``r`` of shape ``(11,)`` has ``r[i]`` = error rate of ``SHAPES[i]``.
"""

from __future__ import annotations

import csv
import io
import os
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

__all__ = [
    "SHAPES",
    "TABLE1_REGULARITIES",
    "HUMAN_POPULATIONS",
    "regularity_rank",
    "read_error_rates",
    "packaged_error_rates",
    "read_behavior",
    "subject_error_rates",
    "pooled_error_rates",
    "packaged_participants",
    "read_participants",
]

#: The 11 reference quadrilaterals from most to least geometrically regular (paper Fig. 2B, Table 1).
SHAPES: tuple[str, ...] = (
    "square",
    "rectangle",
    "losange",
    "parallelogram",
    "rightKite",
    "kite",
    "isoTrapezoid",
    "hinge",
    "rustedHinge",
    "trapezoid",
    "random",
)

#: Paper Table 1: (rightAngles, parallels, symmetry, equalSides, equalAngles) per shape.
TABLE1_REGULARITIES: Mapping[str, tuple[int, int, int, int, int]] = {
    "square": (4, 2, 4, 4, 4),
    "rectangle": (4, 2, 2, 2, 4),
    "losange": (0, 0, 2, 4, 2),
    "parallelogram": (0, 2, 1, 2, 2),
    "rightKite": (2, 0, 1, 2, 2),
    "kite": (0, 0, 1, 2, 2),
    "isoTrapezoid": (0, 1, 1, 1, 2),
    "hinge": (1, 0, 0, 1, 0),
    "rustedHinge": (0, 0, 0, 1, 0),
    "trapezoid": (0, 1, 0, 0, 0),
    "random": (0, 0, 0, 0, 0),
}

#: Human populations of Sable-Meyer et al. (2021) in the error-rate table; the other one is ``baboons``.
HUMAN_POPULATIONS: tuple[str, ...] = (
    "french_adults_1",
    "french_adults_2",
    "1st_graders",
    "preschoolers",
    "himbas",
)

_ASSET = "sable_meyer_error_rates.csv"
_PARTICIPANTS_ASSET = "sable_meyer_participants.csv"


def regularity_rank() -> np.ndarray:
    """Irregularity rank of each shape in :data:`SHAPES` order: ``0`` (square) ... ``10`` (random).

    This is the x-axis of paper Fig. 2B. The paper's Spearman rho(9) = 0.88 (GenSim) is positive:
    error rates rise with this rank.
    """
    return np.arange(len(SHAPES))


def _shape_index(shape: str, where: str) -> int:
    try:
        return SHAPES.index(shape)
    except ValueError:
        raise ValueError(f"{where}: unknown shape {shape!r}; expected one of {list(SHAPES)}") from None


def _parse_error_rate_rows(lines: Iterable[str], where: str) -> dict[str, dict[str, np.ndarray]]:
    reader = csv.DictReader(line for line in lines if not line.startswith("#"))
    need = {"population", "shape", "trials", "errors"}
    if reader.fieldnames is None or not need <= set(reader.fieldnames):
        raise ValueError(f"{where}: error-rate CSV needs columns {sorted(need)}, got {reader.fieldnames}")
    out: dict[str, dict[str, np.ndarray]] = {}
    for row in reader:
        pop = row["population"]
        d = out.setdefault(pop, {"trials": np.zeros(len(SHAPES), np.int64), "errors": np.zeros(len(SHAPES), np.int64)})
        i = _shape_index(row["shape"], where)
        d["trials"][i] += int(row["trials"])
        d["errors"][i] += int(row["errors"])
    for pop, d in out.items():
        if np.any(d["trials"] <= 0):
            missing = [s for s, t in zip(SHAPES, d["trials"]) if t <= 0]
            raise ValueError(f"{where}: population {pop!r} has no trials for shapes {missing}")
        d["error_rate"] = d["errors"] / d["trials"]
    return out


def read_error_rates(path: str | os.PathLike) -> dict[str, dict[str, np.ndarray]]:
    """Read a per-population error-rate CSV (columns ``population, shape, trials, errors``).

    Args:
      path: CSV file; lines starting with ``#`` are comments.

    Returns:
      ``{population: {"trials": (11,), "errors": (11,), "error_rate": (11,)}}`` in :data:`SHAPES` order.
    """
    with open(path, newline="") as f:
        return _parse_error_rate_rows(f.read().splitlines(), str(path))


def packaged_error_rates() -> dict[str, dict[str, np.ndarray]]:
    """The per-population error rates shipped with the package (Sable-Meyer et al. 2021).

    Populations: ``baboons`` and the human groups of :data:`HUMAN_POPULATIONS`.

    Example:
      >>> rates = packaged_error_rates()
      >>> round(float(rates["baboons"]["error_rate"][0]), 4)   # square
      0.4569
    """
    text = resources.files("gensim_jax").joinpath("assets", _ASSET).read_text()
    return _parse_error_rate_rows(io.StringIO(text).read().splitlines(), _ASSET)


def pooled_error_rates(rates: Mapping[str, Mapping[str, np.ndarray]], populations: Iterable[str]) -> np.ndarray:
    """Trial-weighted error rate per shape over several populations: ``sum errors / sum trials``, ``(11,)``."""
    pops = list(populations)
    missing = [p for p in pops if p not in rates]
    if not pops or missing:
        raise ValueError(f"populations must be a non-empty subset of {sorted(rates)}, missing {missing}")
    errors = sum(np.asarray(rates[p]["errors"]) for p in pops)
    trials = sum(np.asarray(rates[p]["trials"]) for p in pops)
    return errors / trials


_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


def read_behavior(path: str | os.PathLike) -> list[dict[str, object]]:
    """Read one trial-level file of Sable-Meyer et al. (2021).

    Args:
      path: CSV with at least the columns ``ID``, ``shape``, ``success`` and ``population``.

    Returns:
      One dict per trial with keys ``subject`` (str), ``population`` (str), ``shape`` (str) and
      ``success`` (bool). Rows whose shape is not one of :data:`SHAPES` raise ``ValueError``.
    """
    path = Path(path)
    trials = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"ID", "shape", "success", "population"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{path}: behaviour CSV needs columns {sorted(need)}, got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            s = row["success"].strip().lower()
            if s not in _TRUE | _FALSE:
                raise ValueError(f"{path}:{line}: success must be TRUE/FALSE/1/0, got {row['success']!r}")
            _shape_index(row["shape"], f"{path}:{line}")
            trials.append(
                {"subject": row["ID"], "population": row["population"], "shape": row["shape"], "success": s in _TRUE}
            )
    return trials


def subject_error_rates(
    trials: Iterable[Mapping[str, object]], *, min_trials_per_shape: int = 1
) -> dict[str, dict[str, np.ndarray | str]]:
    """Per-subject error rate per shape (paper Appendix Q, Fig. S2).

    Args:
      trials: records from :func:`read_behavior` (several files may be concatenated).
      min_trials_per_shape: subjects with fewer trials than this for any shape are dropped
        (their rate vector would be undefined or too noisy).

    Returns:
      ``{subject: {"population": str, "trials": (11,), "errors": (11,), "error_rate": (11,)}}``.
    """
    if min_trials_per_shape < 1:
        raise ValueError(f"min_trials_per_shape must be >= 1, got {min_trials_per_shape}")
    acc: dict[str, dict] = {}
    for t in trials:
        d = acc.setdefault(
            str(t["subject"]),
            {
                "population": str(t["population"]),
                "trials": np.zeros(len(SHAPES), np.int64),
                "errors": np.zeros(len(SHAPES), np.int64),
            },
        )
        i = _shape_index(str(t["shape"]), "trials")
        d["trials"][i] += 1
        d["errors"][i] += 0 if t["success"] else 1
    out = {}
    for subject, d in acc.items():
        if np.all(d["trials"] >= min_trials_per_shape):
            d["error_rate"] = d["errors"] / d["trials"]
            out[subject] = d
    return out


def _parse_participant_rows(lines: Iterable[str], where: str) -> dict[str, dict[str, object]]:
    reader = csv.DictReader(line for line in lines if not line.startswith("#"))
    need = {"population", "participant", *(f"trials_{s}" for s in SHAPES), *(f"errors_{s}" for s in SHAPES)}
    if reader.fieldnames is None or not need <= set(reader.fieldnames):
        missing = sorted(need - set(reader.fieldnames or ()))
        raise ValueError(f"{where}: participant CSV lacks columns {missing[:4]}{' ...' if len(missing) > 4 else ''}")
    acc: dict[str, dict[str, list]] = {}
    for line, row in enumerate(reader, start=2):
        d = acc.setdefault(row["population"], {"participants": [], "trials": [], "errors": []})
        n = [int(row[f"trials_{s}"]) for s in SHAPES]
        e = [int(row[f"errors_{s}"]) for s in SHAPES]
        if any(x < 0 for x in n) or any(not 0 <= b <= a for a, b in zip(n, e)):
            raise ValueError(f"{where}:{line}: counts must satisfy 0 <= errors <= trials")
        d["participants"].append(row["participant"])
        d["trials"].append(n)
        d["errors"].append(e)
    return {
        pop: {"participants": d["participants"], "trials": np.array(d["trials"], np.int64),
              "errors": np.array(d["errors"], np.int64)}
        for pop, d in acc.items()
    }  # fmt: skip


def read_participants(path: str | os.PathLike) -> dict[str, dict[str, object]]:
    """Read a per-participant count CSV (the format of ``sable_meyer_participants.csv``).

    Returns:
      ``{population: {"participants": [P names], "trials": (P, 11), "errors": (P, 11)}}`` in :data:`SHAPES` order.
    """
    with open(path, newline="") as f:
        return _parse_participant_rows(f.read().splitlines(), str(path))


def packaged_participants() -> dict[str, dict[str, object]]:
    """The per-participant counts shipped with the package (:func:`read_participants` of the asset).

    Populations: the human groups of :data:`HUMAN_POPULATIONS` and ``baboons``; summed over a
    population's participants they are :func:`packaged_error_rates`' counts.

    Example:
      >>> len(packaged_participants()["baboons"]["participants"])
      11
    """
    text = resources.files("gensim_jax").joinpath("assets", _PARTICIPANTS_ASSET).read_text()
    return _parse_participant_rows(text.splitlines(), _PARTICIPANTS_ASSET)
