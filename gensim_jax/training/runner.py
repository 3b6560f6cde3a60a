"""The one runner: any :class:`~gensim_jax.training.experiment.Experiment` becomes a run, on any cluster.

:func:`train_and_evaluate` is what ``gensim-jax train`` (``python -m train``) executes for every
experiment.  It is the same code on one CPU, on 8 simulated devices, on several local processes
and on a SLURM or TPU-pod cluster:

1. the device mesh from the config (``mesh_data x mesh_fsdp``; one device is a mesh of one), with
   the global ``batch_size`` checked against the devices and processes;
2. ``workdir/config.json`` (process 0), the run's size (:func:`describe_size`), then the experiment's
   shared data (``prepare``) and baselines under a status line that counts the seconds;
3. for every run ``r`` (seed ``seed + r``) and every arm: the encoder in the compute ``dtype``,
   the optimizer of the config (:mod:`~gensim_jax.training.optim`), the state, ONE jitted step per
   model, optimizer and objective structure (scalar hyperparameters such as a temperature or a
   loss weight are traced, so a whole sweep and every seed share one compile), the loop of
   :func:`~gensim_jax.training.loop.train` with checkpoints and exact resume in
   ``workdir/<arm>/run<r>``, each process feeding its own rows of every global batch;
4. the trained variables gathered to the host (FSDP leaves included), exported to
   ``<run>/export`` (process 0) and evaluated;
5. ``results.json`` and the figure (process 0).

Once the first steps of an arm's first run are timed (steps 2-4: the first compiles), one line
estimates the duration of the whole call at that rate (:class:`DurationEstimate`).

Multi-process runs call :func:`gensim_jax.parallel.initialize_distributed` before anything touches
a device (the CLI does, from flags or from the SLURM / TPU / Open MPI environment).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax import parallel
from gensim_jax.deprecation import Renamed, module_getattr
from gensim_jax.jsonable import to_jsonable
from gensim_jax.provenance import provenance
from gensim_jax.training.experiment import Experiment, HostShard, learning_rate
from gensim_jax.training.export import export_variables
from gensim_jax.training.loop import read_metrics, save_run_config, train
from gensim_jax.training.optim import make_optimizer
from gensim_jax.training.progress import format_duration, say_between_bars
from gensim_jax.training.progress import status as progress_status
from gensim_jax.training.state import create_train_state
from gensim_jax.training.step import bind_objective, jit_train_step, normalize_inputs
from gensim_jax.training.timing import DEFAULT_INPUT_BOUND_HINT, IN_MEMORY_INPUT_BOUND_HINT, PYTHON_INPUT_BOUND_HINT

__all__ = [
    "train_and_evaluate",
    "make_run_mesh",
    "checked_batches",
    "compute_dtype_model",
    "StepCache",
    "abstract_step_inputs",
    "evaluate_export",
    "check_run_export",
    "experiment_source",
    "describe_size",
    "DurationEstimate",
]


def _steps_or_none(experiment: Experiment, config, data=None) -> Optional[int]:
    """Optimizer steps of one run, or None when they depend on data not prepared yet (an epoch of a dataset)."""
    try:
        return int(experiment.num_steps(config, data))
    except (AttributeError, TypeError, KeyError, ValueError):
        return None


def describe_size(experiment: Experiment, config, data=None) -> str:
    """What a call of :func:`train_and_evaluate` trains, in one phrase: ``"10 runs x 3 arms x 2,235 steps of 64
    examples (4,291,200 examples)"``; with ``epochs`` and no data yet, ``"10 runs x 3 arms x 90 epochs in batches of 256"``."""
    runs, arms, batch = int(config.num_runs), len(experiment.arms(config)), int(config.batch_size)
    steps = _steps_or_none(experiment, config, data)
    head = f"{runs:,} run{'s' * (runs != 1)} x {arms} arm{'s' * (arms != 1)}"
    if steps is None:
        return f"{head} x {getattr(config, 'epochs', '?')} epochs in batches of {batch:,}"
    return f"{head} x {steps:,} steps of {batch:,} examples ({runs * arms * steps * batch:,} examples)"


