"""The experiments of the papers, one declaration per module, run by the one runner.

======================  ==========================================================================
``quadrilaterals``      shape regularity and the oddball test (paper Sec. 3.1, Fig. 2, App. L)
``geoclidean``          Geoclidean few-shot concepts with the tree-kernel target (Sec. 3.2, App. M)
``imagenet_hierarchy``  the class hierarchy target on ImageNet / a synthetic tree (Sec. 3.3, App. N)
``gaussian_mixture``    GenSim by Monte Carlo triplets on a Gaussian mixture (App. F-H)
``spurious_digits``     class-centre loss against a spurious background (thesis, seed 003)
``folder``              your own folder of images and metadata table, its kernel from the columns
======================  ==========================================================================

Each module defines ``EXPERIMENT``, an instance of :class:`gensim_jax.training.experiment.Experiment`.
A research fork adds an experiment by adding one such module here, or by passing the path of its
own file to ``gensim-jax train path/to/my_experiment.py``.  The modules ship in the wheel, so
``gensim-jax train NAME`` works from an installed package.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

__all__ = ["available", "evaluate_export", "load", "summary"]

PACKAGE_DIR = Path(__file__).resolve().parent


def _declares_experiment(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "EXPERIMENT" for t in targets):
            return True
    return False


def available(package_dir=None) -> dict:
    """``{name: path}`` of the experiment modules of this package (those that assign ``EXPERIMENT``), sorted.

    Read from the sources, so listing imports nothing.  ``package_dir``: another folder to scan.
    """
    folder = PACKAGE_DIR if package_dir is None else Path(package_dir)
    return {p.stem: p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_") and _declares_experiment(p)}


def summary(path: Path) -> str:
    """The first line of a module's docstring, without ``Experiment:`` (read without importing it)."""
    try:
        doc = ast.get_docstring(ast.parse(Path(path).read_text(encoding="utf-8"))) or ""
    except (SyntaxError, OSError):
        return ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    return first.removeprefix("Experiment:").strip()


def load(name_or_path: str):
    """The ``EXPERIMENT`` of ``gensim_jax.experiments.<name>``, or of the Python file at a path.

    Raises ``ValueError`` naming the known experiments when there is no such experiment, or when the
    module defines no ``EXPERIMENT``.
    """
    from gensim_jax.training.experiment import Experiment, InterfaceError

    text = str(name_or_path)
    if text.endswith(".py"):
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"experiment file {text} does not exist")
        folder = str(path.resolve().parent)
        if folder not in sys.path:  # a fork's experiment may import the modules beside it
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(f"gensim_jax_user_experiment_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses resolve annotations through the module
        try:
            spec.loader.exec_module(module)
        except InterfaceError as err:  # a file written for an earlier interface: say where, in one line
            raise InterfaceError(f"{text}: {err}") from None
        where = text
    else:
        known = available()
        if text not in known:
            raise ValueError(
                f"unknown experiment {text!r}; known: {', '.join(known)} (or the path of a .py file "
                "that defines EXPERIMENT)"
            )
        module = importlib.import_module(f"gensim_jax.experiments.{text}")
        where = f"gensim_jax/experiments/{text}.py"
    experiment = getattr(module, "EXPERIMENT", None)
    if not isinstance(experiment, Experiment):
        raise ValueError(
            f"{where} does not define EXPERIMENT = an instance of gensim_jax.training.experiment.Experiment"
        )
    if not experiment.name:
        experiment.name = Path(where).stem
    if not experiment.summary:
        experiment.summary = (
            (module.__doc__ or "").strip().splitlines()[0].removeprefix("Experiment:").strip() if module.__doc__ else ""
        )
    return experiment


def evaluate_export(directory) -> dict:
    """Re-evaluate a run's export with the experiment that wrote it (its metadata's ``experiment_source``):
    :func:`gensim_jax.training.runner.evaluate_export`, the evaluation the run made, on the same stimuli."""
    from gensim_jax.training.export import read_export_metadata
    from gensim_jax.training.runner import check_run_export
    from gensim_jax.training.runner import evaluate_export as evaluate

    meta = read_export_metadata(directory)
    check_run_export(directory, meta)
    return evaluate(directory, load(meta.get("experiment_source", meta["experiment"])))
