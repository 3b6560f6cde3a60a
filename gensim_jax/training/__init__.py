"""Training system: TrainState, objectives (one pure loss each), the generic step, checkpoints, the loop.

===================================  ================================================================================
``gensim_jax.training.state``        :class:`TrainState`, :func:`create_train_state`
``gensim_jax.training.objectives``   GenSim regression / distance regression / triplets / NT-Xent /
                                     SupCon / SINCERE / cross entropy / centre loss, and the targets
``gensim_jax.training.step``         :func:`train_step` (with gradient accumulation), :func:`eval_step`
``gensim_jax.training.checkpoints``  orbax checkpoints (async, SIGTERM/SIGINT, damaged-step fallback), :func:`restore_or_init`
``gensim_jax.training.loop``         :func:`train` with progress bar, eval hook, JSON-lines metrics
``gensim_jax.training.export``       :func:`export_variables` / :func:`load_exported` (variables + model description)
===================================  ================================================================================
"""

from gensim_jax._extras import require

require("optax", "train")
require("orbax.checkpoint", "train")
require("tqdm", "train")

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
    forward,
)
from gensim_jax.training.state import TrainState, create_train_state, step_key
from gensim_jax.training.step import eval_step, make_eval_step, make_train_step, split_microbatches, train_step

__all__ = [
    "BetaBernoulliTarget",
    "FunctionTarget",
    "CenterLoss",
    "CrossEntropy",
    "DistanceRegression",
    "GaussianMixtureTarget",
    "GenSimRegression",
    "NTXent",
    "Objective",
    "Sincere",
    "SupCon",
    "TableTarget",
    "Target",
    "TrainState",
    "TripletObjective",
    "create_train_state",
    "eval_step",
    "forward",
    "make_eval_step",
    "make_train_step",
    "split_microbatches",
    "step_key",
    "train_step",
]

from gensim_jax.training.checkpoints import (  # noqa: E402
    Checkpointer,
    CheckpointFallbackWarning,
    CheckpointRestoreError,
    PreemptionGuard,
    restore_or_init,
)
from gensim_jax.training.loop import TrainResult, read_metrics, save_run_config, train  # noqa: E402

__all__ += [
    "CheckpointFallbackWarning",
    "CheckpointRestoreError",
    "Checkpointer",
    "PreemptionGuard",
    "TrainResult",
    "read_metrics",
    "restore_or_init",
    "save_run_config",
    "train",
]
from gensim_jax.training.export import export_variables, load_exported  # noqa: E402

__all__ += ["export_variables", "load_exported"]

# the per-process rows of every global batch, which an experiment's batches build (defined in gensim_jax.parallel)
from gensim_jax.parallel import HostShard  # noqa: E402

__all__ += ["HostShard"]