class DurationEstimate:
    """The duration of a whole :func:`train_and_evaluate` call, from the first timed steps of each arm.

    :meth:`wrap` returns the step function of an arm's first run with steps ``2 .. 1 + n`` timed
    (``n = min(3, steps - 2)``; the first step compiles): the state is waited for before step 2 and
    after step ``1 + n`` (two synchronisations, the steps between run as usual), so the rate includes
    the input pipeline's waits.  Then ``say`` gets one line: this arm's seconds a step and the whole call
    at ``runs x steps x (sum of the arms' rates)``, an arm not timed yet counted at the mean rate so far.
    With ``say=None`` (no progress output) nothing is timed and the step functions are returned as they are.
    """

    def __init__(self, say: Optional[Callable[[str], None]], runs: int, arms: Iterable[str], steps: int):
        self.say, self.runs, self.arms, self.steps = say, int(runs), tuple(arms), int(steps)
        self.rates: dict = {}

    def total_seconds(self) -> Optional[float]:
        if not self.rates:
            return None
        mean = sum(self.rates.values()) / len(self.rates)
        return self.runs * self.steps * sum(self.rates.get(a, mean) for a in self.arms)

    def wrap(self, arm: str, step_fn: Callable) -> Callable:
        n = min(3, self.steps - 2)
        if self.say is None or arm in self.rates or n < 1:
            return step_fn  # nobody to tell (no progress output), already timed, or too short to time
        calls, t0 = 0, 0.0

        def step(st, batch):
            nonlocal calls, t0
            calls += 1
            if calls == 2:
                jax.block_until_ready(st)
                t0 = time.perf_counter()
            elif calls == 2 + n and arm not in self.rates:
                jax.block_until_ready(st)
                self.rates[arm] = (time.perf_counter() - t0) / n
                self._report(arm)
            return step_fn(st, batch)

        if hasattr(step_fn, "lower"):
            step.lower = step_fn.lower
        return step

    def _report(self, arm: str) -> None:
        untimed = [a for a in self.arms if a not in self.rates]
        rest = f"; {', '.join(untimed)} at the mean rate so far" if untimed else ""
        self.say(
            f"{arm}: {self.rates[arm]:.3g} s a step, so the {self.runs} run(s) x {len(self.arms)} arm(s) x "
            f"{self.steps:,} steps take about {format_duration(self.total_seconds())} here (compiles and "
            f"evaluations not counted{rest})"
        )


def make_run_mesh(config) -> jax.sharding.Mesh:
    """The ``(data, fsdp)`` mesh of ``config`` over all devices of all processes.

    Raises ``ValueError`` when the mesh does not match the devices, or the global batch does not
    divide over the devices and processes.
    """
    try:
        mesh = parallel.make_mesh(config.mesh_data, config.mesh_fsdp)
    except ValueError as err:
        raise ValueError(
            f"mesh_data={config.mesh_data} x mesh_fsdp={config.mesh_fsdp} does not fit the "
            f"{jax.device_count()} device(s) of this run ({err})"
        ) from None
    n, pc = mesh.devices.size, jax.process_count()
    if config.batch_size % n or config.batch_size % pc:
        raise ValueError(
            f"batch_size={config.batch_size} (the global batch) must be divisible by the {n} devices "
            f"of the mesh and the {pc} processes; choose a multiple of {int(np.lcm(n, pc))}"
        )
    return mesh


def checked_batches(
    spec: Mapping[str, tuple], where: str, factory: Callable[[int], Iterable[Mapping[str, Any]]], shard: HostShard
) -> Callable[[int], Iterable[dict]]:
    """``factory`` whose first batch is checked against ``spec`` (:meth:`Arm.batch_spec`).

    The first batch of every stream must hold ``shard.batch`` rows in every entry (this process's
    rows, not the global batch) and every entry of ``spec`` (``mask`` is optional) with its
    per-example shape, so a mistake fails at the first step with the entry named (``where``: whose
    batches), not later (or silently on another process count).
    """

    def check(batch: Mapping[str, Any]) -> None:
        missing = sorted(set(spec) - set(batch) - {"mask"})  # the mask is optional (all rows valid)
        if missing:
            raise ValueError(f"{where}: the batch has no {missing} (batch_spec names them; it has {sorted(batch)})")
        for k, v in batch.items():
            shape = np.shape(v)
            if shape[:1] != (shard.batch,):
                raise ValueError(
                    f"{where}: entry {k!r} has {shape[:1] or 'no'} rows; this process builds {shard.batch} rows "
                    f"(its share of the global batch {shard.global_batch} over {shard.count} process(es))"
                )
            if k in spec and tuple(shape[1:]) != tuple(spec[k][0]):
                raise ValueError(
                    f"{where}: entry {k!r} has per-example shape {shape[1:]}, batch_spec says {spec[k][0]}"
                )

    def stream(position: int):
        it = iter(factory(position))
        first = next(it, None)
        if first is None:
            return
        check(first)
        yield first
        yield from it

    return stream


