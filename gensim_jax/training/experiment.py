"""The experiment interface: what an experiment declares, so that one runner can train it anywhere.

An experiment is a subclass of :class:`Experiment` in one file (the five of the papers live in
:mod:`gensim_jax.experiments`; a research fork adds its own file there, or passes the file's path to
``gensim-jax train``).  It declares *what* is trained and measured; the runner
(:func:`gensim_jax.training.runner.train_and_evaluate`) does the rest in the same way for every
experiment: distributed set-up, mesh, optimizer, train state, the jitted step, the loop with
checkpoints and exact resume, exports, records and figures, with files written by process 0 only.

What a declaration provides (this is the public interface a fork codes against; methods with a
default are optional):

=============================  ====================================================================
``Config``, ``CONFIGS``        a frozen dataclass deriving from :class:`TrainConfig`, with sections
                               ``data``, ``model``, ``objectives.<arm>``, ``eval``; named variants
                               (``paper``, ``cpu_small``, ``demo``, ...; derived with ``with_overrides``)
``validate(config)``           range checks (``ValueError`` naming the field); returns the config
``prepare(config, training)``  data shared by all runs (sources, test sets), built once per call;
                               ``training=False``: only what evaluation reads (re-evaluating an export)
``arm(name, config, data)``    **the one builder**: an :class:`Arm` holding everything the runner
                               needs for that arm (model, objective, batches, input preprocessing,
                               augmentation, evaluation)
``num_train_examples(...)``    examples per epoch, for configs that set ``epochs`` (``num_steps``: the
                               optimizer steps of one run, derived from it)
``baselines(config, data)``    evaluations of untrained references (pixels, initial network)
``summarize``, ``plot``,       the results over all runs, their figure and their Markdown table
``format_table``
=============================  ====================================================================

A file written for the earlier interface (the per-arm hooks ``model``, ``objective``, ``batches``,
``evaluate_run``, ... or a config whose ``objectives`` is a tuple of names) is refused when its class
is defined, with one line naming the change (docs/EXPERIMENTS.md, "Migrating a fork").  A renamed config
field of :data:`DEPRECATED_FIELDS` (a run-level ``learning_rate``) still trains, with a deprecation warning
naming its replacement, until the release that removes it (docs/EXPERIMENTS.md, "Deprecation policy").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Mapping, Optional

import jax
import numpy as np

from gensim_jax.config import ArmConfig, from_dict, is_section, with_overrides
from gensim_jax.deprecation import Renamed, warn_renamed
from gensim_jax.parallel import HostShard
from gensim_jax.training.optim import OptimConfig, check_optimizer_fields

__all__ = [
    "Arm",
    "ArmConfig",
    "InterfaceError",
    "learning_rate",
    "TrainConfig",
    "Experiment",
    "ImageExperiment",
    "HostShard",
    "COMPUTE_DTYPES",
    "OptimConfig",
    "check_train_config",
    "DEPRECATED_FIELDS",
]

COMPUTE_DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Fields every experiment's config has (set any of them with ``--set KEY=VALUE``).

    The run-level fields sit at the top; an experiment's ``Config`` adds its sections (``data``,
    ``model``, ``objectives.<arm>``, ``eval``), each a frozen dataclass, named on the command line
    by dotted paths (``--set optim.learning_rate=3e-4 objectives.simclr.temperature=0.2``;
    :mod:`gensim_jax.config`).

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


def learning_rate(config, arm: str) -> float:
    """Peak learning rate of ``arm``: ``objectives.<arm>.learning_rate`` when the config has that section and it
    is set, else ``optim.learning_rate``."""
    own = getattr(getattr(getattr(config, "objectives", None), str(arm), None), "learning_rate", None)
    return float(config.optim.learning_rate if own is None else own)


@dataclasses.dataclass(frozen=True)
class Arm:
    """One arm of an experiment, as :meth:`Experiment.arm` builds it: what the runner trains, exports and evaluates.

    Attributes:
      model: the flax module (float32; the runner makes the compute-``dtype`` copy it trains).
      objective: the :class:`~gensim_jax.training.objectives.Objective`.
      batches: ``(seed, shard) -> (position -> iterator)`` of THIS process's rows (a :class:`HostShard`)
        of every global batch from ``position`` on.  Deterministic and resumable: the batches from
        ``position`` on equal those of an uninterrupted stream, and the rows of all processes together
        are the same global batch for any process count.  Images travel as ``uint8`` and are
        normalised inside the jitted step as ``export["preprocess"]`` says
        (:func:`gensim_jax.training.step.normalize_inputs`).
      example_input: one input example ``(1, ...)`` float32 for ``model.init``.
      model_name, model_kwargs: the registry name and keyword arguments that rebuild ``model`` from an export.
      evaluate: ``(model, variables, seed) -> dict`` (JSON-able): the evaluation of a trained run, the
        same call that ``gensim-jax eval export`` makes on its export; None: nothing.
      init: ``seed -> variables`` (default: ``model.init`` on :attr:`example_input` with JAX's ``rbg``
        key of ``seed``; :meth:`init_variables`).
      input_dtype: the dtype of the encoder's inputs in a batch (images: ``uint8``).
      metadata: ``{key: (per-example shape, dtype)}`` of what the objective reads besides the inputs,
        labels and table ids (feature vectors, counts, points), which :meth:`batch_spec` cannot know
        without data.
      export: keyword arguments of :func:`~gensim_jax.training.export.export_variables` besides the
        model; ``preprocess`` names how the step normalises ``uint8`` inputs and how an evaluation
        prepares images (:data:`gensim_jax.training.step.INPUT_PREPROCESSING`).
      augment: the random augmentation the jitted step draws before normalising (a hashable
        :class:`~gensim_jax.data.device_augment.DeviceAugment`), or None (batches arrive ready).
      periodic_eval: ``(every, fn(variables, step) -> dict)`` evaluated during training (logged as
        ``eval/...``), or None.
    """

    model: Any
    objective: Any
    batches: Callable[[int, HostShard], Callable[[int], Iterable[Mapping[str, Any]]]]
    example_input: np.ndarray
    model_name: str = ""
    model_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    evaluate: Optional[Callable[[Any, Any, int], dict]] = None
    init: Optional[Callable[[int], dict]] = None
    input_dtype: Any = np.float32
    metadata: Mapping[str, tuple] = dataclasses.field(default_factory=dict)
    export: Mapping[str, Any] = dataclasses.field(default_factory=lambda: {"preprocess": "none"})
    augment: Any = None
    periodic_eval: Optional[tuple] = None

    @property
    def preprocess(self) -> str:
        """How the step normalises the inputs (``export["preprocess"]``, default ``none``)."""
        return str(self.export.get("preprocess", "none"))

    def init_variables(self, seed: int) -> dict:
        """Initial variables of run ``seed``: :attr:`init`, else ``model.init`` with JAX's ``rbg`` key of ``seed``.

        ``rbg`` is deterministic like the default threefry key and its initialiser compiles about
        4x faster on a CPU (1.6 s against 6 s for LeNet-5), which dominates short runs.
        """
        if self.init is not None:
            return self.init(seed)
        return _jit_init(self.model)(jax.random.key(seed, impl="rbg"), self.example_input)

    def evaluation(self, model, variables, seed: int) -> dict:
        """:attr:`evaluate` of a trained run (``{}`` when the arm evaluates nothing)."""
        return {} if self.evaluate is None else self.evaluate(model, variables, seed)

    def batch_spec(self) -> dict:
        """``{key: (per-example shape, dtype)}`` of one training batch, known without its data.

        What ``gensim-jax plan`` compiles the step for, and what the runner checks the first batch
        against: the objective's inputs shaped like :attr:`example_input` (of :attr:`input_dtype`), an
        int32 id for a ``label_key`` and for a table target's ``key``, :attr:`metadata` and the boolean
        ``mask``; with an :attr:`augment`, its views replaced by what the host sends (``image`` at the
        load size and ``augment_seed``).  A ``ValueError`` names a batch entry the objective reads
        whose shape none of these gives.
        """
        objective = self.objective
        example = np.asarray(self.example_input)
        spec = {k: (example.shape[1:], self.input_dtype) for k in objective.input_keys}
        if getattr(objective, "label_key", None):
            spec[objective.label_key] = ((), np.int32)
        target = getattr(objective, "target", None)
        if target is not None and hasattr(target, "table"):
            spec[target.key] = ((), np.int32)
        spec.update({k: (tuple(shape), dtype) for k, (shape, dtype) in self.metadata.items()})
        reads = [getattr(target, "key", None), getattr(objective, "feature_key", None)]
        missing = [k for k in reads if k and k not in spec]
        if missing:
            raise ValueError(
                f"the objective reads batch{missing} whose per-example shape is unknown without data; "
                "give it in Arm(metadata=...), e.g. {'features': ((22,), np.float32)}"
            )
        if self.augment is not None:
            for k in self.augment.output_keys:
                spec.pop(k, None)
            spec.update(self.augment.input_spec(tuple(example.shape[1:])))
        spec["mask"] = ((), np.bool_)
        return spec


#: The per-arm hooks of the earlier interface, each now a field of :class:`Arm` (or of :meth:`Experiment.prepare`).
OLD_HOOKS = {
    "model": "Arm(model=..., model_name=..., model_kwargs=...)",
    "objective": "Arm(objective=...)",
    "batches": "Arm(batches=lambda seed, shard: ...)",
    "evaluate_run": "Arm(evaluate=lambda model, variables, seed: ...)",
    "periodic_eval": "Arm(periodic_eval=(every, fn))",
    "init_variables": "Arm(init=lambda seed: ...)",
    "example_input": "Arm(example_input=...)",
    "input_dtype": "Arm(input_dtype=...)",
    "metadata_spec": "Arm(metadata=...)",
    "batch_spec": "Arm.batch_spec() (derived)",
    "export_info": "Arm(export=...)",
    "device_augment": "Arm(augment=...)",
    "learning_rate": "objectives.<arm>.learning_rate",
    "prepare_evaluation": "prepare(config, training=False)",
}


#: Config fields of the experiment interface that were renamed and still work, with a
#: :class:`~gensim_jax.deprecation.GensimJaxDeprecationWarning` when the class is defined, until the release
#: that removes them (docs/EXPERIMENTS.md, "Deprecation policy").  :meth:`Experiment.validate` applies them.
DEPRECATED_FIELDS = {
    "learning_rate": Renamed(
        "learning_rate",
        "optim.learning_rate",
        "0.2.0",
        note="declare optim: OptimConfig = OptimConfig(learning_rate=...); meanwhile the run-level field sets "
        "optim.learning_rate",
    ),
}


def _apply_deprecated_fields(config):
    """``config`` with the values of its deprecated fields (:data:`DEPRECATED_FIELDS`) moved to their new places:
    a run-level ``learning_rate`` becomes ``optim.learning_rate``."""
    names = {f.name for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else set()
    if "learning_rate" in names and hasattr(config, "optim"):
        lr = float(config.learning_rate)
        if config.optim.learning_rate != lr:
            config = dataclasses.replace(config, optim=dataclasses.replace(config.optim, learning_rate=lr))
    return config


class InterfaceError(TypeError):
    """An experiment written for an earlier interface of :class:`Experiment` (the message says what changed)."""


def _check_interface(cls) -> None:
    """:class:`InterfaceError` naming every change when ``cls`` (an experiment class being defined) uses an
    earlier interface: the per-arm hooks (now :meth:`Experiment.arm`), a config whose ``objectives`` is a
    tuple of names (now ``arms``) or whose ``learning_rate`` is a run-level field (now ``optim.learning_rate``)."""
    changes = []
    old = [h for h in OLD_HOOKS if h in vars(cls)]
    if old:
        changes.append(
            f"it defines the per-arm hooks {', '.join(old)}; an experiment now builds each arm in one method, "
            f"arm(name, config, data) -> Arm ({'; '.join(f'{h} -> {OLD_HOOKS[h]}' for h in old)})"
        )
    config = vars(cls).get("Config")
    fields = {f.name: f for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else {}
    objectives = fields.get("objectives")
    if objectives is not None and isinstance(objectives.default, tuple):
        changes.append(
            "its Config's objectives is a tuple of arm names; the arms trained are now the field arms and "
            "objectives is a section with one ArmConfig dataclass per arm"
        )
    if "learning_rate" in fields and changes:  # refused for the other changes: name this one too
        changes.append("its Config has a run-level learning_rate; it is now optim.learning_rate (an OptimConfig)")
    elif "learning_rate" in fields:  # alone, a deprecated spelling: it trains, and warns
        warn_renamed(DEPRECATED_FIELDS["learning_rate"], f"{cls.__name__}.Config", stacklevel=3)
    if changes:
        raise InterfaceError(
            f"experiment {cls.__name__} is written for an earlier interface of gensim_jax.training.experiment: "
            + "; ".join(changes)
            + " (docs/EXPERIMENTS.md, 'Migrating a fork', shows the new shape)"
        )


class Experiment:
    """Base class of an experiment declaration (see the module docstring for the contract).

    Class attributes:
      name: the command-line name (default: the module's last name).
      Config: the config dataclass (a :class:`TrainConfig`).
      CONFIGS: ``{name: Config(...)}``; the first one is the default when there is no ``paper``.
      OBJECTIVES: the arm names a config's ``arms`` may select (``--objective``), or ``()``.
      MODELS: the encoders ``--model`` (``model.name``) accepts (``None``: any registered one).
      NOTES: ``{config name: one line}`` for ``gensim-jax train --help``: what the config is and how long it
        takes on 2 CPU cores (measured), or that it is meant for accelerators.
      summary: one line for ``--help`` (default: the first line of the module docstring).
    """

    name: str = ""
    Config: type = TrainConfig
    CONFIGS: Mapping[str, Any] = {}
    OBJECTIVES: tuple = ()
    MODELS: Optional[tuple] = None
    NOTES: Mapping[str, str] = {}
    summary: str = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _check_interface(cls)

    # ---- configuration -------------------------------------------------------------------
    def get_config(self, name: Optional[str] = None, **overrides) -> Any:
        """The named config with ``overrides`` (dotted names, ``**{"optim.learning_rate": 3e-4}``) applied
        (:func:`~gensim_jax.config.with_overrides`; JSON lists become tuples), validated."""
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
        """Check ``config`` (``ValueError`` naming the field) and return it; extend with ``super().validate``.

        A deprecated field's value moves to its new place first (:data:`DEPRECATED_FIELDS`)."""
        config = _apply_deprecated_fields(config)
        check_train_config(config)
        arms = getattr(config, "arms", None)
        if self.OBJECTIVES and arms is not None:
            bad = [o for o in arms if o not in self.OBJECTIVES]
            if bad or not arms:
                raise ValueError(f"arms must be a non-empty subset of {self.OBJECTIVES}, got {arms}")
        return config

    def intro(self, config) -> Optional[str]:
        """A line printed before training (e.g. a note on missing pretrained weights)."""
        return None

    # ---- what is trained -----------------------------------------------------------------
    def prepare(self, config, training: bool = True) -> Any:
        """Data shared by every run (training sources, test sets); called once per :func:`train_and_evaluate`.

        ``training=False``: only what the evaluation reads, for re-evaluating an export
        (:func:`gensim_jax.training.runner.evaluate_export`); experiments whose training data is
        expensive (rendered images) then build the test sets only.
        """
        return None

    def arms(self, config) -> tuple:
        """Names of what each run trains (directories ``workdir/<arm>/run<r>``; default ``config.arms``)."""
        return tuple(config.arms)

    def arm(self, name: str, config, data) -> Arm:
        """Everything the runner needs to train and evaluate arm ``name``: an :class:`Arm`.

        ``data`` is what :meth:`prepare` returned, or None when the step is compiled without data
        (``gensim-jax plan``): read it inside ``batches`` and ``evaluate``, not while building.
        """
        raise TypeError(f"{type(self).__name__} must define arm(name, config, data) -> Arm")

    def num_train_examples(self, config, data) -> int:
        """Training examples per epoch (for ``epochs``); experiments that use ``epochs`` override it."""
        raise ValueError(f"{self.name}: set num_steps (this experiment does not define an epoch)")

    def num_steps(self, config, data) -> int:
        """Optimizer steps of one run: ``num_steps``, else ``ceil(epochs * examples / batch_size)``."""
        if config.num_steps is not None:
            return int(config.num_steps)
        return int(math.ceil(config.epochs * self.num_train_examples(config, data) / config.batch_size))

    # ---- what is measured ----------------------------------------------------------------
    def baselines(self, config, data) -> dict:
        """``{name: [evaluation]}`` of untrained references (pixels, initial network); default none."""
        return {}

    def summarize(self, config, data, evaluations: dict, training: dict) -> dict:
        """The results dict; ``evaluations = {name: [per-run evaluation]}``, ``training = {arm: [record]}``."""
        return {"evaluations": evaluations}

    def plot(self, results: dict, path) -> Optional[str]:
        """Draw the experiment's figure at ``path`` (a ``.png``); return None to draw nothing."""
        return None

    def format_table(self, results: dict) -> str:
        """The Markdown table printed at the end of ``gensim-jax train``."""
        return ""


class ImageExperiment(Experiment):
    """An :class:`Experiment` whose encoders read square RGB images of ``config.data.image_size``.

    :meth:`image_arm` builds an :class:`Arm` whose batches carry the images as ``uint8`` in
    ``[0, 255]``, normalised with the ImageNet statistics inside the jitted step
    (``preprocess="imagenet"``); ``model.init`` sees one float32 image.

    Random augmentation: a config whose ``data`` section has ``augment`` (``"auto"``, ``"host"``,
    ``"device"``; :func:`gensim_jax.data.device_augment.resolve_augment` turns ``auto`` into one of
    the others by the JAX backend, and :meth:`validate` stores the resolved value, so the saved config
    says which ran) and a class with :attr:`AUGMENT_PRESET` draws the ``simclr`` arm's views on the
    device when it is ``device``; the batches then carry ``image`` at the load size and
    ``augment_seed`` instead of the views (:meth:`Arm.batch_spec`).
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

    def image_arm(self, name: str, config, **fields) -> Arm:
        """An :class:`Arm` over images: ``fields`` (model, objective, batches, ...) plus the image input's
        ``example_input``, ``uint8`` batches, ``export`` (``image_size``, ``preprocess="imagenet"``) and, for the
        ``simclr`` arm with ``data.augment`` resolved to ``device``, the :attr:`AUGMENT_PRESET` views drawn in the step."""
        s = self.image_size(config)
        fields.setdefault("example_input", np.zeros((1, s, s, 3), np.float32))
        fields.setdefault("input_dtype", np.uint8)
        fields.setdefault("export", {"image_size": s, "preprocess": "imagenet"})
        fields.setdefault("augment", self._device_views(name, config))
        return Arm(**fields)

    def _device_views(self, name: str, config):
        mode = getattr(getattr(config, "data", None), "augment", "host")
        if self.AUGMENT_PRESET is None or name != "simclr" or mode == "host":
            return None
        from gensim_jax.data.device_augment import resolve_augment, simclr_preset

        if resolve_augment(mode) != "device":
            return None
        return simclr_preset(self.AUGMENT_PRESET, self.image_size(config), config.objectives.simclr)

    def check_batch_size(self, config, num_train_images: int) -> None:
        """``ValueError`` unless ``2 <= batch_size <= num_train_images`` (the training images of ``data``)."""
        if config.batch_size < 2 or config.batch_size > num_train_images:
            raise ValueError(
                f"batch_size must lie in [2, the {num_train_images} training images (data)], got {config.batch_size}"
            )


_INIT_CACHE: dict = {}


def _jit_init(model):
    """One ``jax.jit(model.init)`` per module (equal modules share it: initialising a second run compiles nothing)."""
    try:
        return _INIT_CACHE.setdefault(model, jax.jit(model.init))
    except TypeError:  # an unhashable module
        return jax.jit(model.init)
