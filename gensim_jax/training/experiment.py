"""The experiment interface: what an experiment declares, so that one runner can train it anywhere.

An experiment is a subclass of :class:`Experiment` in one file (the five of the papers live in
:mod:`gensim_jax.experiments`; a research fork adds its own file there, or passes the file's path to
``gensim-jax train``).  It declares *what* is trained and measured; the runner
(:func:`gensim_jax.training.runner.run_experiment`) does the rest in the same way for every
experiment: distributed set-up, mesh, optimizer, train state, the jitted step, the loop with
checkpoints and exact resume, exports, records and figures, with files written by process 0 only.

What a declaration provides (methods with a default are optional):

=========================  ========================================================================
``Config``, ``CONFIGS``    a frozen dataclass deriving from :class:`TrainConfig`, with sections
                           ``data``, ``model``, ``objectives.<arm>``, ``eval``; named variants
                           (``paper``, ``cpu_small``, ``demo``, ...; derived with ``with_overrides``)
``validate(config)``       range checks (``ValueError`` naming the field); returns the config
``prepare(config)``        data shared by all runs (sources, test sets): built once per call
``arms(config)``           the names trained in every run (default: ``config.arms``)
``model(arm, config)``     ``(flax module, registry name, registry kwargs)``
``init_variables(...)``    initial variables (default: ``model.init`` on one example)
``objective(arm, config)`` the :class:`~gensim_jax.training.objectives.Objective`
``batches(arm, ..., shard)`` ``position -> iterator`` of THIS process's rows of every global batch
                           (:class:`HostShard`; deterministic, resumable)
``device_augment(arm, ...)`` the random augmentation the jitted step draws (default none;
                           :class:`ImageExperiment`: the SimCLR preset when ``data.augment`` is ``device``)
``num_steps(config, data)`` optimizer steps of one run (default: ``num_steps`` or epochs x examples)
``evaluate_run(...)``      the evaluation of one trained run (a JSON-able dict)
``baselines(...)``         evaluations of untrained references (pixels, initial network)
``summarize(...)``         the results dict from all evaluations
``plot(results, path)``    the figure;  ``format_table(results)``: the Markdown table printed at the end
=========================  ========================================================================
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Mapping, Optional

import jax
import numpy as np

from gensim_jax.config import ArmConfig, from_dict, is_section, with_overrides
from gensim_jax.training.optim import OptimConfig, check_optimizer_fields

__all__ = [
    "ArmConfig",
    "TrainConfig",
    "Experiment",
    "ImageExperiment",
    "HostShard",
    "COMPUTE_DTYPES",
    "OptimConfig",
    "check_train_config",
]

COMPUTE_DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Fields every experiment's config has (set any of them with ``--set KEY=VALUE``).

    The run-level fields sit at the top; an experiment's ``Config`` adds its sections (``data``,
    ``model``, ``objectives.<arm>``, ``eval``), each a frozen dataclass, named on the command line
    by dotted paths (``--set optim.learning_rate=3e-4 objectives.simclr.temperature=0.2``;
    :mod:`gensim_jax.training.config`).

    Attributes:
      seed: seed of run 0; run ``r`` uses ``seed + r``.
      num_runs: independent runs (seeds) of every arm.
      num_steps: optimizer steps of one run; ``None`` derives them from ``epochs``.
      epochs: passes over the training examples when ``num_steps`` is None.
      batch_size: the GLOBAL batch, over all processes and devices (each process loads
        ``batch_size / process_count`` rows; it must divide over the devices of the mesh).
      optim: the optimizer and its schedule (:class:`~gensim_jax.training.optim.OptimConfig`).
      dtype: compute dtype of the encoder, ``float32`` or ``bfloat16`` (parameters, optimizer state
        and losses stay float32).
      mesh_data, mesh_fsdp: the ``(data, fsdp)`` device mesh (``-1``: all remaining devices);
        ``mesh_fsdp > 1`` shards parameters and optimizer state (FSDP) over that axis.
      log_every: metrics leave the device every this many steps (their mean over the window).
      checkpoint_every: asynchronous checkpoint period in steps (the last step is always saved).
    """

    seed: int = 0
    num_runs: int = 1
    num_steps: Optional[int] = None
    epochs: float = 1.0
    batch_size: int = 32
    optim: OptimConfig = OptimConfig()
    dtype: str = "float32"
    mesh_data: int = -1
    mesh_fsdp: int = 1
    log_every: int = 50
    checkpoint_every: int = 1000