def compute_dtype_model(model, dtype: str):
    """``model`` computing in ``dtype`` (``"float32"``: unchanged); parameters stay float32.

    Raises ``ValueError`` when ``dtype`` is not float32 and the module has no ``dtype`` field.
    """
    if dtype == "float32":
        return model
    if not hasattr(model, "dtype"):
        raise ValueError(f"dtype={dtype!r}: the model {type(model).__name__} has no compute-dtype field")
    return model.clone(dtype=jnp.dtype(dtype))


class StepCache:
    """Jitted steps shared by runs: one per (model, optimizer, objective structure, mesh).

    Runs differing only in seed, or in traced objective hyperparameters, reuse one compiled step.
    """

    def __init__(self, mesh, *, fsdp: bool = False):
        self.mesh, self.fsdp = mesh, fsdp
        self._steps: dict = {}

    def get(self, state, objective, preprocess: str = "imagenet", augment=None) -> Callable:
        key = (
            preprocess,
            augment,
            state.apply_fn,
            state.tx,
            jax.tree.structure(objective),
            jax.tree.structure(state),
            tuple(np.shape(x) for x in jax.tree.leaves(state)),
        )
        jitted = self._steps.get(key)
        if jitted is None:
            jitted = self._steps[key] = jit_train_step(
                mesh=self.mesh, state=state, fsdp=self.fsdp, preprocess=preprocess, augment=augment
            )
        return bind_objective(jitted, objective)


def _scalars(tree, prefix: str = "result") -> dict:
    """The numbers of a run's final evaluation as ``{"result/a/b": x}``; a numeric vector gives its mean (``.../mean``)."""
    tree = to_jsonable(tree)
    out: dict = {}
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.update(_scalars(v, f"{prefix}/{k}"))
    elif isinstance(tree, bool) or tree is None or isinstance(tree, str):
        pass
    elif isinstance(tree, (int, float)):
        out[prefix] = float(tree)
    elif isinstance(tree, list) and tree and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in tree):
        out[f"{prefix}/mean"] = float(np.mean(tree))
    return out


def _regression_pairs_fn(arm) -> Optional[Callable]:
    """``fn(variables, batch) -> (prediction, target)``: the arm's model on a training batch's inputs
    (normalised as the step normalises them) and its objective's two ``(B, B)`` matrices
    (``regression_pairs``: the pairs a GenSim regression compares, Eq. 2), as ONE jitted program; None
    for an objective that regresses no pairs.

    Applied eagerly, the model ran op by op, and every operation on a new shape was a program of its
    own: 160 XLA compiles (about 8 s of the CPU) the first time a quadrilaterals demo run drew its
    scatter, 9 strided slices for each max pooling; one jit compiles once per arm."""
    objective = arm.objective
    if not hasattr(objective, "regression_pairs"):
        return None

    def pairs(variables, batch):
        batch = normalize_inputs(batch, arm.preprocess, objective.input_keys)
        outputs = {k: arm.model.apply(variables, batch[k]) for k in objective.input_keys}
        return objective.regression_pairs(outputs, batch)

    return jax.jit(pairs)


