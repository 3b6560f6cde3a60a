"""The public surface of gensim-jax for a research fork: every name an experiment file needs, in one module.

A fork's experiment file (docs/EXPERIMENTS.md; ``gensim-jax new-experiment`` writes one) imports from
here and nowhere else in gensim-jax::

    from gensim_jax.fork import Arm, ArmConfig, Experiment, GenSimRegression, OptimConfig, TrainConfig, get_model

What :data:`__all__` lists is promised: a name, keyword or config field of it that is renamed keeps
its old spelling working for one minor version, with a
:class:`~gensim_jax.deprecation.GensimJaxDeprecationWarning` naming the replacement, and CHANGELOG.md
records the change (docs/EXPERIMENTS.md, "Deprecation policy"; :mod:`gensim_jax.deprecation`).
The kernel modules listed here (``beta_bernoulli``, ``categorical``, ``gaussian_mixture``,
``hierarchy``, ``trees``, ``targets``) are promised with the names of their own ``__all__``;
``tests/test_fork.py`` holds the committed list of every promised name and fails when one
disappears without a deprecation.

The names live in their own modules (this one defines nothing but the list and the deprecation
hook), so ``gensim_jax.fork.Experiment is gensim_jax.training.experiment.Experiment``:

=======================================  =====================================================================
the experiment interface                 :class:`Experiment`, :class:`ImageExperiment`, :class:`Arm`,
                                         :class:`TrainConfig`, :class:`OptimConfig`, :class:`ArmConfig`,
                                         :class:`HostShard`, :func:`learning_rate`, :func:`with_overrides`
the runner                               :func:`train_and_evaluate` (what ``gensim-jax train`` runs)
objectives (one loss each)               :class:`GenSimRegression`, :class:`DistanceRegression`,
                                         :class:`TripletObjective`, :class:`NTXent`, :class:`SupCon`,
                                         :class:`Sincere`, :class:`CrossEntropy`, :class:`CenterLoss`,
                                         :class:`Objective`
targets (log s computed in the step)     :class:`Target`, :class:`FunctionTarget`, :class:`TableTarget`,
                                         :class:`BetaBernoulliTarget`, :class:`GaussianMixtureTarget`
encoders                                 :func:`get_model`, :func:`list_models`
closed-form kernels (modules)            ``beta_bernoulli``, ``categorical``, ``gaussian_mixture``,
                                         ``hierarchy``, ``trees``, ``targets``
figures                                  :func:`figure`, :func:`save_figure` (matplotlib, no pyplot state)
=======================================  =====================================================================

Why a module of its own, named ``fork``: the library's packages are arranged for its own layers
(``training.experiment``, ``training.objectives``, ``config``, ``models``, ``kernels``), and a module
can move between them (``HostShard`` moved to ``gensim_jax.parallel``, the config system to
``gensim_jax.config``); the name says whom the promise is for, and one import line survives such moves.
"""

from __future__ import annotations

from gensim_jax.config import with_overrides
from gensim_jax.deprecation import Renamed, module_getattr
from gensim_jax.evaluation.plotting import figure, save_figure
from gensim_jax.kernels import beta_bernoulli, categorical, gaussian_mixture, hierarchy, targets, trees
from gensim_jax.models import get_model, list_models
from gensim_jax.training.experiment import (
    Arm,
    ArmConfig,
    Experiment,
    HostShard,
    ImageExperiment,
    OptimConfig,
    TrainConfig,
    learning_rate,
)
from gensim_jax.training.objectives import (
    BetaBernoulliTarget,
    CenterLoss,
    CrossEntropy,
    DistanceRegression,
    FunctionTarget,
    GaussianMixtureTarget,
    GenSimRegression,
    NTXent,
    Objective,
    Sincere,
    SupCon,
    TableTarget,
    Target,
    TripletObjective,
)
from gensim_jax.training.runner import train_and_evaluate

__all__ = [
    # the experiment interface
    "Arm",
    "ArmConfig",
    "Experiment",
    "HostShard",
    "ImageExperiment",
    "OptimConfig",
    "TrainConfig",
    "learning_rate",
    "with_overrides",
    # the runner
    "train_and_evaluate",
    # objectives
    "CenterLoss",
    "CrossEntropy",
    "DistanceRegression",
    "GenSimRegression",
    "NTXent",
    "Objective",
    "Sincere",
    "SupCon",
    "TripletObjective",
    # targets
    "BetaBernoulliTarget",
    "FunctionTarget",
    "GaussianMixtureTarget",
    "TableTarget",
    "Target",
    # encoders
    "get_model",
    "list_models",
    # closed-form kernels (modules, promised with their own __all__)
    "beta_bernoulli",
    "categorical",
    "gaussian_mixture",
    "hierarchy",
    "targets",
    "trees",
    # figures
    "figure",
    "save_figure",
]

#: Names of this surface that were renamed: ``{old: Renamed(old, new, since)}``; each old name still imports
#: from here (with a warning) until the release that removes it.  Empty: nothing here has been renamed yet.
DEPRECATED: dict[str, Renamed] = {}
__getattr__ = module_getattr(__name__, DEPRECATED, globals())