def check_train_config(config: TrainConfig) -> None:
    """``ValueError`` naming the (dotted) field when a :class:`TrainConfig` field is out of range."""
    if config.num_runs < 1:
        raise ValueError(f"num_runs must be >= 1, got {config.num_runs}")
    if config.num_steps is not None and config.num_steps < 0:
        raise ValueError(f"num_steps must be >= 0 (or null to use epochs), got {config.num_steps}")
    if config.num_steps is None and not config.epochs > 0:
        raise ValueError(f"epochs must be positive, got {config.epochs}")
    if config.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {config.batch_size}")
    if config.dtype not in COMPUTE_DTYPES:
        raise ValueError(f"dtype must be one of {COMPUTE_DTYPES}, got {config.dtype!r}")
    if config.mesh_fsdp < 1 or (config.mesh_data < 1 and config.mesh_data != -1):
        raise ValueError(
            f"mesh_data must be -1 or >= 1 and mesh_fsdp >= 1, got {config.mesh_data} x {config.mesh_fsdp}"
        )
    if config.log_every < 1:
        raise ValueError(f"log_every must be >= 1, got {config.log_every}")
    if config.checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {config.checkpoint_every}")
    check_optimizer_fields(config.optim)
    arms = getattr(config, "objectives", None)
    if is_section(arms):
        for f in dataclasses.fields(arms):
            lr = getattr(getattr(arms, f.name), "learning_rate", None)
            if lr is not None and not lr > 0:
                raise ValueError(
                    f"objectives.{f.name}.learning_rate must be positive (or null: optim.learning_rate), got {lr}"
                )


@dataclasses.dataclass(frozen=True)
class HostShard:
    """This process's share of every global batch: what :meth:`Experiment.batches` builds.

    Process ``index`` of ``count`` feeds rows ``[index b, (index + 1) b)`` of every global batch of
    ``global_batch`` rows, ``b = global_batch / count`` (:attr:`batch`); the runner assembles the
    global array from every process's rows (:func:`gensim_jax.parallel.shard_batch`).  A source
    builds only those rows, so host work per process falls as processes are added, and the set of
    examples in a global batch must not depend on ``count``: row ``j`` of global batch ``s`` is
    stream position ``s * global_batch + j`` (:meth:`positions`), which the data pipelines
    (:mod:`gensim_jax.data.pipelines`, ``process_index`` / ``process_count``) and
    :class:`~gensim_jax.data.indexing.StreamIndex` follow.

    Example:
      >>> shard = HostShard(index=1, count=2, global_batch=8)
      >>> shard.batch, shard.rows, shard.positions(3).tolist()
      (4, slice(4, 8, None), [28, 29, 30, 31])
    """

    index: int = 0
    count: int = 1
    global_batch: int = 1

    def __post_init__(self):
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"need 0 <= index < count, got index={self.index}, count={self.count}")
        if self.global_batch < 1 or self.global_batch % self.count:
            raise ValueError(
                f"the global batch ({self.global_batch}) must be a positive multiple of the {self.count} processes"
            )

    @classmethod
    def of_this_process(cls, global_batch: int) -> "HostShard":
        """The shard of the calling process (``jax.process_index()`` of ``jax.process_count()``)."""
        return cls(jax.process_index(), jax.process_count(), int(global_batch))

    @property
    def batch(self) -> int:
        """Rows this process builds per global batch."""
        return self.global_batch // self.count

    @property
    def rows(self) -> slice:
        """This process's rows of a global batch."""
        return slice(self.index * self.batch, (self.index + 1) * self.batch)

    def positions(self, step: int) -> np.ndarray:
        """``(batch,)`` int64 global stream positions of this process's rows of global batch ``step``."""
        start = int(step) * self.global_batch + self.index * self.batch
        return np.arange(start, start + self.batch, dtype=np.int64)

    @property
    def pipeline_kwargs(self) -> dict:
        """``batch_size``, ``process_index``, ``process_count`` for :mod:`gensim_jax.data.pipelines` builders."""
        return {"batch_size": self.batch, "process_index": self.index, "process_count": self.count}