def _record_evaluation(run_dir: Path, step: int, evaluation, variables, batches, pairs_fn) -> None:
    """The run's evaluation as TensorBoard scalars and, given a :func:`_regression_pairs_fn`, the scatter of
    the embedding similarity against the target similarity on one training batch (the pairs GenSim
    regresses). Process 0 alone calls it, on the variables gathered to its host."""
    from gensim_jax.training.records import RunRecorder, similarity_scatter_image

    with RunRecorder(run_dir, start_step=step) as recorder:
        values = _scalars(evaluation if isinstance(evaluation, dict) else {"evaluation": evaluation})
        if values:
            recorder.write(step, values)
        if pairs_fn is None or not recorder.active:
            return  # the image (matplotlib, ~1 s) is drawn only where it is written
        pred, target = pairs_fn(variables, {k: np.asarray(v) for k, v in next(iter(batches(0))).items()})
        recorder.write_images(
            step,
            {
                "result/similarity_scatter": similarity_scatter_image(
                    np.asarray(pred), np.asarray(target), title=f"step {step}: embedding vs target"
                )
            },
        )


def _record(run_dir: Path, history: list, seed: int, seconds: float) -> dict:
    lines = read_metrics(run_dir) if jax.process_index() == 0 else history
    losses = [m["loss"] for m in lines if "loss" in m]
    return {"seed": seed, "seconds": seconds, "losses": losses, "final_loss": losses[-1] if losses else None}


