"""The public surface a fork imports (:mod:`gensim_jax.fork`) is complete, and stable, and its old spellings warn.

* complete: every name that docs/EXPERIMENTS.md's code and the files of ``gensim-jax new-experiment`` import
  from gensim-jax comes from :mod:`gensim_jax.fork` and is in its ``__all__``;
* stable: :data:`SURFACE` is the committed list of promised names (the kernel modules' names as
  ``module.name``).  A name that leaves ``__all__`` fails here unless it goes through the deprecation
  policy (docs/EXPERIMENTS.md, "Deprecation policy"): it stays importable through its module's
  ``DEPRECATED`` (:func:`gensim_jax.deprecation.module_getattr`) with a warning naming the replacement,
  and CHANGELOG.md lists it under Deprecated; a new name is added to :data:`SURFACE` (and to CHANGELOG.md);
* the deprecated spellings of the history (``run_experiment``, a Config's run-level ``learning_rate``)
  still work and warn, naming the replacement (the fork that trains with one: tests/experiments/test_forks.py).
"""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "EXPERIMENTS.md"

#: Every promised name of gensim_jax.fork, as of this release. Remove one only through a deprecation.
# fmt: off
SURFACE = (
    # the experiment interface and the runner
    "Arm", "ArmConfig", "Experiment", "HostShard", "ImageExperiment", "OptimConfig", "TrainConfig",
    "learning_rate", "with_overrides", "train_and_evaluate",
    # objectives and targets
    "CenterLoss", "CrossEntropy", "DistanceRegression", "GenSimRegression", "NTXent", "Objective", "Sincere",
    "SupCon", "TripletObjective", "BetaBernoulliTarget", "FunctionTarget", "GaussianMixtureTarget", "TableTarget",
    "Target",
    # encoders and figures
    "get_model", "list_models", "figure", "save_figure",
    # the kernel modules, with their own __all__
    "beta_bernoulli.log_feature_table", "beta_bernoulli.log_similarity", "beta_bernoulli.pairwise_log_similarity",
    "beta_bernoulli.limit_log_similarity", "beta_bernoulli.pairwise_limit_log_similarity",
    "beta_bernoulli.limit_scale_and_offset",
    "categorical.check_class_probs", "categorical.uniform_class_probs", "categorical.log_similarity_table",
    "categorical.noisy_label_log_similarity_table", "categorical.log_similarity", "categorical.pairwise_log_similarity",
    "categorical.table_lookup", "categorical.pairwise_table_lookup",
    "gaussian_mixture.GaussianMixture", "gaussian_mixture.make_mixture", "gaussian_mixture.appendix_h_mixture",
    "gaussian_mixture.component_log_densities", "gaussian_mixture.log_marginal",
    "gaussian_mixture.mixture_log_similarity", "gaussian_mixture.pairwise_mixture_log_similarity",
    "gaussian_mixture.log_similarity", "gaussian_mixture.pairwise_log_similarity",
    "hierarchy.Tree", "hierarchy.ClassHierarchy", "hierarchy.log_similarity_from_path", "hierarchy.lca_depth",
    "hierarchy.log_similarity_pairs", "hierarchy.log_similarity_table", "hierarchy.gather_log_similarity",
    "hierarchy.level_ancestors", "hierarchy.level_labels", "hierarchy.imagenet1k_hierarchy",
    "targets.METHODS", "targets.raw", "targets.table_range", "targets.affine", "targets.table_moments",
    "targets.standardized", "targets.regression_target", "targets.TABLE_TRANSFORMS", "targets.transform_table",
    "trees.Tree", "trees.TreeKind", "trees.tree_kernel", "trees.log_tree_kernel", "trees.normalized_tree_kernel",
    "trees.log_gram_matrix", "trees.gram_matrix", "trees.gram_log_table",
)
# fmt: on

POLICY = (
    "the surface a fork imports is promised (docs/EXPERIMENTS.md, 'Deprecation policy'): keep the old spelling "
    "working for one minor version (its module's DEPRECATED = {old: gensim_jax.deprecation.Renamed(old, new, "
    "since)} and __getattr__ = module_getattr(...)), list it under Deprecated in CHANGELOG.md, and remove it "
    "from tests/test_fork.py's SURFACE in the release that removes it"
)


def _current() -> tuple[set, dict]:
    """``(names the surface lists now, {name: (module, old name)} of the deprecated ones still served)``."""
    from gensim_jax import fork

    names, deprecated = set(), {old: (fork, old) for old in getattr(fork, "DEPRECATED", {})}
    for name in fork.__all__:
        obj = getattr(fork, name)
        if inspect.ismodule(obj):
            names.update(f"{name}.{n}" for n in obj.__all__)
            deprecated.update({f"{name}.{old}": (obj, old) for old in getattr(obj, "DEPRECATED", {})})
        else:
            names.add(name)
    return names, deprecated