class Experiment:
    """Base class of an experiment declaration (see the module docstring for the contract).

    Class attributes:
      name: the command-line name (default: the module's last name).
      Config: the config dataclass (a :class:`TrainConfig`).
      CONFIGS: ``{name: Config(...)}``; the first one is the default when there is no ``paper``.
      OBJECTIVES: the arm names a config's ``arms`` may select (``--objective``), or ``()``.
      MODELS: the encoders ``--model`` (``model.name``) accepts (``None``: any registered one).
      summary: one line for ``--help`` (default: the first line of the module docstring).
    """

    name: str = ""
    Config: type = TrainConfig
    CONFIGS: Mapping[str, Any] = {}
    OBJECTIVES: tuple = ()
    MODELS: Optional[tuple] = None
    summary: str = ""

    # ---- configuration -------------------------------------------------------------------
    def get_config(self, name: Optional[str] = None, **overrides) -> Any:
        """The named config with ``overrides`` (dotted names, ``**{"optim.learning_rate": 3e-4}``) applied
        (:func:`~gensim_jax.training.config.with_overrides`; JSON lists become tuples), validated."""
        name = self.default_config() if name is None else name
        if name not in self.CONFIGS:
            raise ValueError(f"unknown config {name!r} for {self.name}; known: {', '.join(self.CONFIGS)}")
        return self.validate(with_overrides(self.CONFIGS[name], overrides))

    def config_from_dict(self, fields: Mapping[str, Any]) -> Any:
        """The validated config of a recorded one (``config.json``, an export's ``run_config``; nested sections as
        ``dataclasses.asdict`` writes them): JSON lists become tuples; ``ValueError`` naming fields (dotted)
        the ``Config`` does not have."""
        try:
            config = from_dict(self.Config, fields)
        except ValueError as err:
            raise ValueError(f"{self.name}: the recorded config does not fit {self.Config.__name__}: {err}") from None
        return self.validate(config)

    def default_config(self) -> str:
        """``paper`` when declared, else the first config."""
        return "paper" if "paper" in self.CONFIGS or not self.CONFIGS else next(iter(self.CONFIGS))

    def validate(self, config) -> Any:
        """Check ``config`` (``ValueError`` naming the field) and return it; extend with ``super().validate``."""
        check_train_config(config)
        arms = getattr(config, "arms", None)
        if self.OBJECTIVES and arms is not None:
            bad = [o for o in arms if o not in self.OBJECTIVES]
            if bad or not arms:
                raise ValueError(f"arms must be a non-empty subset of {self.OBJECTIVES}, got {arms}")
        return config

    # ---- what is trained -----------------------------------------------------------------
    def prepare(self, config) -> Any:
        """Data shared by every run (training sources, test sets); called once per :func:`run_experiment`."""
        return None

    def prepare_evaluation(self, config) -> Any:
        """What :meth:`evaluate_run` reads of the shared data, for re-evaluating an export
        (:func:`gensim_jax.training.runner.evaluate_export`); default: all of :meth:`prepare`.
        Experiments whose training data is expensive (rendered images) build the test sets only."""
        return self.prepare(config)

    def arms(self, config) -> tuple:
        """Names of what each run trains (directories ``workdir/<arm>/run<r>``; default ``config.arms``)."""
        return tuple(config.arms)

    def num_train_examples(self, config, data) -> int:
        """Training examples per epoch (for ``epochs``); experiments that use ``epochs`` override it."""
        raise ValueError(f"{self.name}: set num_steps (this experiment does not define an epoch)")

    def num_steps(self, config, data) -> int:
        """Optimizer steps of one run: ``num_steps``, else ``ceil(epochs * examples / batch_size)``."""
        if config.num_steps is not None:
            return int(config.num_steps)
        return int(math.ceil(config.epochs * self.num_train_examples(config, data) / config.batch_size))

    def learning_rate(self, arm: str, config) -> float:
        """Peak learning rate of ``arm``: ``objectives.<arm>.learning_rate`` when the config has that section and
        it is set, else ``optim.learning_rate``."""
        own = getattr(getattr(getattr(config, "objectives", None), str(arm), None), "learning_rate", None)
        return float(config.optim.learning_rate if own is None else own)

    def model(self, arm: str, config) -> tuple:
        """``(module, registry name, registry kwargs)`` of the encoder trained for ``arm``."""
        raise TypeError(f"{type(self).__name__} must define model(arm, config)")

    def example_input(self, arm: str, config) -> np.ndarray:
        """One input example ``(1, ...)`` for ``model.init`` (:class:`ImageExperiment`: a square RGB image)."""
        raise TypeError(
            f"{type(self).__name__} must define example_input(arm, config) (or derive from ImageExperiment)"
        )

    def init_variables(self, arm: str, config, model, seed: int) -> dict:
        """Initial variables of run ``seed`` (default: ``model.init`` with JAX's ``rbg`` key of ``seed``).

        ``rbg`` is deterministic like the default threefry key and its initialiser compiles about
        4x faster on a CPU (1.6 s against 6 s for LeNet-5), which dominates short runs.
        """
        return _jit_init(model)(jax.random.key(seed, impl="rbg"), self.example_input(arm, config))

    def objective(self, arm: str, config):
        """The :class:`~gensim_jax.training.objectives.Objective` of ``arm``."""
        raise TypeError(f"{type(self).__name__} must define objective(arm, config)")

    def batches(
        self, arm: str, config, data, seed: int, shard: HostShard
    ) -> Callable[[int], Iterable[Mapping[str, Any]]]:
        """``position -> iterator`` of this process's rows (``shard``) of every global batch from ``position`` on.

        Deterministic and resumable: the batches from ``position`` on equal those of an uninterrupted
        stream, and the rows of all processes together are the same global batch for any process
        count.  Images travel as ``uint8`` and are normalised inside the jitted step as
        ``export_info(...)["preprocess"]`` says (:func:`gensim_jax.training.step.normalize_inputs`).
        """
        raise TypeError(f"{type(self).__name__} must define batches(arm, config, data, seed, shard)")

    def device_augment(self, arm: str, config):
        """The augmentation the jitted step applies to ``arm``'s batches before normalising them
        (a hashable :class:`~gensim_jax.data.device_augment.DeviceAugment`), or None (default: the
        batches arrive ready, augmented on the host if at all)."""
        return None

    def metadata_spec(self, arm: str, config) -> dict:
        """``{key: (per-example shape, dtype)}`` of the metadata the objective reads besides labels and table ids
        (feature vectors, counts, points): what :meth:`batch_spec` cannot know without data. Default none."""
        return {}

    def batch_spec(self, arm: str, config) -> dict:
        """``{key: (per-example shape, dtype)}`` of one training batch of ``arm``, known without its data.

        What ``gensim-jax plan`` compiles the step for, and what the runner checks the first batch
        against.  The default: the objective's inputs shaped like :meth:`example_input` (of
        :meth:`input_dtype`), an int32 id for a ``label_key`` and for a table target's ``key``,
        :meth:`metadata_spec`, and the boolean ``mask``.  A ``ValueError`` names a batch entry the
        objective reads whose shape none of these gives.
        """
        objective = self.objective(arm, config)
        example = np.asarray(self.example_input(arm, config))
        spec = {k: (example.shape[1:], self.input_dtype(arm, config)) for k in objective.input_keys}
        if getattr(objective, "label_key", None):
            spec[objective.label_key] = ((), np.int32)
        target = getattr(objective, "target", None)
        if target is not None and hasattr(target, "table"):
            spec[target.key] = ((), np.int32)
        spec.update({k: (tuple(shape), dtype) for k, (shape, dtype) in self.metadata_spec(arm, config).items()})
        reads = [getattr(target, "key", None), getattr(objective, "feature_key", None)]
        missing = [k for k in reads if k and k not in spec]
        if missing:
            raise ValueError(
                f"{self.name}: the {arm!r} objective reads batch{missing} whose per-example shape is unknown "
                f"without data; return it from {type(self).__name__}.metadata_spec(arm, config), "
                "e.g. {'features': ((22,), np.float32)}"
            )
        spec["mask"] = ((), np.bool_)
        return spec

    def input_dtype(self, arm: str, config):
        """The dtype of the encoder's inputs in a batch (default float32; images travel as ``uint8``)."""
        return np.float32

    def export_info(self, arm: str, config) -> dict:
        """Keyword arguments of :func:`~gensim_jax.training.export.export_variables` besides the model.

        ``preprocess`` names how the step normalises ``uint8`` inputs and how an evaluation of the
        export prepares images (:data:`gensim_jax.training.step.INPUT_PREPROCESSING`); default ``none``.
        """
        return {"preprocess": "none"}

    # ---- what is measured ----------------------------------------------------------------
    def baselines(self, config, data) -> dict:
        """``{name: [evaluation]}`` of untrained references (pixels, initial network); default none."""
        return {}

    def evaluate_run(self, arm: str, config, data, model, variables, seed: int) -> dict:
        """The evaluation of one trained run (JSON-able); default: nothing."""
        return {}

    def periodic_eval(self, arm: str, config, data, model) -> Optional[tuple]:
        """``(every, fn(state, step) -> dict)`` to evaluate during training (logged as ``eval/...``), or None."""
        return None

    def summarize(self, config, data, evaluations: dict, training: dict) -> dict:
        """The results dict; ``evaluations = {name: [per-run evaluation]}``, ``training = {arm: [record]}``."""
        return {"evaluations": evaluations}

    def plot(self, results: dict, path) -> Optional[str]:
        """Draw the experiment's figure at ``path`` (a ``.png``); return None to draw nothing."""
        return None

    def format_table(self, results: dict) -> str:
        """The Markdown table printed at the end of ``gensim-jax train``."""
        return ""

    def intro(self, config) -> Optional[str]:
        """A line printed before training (e.g. a note on missing pretrained weights)."""
        return None