def train_and_evaluate(
    experiment: Experiment,
    config,
    workdir,
    *,
    progress: bool = True,
    profile_steps: Optional[str] = None,
    peak_flops_per_s: Optional[float] = None,
    train_kwargs: Optional[Mapping[str, Any]] = None,
) -> dict:
    """Train every arm of ``experiment`` ``config.num_runs`` times, evaluate, and write the results.

    Args:
      experiment: the declaration.
      config: its config (validated again here).
      workdir: run directory; every ``workdir/<arm>/run<r>`` holds ``config.json``, ``metrics.jsonl``,
        ``checkpoints/`` (an interrupted call resumes) and ``export/``.
      progress: progress bars and one line per run (process 0).
      profile_steps: ``"START:END"``: a profiler trace of those steps of every run (``<run>/plugins/profile``).
      peak_flops_per_s: one device's peak FLOP/s, for the model FLOP utilisation ``perf/mfu``.
      train_kwargs: extra keyword arguments of :func:`~gensim_jax.training.loop.train` (e.g. hooks).

    Returns:
      The results dict of ``experiment.summarize``, with ``experiment``, ``num_steps``,
      ``training`` (per-run records) and ``train_seconds`` added; process 0 also writes it to
      ``workdir/results.json`` and draws ``workdir/<experiment>.png``.
    """
    config = experiment.validate(config)
    resolved = to_jsonable(dataclasses.asdict(config))  # the config as every record of this call holds it
    workdir = Path(workdir)
    is_main = jax.process_index() == 0
    say = say_between_bars(f"[{experiment.name}] ") if (progress and is_main) else (lambda msg: None)
    mesh = make_run_mesh(config)
    fsdp = config.mesh_fsdp > 1
    save_run_config(workdir, {**resolved, "experiment": experiment.name}, config.seed)
    intro = experiment.intro(config)
    if intro:
        say(intro)
    say(
        f"{describe_size(experiment, config)} on {mesh.devices.size} device(s) "
        f"({', '.join(sorted({d.device_kind for d in jax.devices()}))}, backend {jax.default_backend()}), "
        f"{jax.process_count()} process(es)"
    )
    status = progress and is_main

    t_data = time.perf_counter()
    with progress_status(f"[{experiment.name}] preparing the data", status):
        data = experiment.prepare(config)
    steps = experiment.num_steps(config, data)
    known = _steps_or_none(experiment, config) is not None
    say(f"prepared the data in {time.perf_counter() - t_data:.1f} s" + ("" if known else f"; {steps:,} steps a run"))
    with progress_status(f"[{experiment.name}] evaluating the baselines", status):
        evaluations: dict = {k: list(v) for k, v in experiment.baselines(config, data).items()}
    names = experiment.arms(config)
    estimate = DurationEstimate(say if status else None, config.num_runs, names, steps)
    arms = {name: experiment.arm(name, config, data) for name in names}  # built once: runs share model and step
    pairs_fns = {name: _regression_pairs_fn(arm) for name, arm in arms.items()}  # one compile each, not per run
    train_models = {name: compute_dtype_model(arm.model, config.dtype) for name, arm in arms.items()}
    optimizers: dict = {}
    training: dict = {}
    steps_cache = StepCache(mesh, fsdp=fsdp)
    shard = HostShard.of_this_process(config.batch_size)
    start = time.perf_counter()
    for r in range(config.num_runs):
        seed = config.seed + r
        for name, arm in arms.items():
            lr = learning_rate(config, name)
            if lr not in optimizers:
                optimizers[lr] = make_optimizer(config.optim, steps, lr)
            run_dir = workdir / str(name) / f"run{r}"
            state = create_train_state(
                train_models[name], optimizers[lr], jax.random.key(seed), variables=arm.init_variables(seed)
            )
            batches = checked_batches(
                arm.batch_spec(), f"{experiment.name} arm {name!r}", arm.batches(seed, shard), shard
            )
            eval_every, eval_fn = arm.periodic_eval or (None, None)
            say(f"{name} run {r} (seed {seed}): {steps} steps -> {run_dir}")
            t0 = time.perf_counter()
            result = train(
                state,
                arm.objective,
                batches,
                num_steps=steps,
                workdir=run_dir,
                config={**resolved, "arm": name, "experiment": experiment.name},
                seed=seed,
                mesh=mesh,
                fsdp=fsdp,
                checkpoint_every=config.checkpoint_every,
                log_every=config.log_every,
                eval_every=eval_every,
                eval_fn=None if eval_fn is None else (lambda st, step, fn=eval_fn: fn(st.variables, step)),
                progress=progress,
                step_fn=estimate.wrap(name, steps_cache.get(state, arm.objective, arm.preprocess, arm.augment)),
                profile_steps=profile_steps,
                peak_flops_per_s=peak_flops_per_s,
                stimuli_key="auto",
                input_bound_hint=input_bound_hint(data),
                **dict(train_kwargs or {}),
            )
            seconds = time.perf_counter() - t0
            trained = parallel.gather_to_host(result.state.variables)
            if is_main:
                export_variables(
                    run_dir / "export",
                    trained,
                    model=arm.model_name,
                    model_kwargs=dict(arm.model_kwargs),
                    seed=seed,
                    objective=name,
                    experiment=experiment.name,
                    experiment_source=experiment_source(experiment),
                    run_config=resolved,
                    input_shape=list(np.shape(arm.example_input)[1:]),
                    **arm.export,
                )
            training.setdefault(str(name), []).append(_record(run_dir, result.history, seed, seconds))
            evaluation = arm.evaluation(arm.model, trained, seed)
            evaluations.setdefault(str(name), []).append(evaluation)
            if is_main:
                _record_evaluation(run_dir, steps, evaluation, trained, batches, pairs_fns[name])
            del result, state
    train_seconds = time.perf_counter() - start

    results = dict(experiment.summarize(config, data, evaluations, training))
    results.setdefault("experiment", experiment.name)
    results.setdefault("config", resolved)
    results.setdefault("seed", config.seed)
    results.setdefault("num_steps", steps)
    results.setdefault("training", training)
    results.setdefault("evaluations", evaluations)  # per run: what `gensim-jax eval export` reproduces
    results["train_seconds"] = train_seconds
    results["devices"] = parallel.device_summary()
    results["provenance"] = provenance()
    results = to_jsonable(results)
    if is_main:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "results.json").write_text(json.dumps(results, indent=2))
        experiment.plot(results, workdir / f"{experiment.name}.png")
    return results


def input_bound_hint(data) -> str:
    """The input-bound warning's advice for what feeds this run: a file reader (``data.source`` is None,
    e.g. ImageNet's tfds records) gets the tf.data settings, an in-memory source (rendered or generated
    stimuli gathered in Python) the settings that help it, and data without a ``source`` at all (arrays
    that the arm's own Python code batches, e.g. the Gaussian mixture's triplets) advice for that code."""
    if not hasattr(data, "source"):
        return PYTHON_INPUT_BOUND_HINT
    return DEFAULT_INPUT_BOUND_HINT if data.source is None else IN_MEMORY_INPUT_BOUND_HINT


def experiment_source(experiment: Experiment) -> str:
    """What :func:`gensim_jax.experiments.load` takes to load ``experiment`` again: its name when it is one
    of the package's experiments, else the path of its file."""
    import inspect

    module = type(experiment).__module__
    if module.startswith("gensim_jax.experiments."):
        return experiment.name
    try:
        return str(Path(inspect.getfile(type(experiment))).resolve())
    except TypeError:
        return experiment.name