def test_no_promised_name_disappears_without_a_deprecation():
    names, deprecated = _current()
    gone = [n for n in SURFACE if n not in names and n not in deprecated]
    assert not gone, f"{', '.join(gone)} left gensim_jax.fork without a deprecation; {POLICY}"
    for name, (module, old) in deprecated.items():  # each still resolves, and its warning names the replacement
        with pytest.warns(DeprecationWarning, match=re.escape(module.DEPRECATED[old].new)):
            assert getattr(module, old) is not None, name


def test_a_new_name_is_added_to_the_committed_list():
    names, _ = _current()
    new = sorted(names - set(SURFACE))
    assert not new, (
        f"{', '.join(new)}: new in gensim_jax.fork; add them to SURFACE here and under Added in CHANGELOG.md"
    )


def test_the_surface_re_exports_the_objects_themselves():
    from gensim_jax import fork
    from gensim_jax.training import experiment, objectives, runner

    assert fork.Experiment is experiment.Experiment and fork.Arm is experiment.Arm
    assert fork.GenSimRegression is objectives.GenSimRegression and fork.train_and_evaluate is runner.train_and_evaluate
    assert len(fork.__all__) == len(set(fork.__all__))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        fork.nope  # noqa: B018 - a missing name is an AttributeError as for any module


def _gensim_imports(source: str, where: str) -> list[tuple[str, str, str]]:
    """``(module, name, where)`` of every ``from gensim_jax... import name`` and ``import gensim_jax...`` in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gensim_jax":
            out += [(node.module, alias.name, f"{where}:{node.lineno}") for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "", f"{where}:{node.lineno}") for a in node.names if a.name.split(".")[0] == "gensim_jax"]
    return out


def _doc_python_blocks() -> list[tuple[str, int]]:
    text = DOC.read_text()
    return [(m.group(1), text[: m.start()].count("\n") + 2) for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def _check_imports(imports: list) -> None:
    from gensim_jax import fork

    assert imports
    for module, name, where in imports:
        if module.startswith("gensim_jax.experiments."):
            continue  # an experiment of the package (its CONFIGS), not the library
        assert module == "gensim_jax.fork", (
            f"{where}: imports {name or module} from {module}; import it from gensim_jax.fork"
        )
        assert name in fork.__all__, f"{where}: {name} is not in gensim_jax.fork.__all__"


def test_the_docs_import_only_the_surface():
    imports = []
    for block, line in _doc_python_blocks():
        imports += _gensim_imports(block, f"docs/EXPERIMENTS.md:{line}")
    _check_imports(imports)
    # the prose names the module too, and no other import line
    text = DOC.read_text()
    assert "from gensim_jax.fork import" in text


@pytest.mark.parametrize("kernel", ["beta_bernoulli", "hierarchy", "categorical", "tree", "gaussian_mixture"])
def test_new_experiment_files_import_only_the_surface(kernel):
    from gensim_jax.commands.new_experiment import render

    _check_imports(_gensim_imports(render("my_exp", kernel), f"my_exp.py ({kernel})"))


def test_renamed_runner_function_warns_and_is_the_new_one():
    from gensim_jax.deprecation import GensimJaxDeprecationWarning
    from gensim_jax.training import runner

    with pytest.warns(GensimJaxDeprecationWarning) as caught:
        from gensim_jax.training.runner import run_experiment
    assert run_experiment is runner.train_and_evaluate
    (w,) = caught
    assert str(w.message) == (
        "gensim_jax.training.runner.run_experiment is deprecated since gensim-jax 0.2.0 and will be removed in "
        "0.3.0: use train_and_evaluate"
    )
    assert w.filename == __file__  # the warning points at the line that used the old name


def test_a_run_level_learning_rate_warns_and_sets_optim_learning_rate():
    import dataclasses

    from gensim_jax.deprecation import GensimJaxDeprecationWarning
    from gensim_jax.fork import Experiment, TrainConfig

    with pytest.warns(
        GensimJaxDeprecationWarning, match=r"Old\.Config\.learning_rate is deprecated .*use optim\.learning_rate"
    ):

        class Old(Experiment):
            @dataclasses.dataclass(frozen=True)
            class Config(TrainConfig):
                learning_rate: float = 0.02
                arms: tuple[str, ...] = ("a",)

            CONFIGS = {"small": Config()}

            def arm(self, name, config, data): ...

    config = Old().get_config("small", learning_rate=0.05)
    assert config.optim.learning_rate == 0.05 and config.learning_rate == 0.05
    with pytest.raises(ValueError, match="optim.learning_rate must be positive"):
        Old().get_config("small", learning_rate=-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current spelling does not warn

        class New(Experiment):
            def arm(self, name, config, data): ...