class ImageExperiment(Experiment):
    """An :class:`Experiment` whose encoders read square RGB images of ``config.data.image_size``.

    Batches carry the images as ``uint8`` in ``[0, 255]`` (:meth:`input_dtype`), normalised with the
    ImageNet statistics inside the jitted step (``preprocess="imagenet"``; override
    :meth:`export_info` for another normalisation); ``model.init`` sees one float32 image.

    Random augmentation: a config whose ``data`` section has ``augment`` (``"auto"``, ``"host"``,
    ``"device"``; :func:`gensim_jax.data.device_augment.resolve_augment` turns ``auto`` into one of
    the others by the JAX backend, and :meth:`validate` stores the resolved value, so the saved config
    says which ran) and a class with :attr:`AUGMENT_PRESET` draws the ``simclr`` arm's views on the
    device when it is ``device`` (:meth:`device_augment`); the batches then carry ``image`` at the
    load size and ``augment_seed`` instead of the views (:meth:`batch_spec`).
    """

    #: the smallest image size the encoders take
    MIN_IMAGE_SIZE = 32
    #: :func:`gensim_jax.data.device_augment.simclr_preset` kind of the ``simclr`` arm's views (None: no device views)
    AUGMENT_PRESET: Optional[str] = None

    def image_size(self, config) -> int:
        """The side of the square input images (default ``config.data.image_size``)."""
        return int(config.data.image_size)

    def validate(self, config) -> Any:
        """The :class:`Experiment` checks, ``image_size(config) >= MIN_IMAGE_SIZE`` and ``data.augment``
        (returns the config with ``data.augment`` resolved: ``auto`` becomes ``host`` or ``device``)."""
        config = super().validate(config)
        if self.image_size(config) < self.MIN_IMAGE_SIZE:
            raise ValueError(
                f"data.image_size must be >= {self.MIN_IMAGE_SIZE} (the encoders' input), got {self.image_size(config)}"
            )
        data = getattr(config, "data", None)
        if data is not None and hasattr(data, "augment"):
            from gensim_jax.data.device_augment import resolve_augment

            resolved = resolve_augment(data.augment)
            if resolved != data.augment:
                config = dataclasses.replace(config, data=dataclasses.replace(data, augment=resolved))
        return config

    def device_augment(self, arm: str, config):
        """The :attr:`AUGMENT_PRESET` views of the ``simclr`` arm when ``data.augment`` resolves to ``device``, else None."""
        data = getattr(config, "data", None)
        mode = getattr(data, "augment", "host")
        if self.AUGMENT_PRESET is None or arm != "simclr" or mode == "host":
            return None
        from gensim_jax.data.device_augment import resolve_augment, simclr_preset

        if resolve_augment(mode) != "device":
            return None
        return simclr_preset(self.AUGMENT_PRESET, self.image_size(config), config.objectives.simclr)

    def batch_spec(self, arm: str, config) -> dict:
        """:meth:`Experiment.batch_spec`; with a :meth:`device_augment`, its views replaced by what the host sends:
        ``image`` ``uint8`` at the load size (``image_size`` square, 3 channels) and ``augment_seed`` ``(2,)``."""
        spec = super().batch_spec(arm, config)
        augment = self.device_augment(arm, config)
        if augment is None:
            return spec
        s = self.image_size(config)
        mask = spec.pop("mask")
        for k in augment.output_keys:
            spec.pop(k, None)
        spec.update(augment.input_spec((s, s, 3)))
        spec["mask"] = mask
        return spec

    def check_batch_size(self, config, num_train_images: int) -> None:
        """``ValueError`` unless ``2 <= batch_size <= num_train_images`` (the training images of ``data``)."""
        if config.batch_size < 2 or config.batch_size > num_train_images:
            raise ValueError(
                f"batch_size must lie in [2, the {num_train_images} training images (data)], got {config.batch_size}"
            )

    def example_input(self, arm: str, config) -> np.ndarray:
        s = self.image_size(config)
        return np.zeros((1, s, s, 3), np.float32)

    def input_dtype(self, arm: str, config):
        return np.uint8

    def export_info(self, arm: str, config) -> dict:
        return {"image_size": self.image_size(config), "preprocess": "imagenet"}


_INIT_CACHE: dict = {}


def _jit_init(model):
    """One ``jax.jit(model.init)`` per module (equal modules share it: initialising a second run compiles nothing)."""
    try:
        return _INIT_CACHE.setdefault(model, jax.jit(model.init))
    except TypeError:  # an unhashable module
        return jax.jit(model.init)