def evaluate_export(directory, experiment: Experiment) -> dict:
    """Evaluate a run's export with ``experiment``'s own evaluation: the call the run made, on the same stimuli.

    The export carries the arm, the seed and the run's resolved config (``run_config``); the config
    is rebuilt and validated, the experiment's test data rebuilt (:meth:`Experiment.prepare` with
    ``training=False``, deterministic from the config) and the arm's :attr:`Arm.evaluate` called with
    the exported model and variables. So the result equals the run's recorded evaluation (``results.json``
    ``evaluations[arm][r]``) exactly.  :func:`gensim_jax.experiments.evaluate_export` finds the
    experiment from the export's metadata (``experiment_source``).

    Raises:
      FileNotFoundError: ``directory`` is not an export.
      ValueError: the export was not written by the runner (no ``run_config``), or its config no longer validates.
    """
    from gensim_jax.training.export import load_exported

    model, variables, meta = load_exported(directory)
    check_run_export(directory, meta)
    config = experiment.config_from_dict(meta["run_config"])
    arm = experiment.arm(meta["objective"], config, experiment.prepare(config, training=False))
    evaluation = arm.evaluation(model, variables, int(meta["seed"]))
    return {
        "export": str(directory),
        "experiment": experiment.name,
        "arm": meta["objective"],
        "seed": int(meta["seed"]),
        "evaluation": to_jsonable(evaluation),
    }


def check_run_export(directory, meta: Mapping[str, Any]) -> None:
    """``ValueError`` unless the export's metadata ``meta`` names what a re-evaluation needs (a run's export)."""
    missing = [k for k in ("experiment", "objective", "seed", "run_config") if k not in meta]
    if missing:
        raise ValueError(
            f"export {directory} has no {missing} in its metadata: only exports written by a run of "
            "gensim-jax train can be re-evaluated by their experiment (use a protocol: gensim-jax eval --help)"
        )


def abstract_step_inputs(experiment: Experiment, config, arm: Optional[str] = None, global_batch: Optional[int] = None):
    """``(step, (state, batch, objective))``: the runner's train step and abstract arguments, built without data.

    ``step(state, batch, objective)`` is the function :func:`train_and_evaluate` jits
    (:func:`~gensim_jax.training.step.train_step`); the state comes from the arm's model in the
    compute ``dtype`` and the config's optimizer under ``jax.eval_shape`` (no parameter is
    allocated), the batch from :meth:`Arm.batch_spec` with ``global_batch`` rows (default
    ``config.batch_size``).  ``gensim-jax plan`` compiles exactly this for a TPU or GPU topology.
    """
    from gensim_jax.training.step import train_step

    config = experiment.validate(config)
    name = experiment.arms(config)[0] if arm is None else arm
    spec = experiment.arm(name, config, None)
    b = int(config.batch_size if global_batch is None else global_batch)
    tx = make_optimizer(config.optim, max(int(config.num_steps or 1), 1), learning_rate(config, name))
    variables = jax.eval_shape(lambda: spec.model.init(jax.random.key(0), spec.example_input))
    train_model = compute_dtype_model(spec.model, config.dtype)
    state = jax.eval_shape(lambda v: create_train_state(train_model, tx, jax.random.key(0), variables=v), variables)
    batch = {k: jax.ShapeDtypeStruct((b, *shape), dtype) for k, (shape, dtype) in spec.batch_spec().items()}
    objective = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)), spec.objective)
    preprocess, augment = spec.preprocess, spec.augment
    return (lambda st, bt, obj: train_step(st, bt, obj, preprocess=preprocess, augment=augment)), (
        state,
        batch,
        objective,
    )


#: Old names of this module that still work, with a warning, until the release that removes them
#: (docs/EXPERIMENTS.md, "Deprecation policy"; :mod:`gensim_jax.deprecation`).
DEPRECATED = {"run_experiment": Renamed("run_experiment", "train_and_evaluate", "0.2.0")}
__getattr__ = module_getattr(__name__, DEPRECATED, globals())
