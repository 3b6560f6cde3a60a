"""Experiment: spurious digits -- does a class-centre loss make LeNet ignore the background? (seed 003).

The thesis of seed 003 (Sec. 3, 4) builds a data set in which the background is a spurious cue
for the label: every MNIST digit class has its own pool of CIFAR-10 backgrounds, and each digit is
multiplied onto a background of its class's pool (Sec. 3.1; :mod:`gensim_jax.data.spurious_digits`).
A LeNet-5 (Sec. 3.2; ``get_model("lenet5")``, 62,006 parameters, 84-d penultimate embedding) is
trained with Adam on

    L_total = L_crossentropy + lambda * L_sim                                    (seed 003 Eq. 12)

where ``L_sim = sum_q sum_{i in T_q} ||z_i - mu_q||^2`` pulls the batch's embeddings of one digit
to their class centre (Eqs. 1-3, 11; :class:`gensim_jax.training.CenterLoss`), for
``lambda in {0, 0.25, 0.5, 0.75, 10, 100}`` (Figs. 2 and 4), 5 seeds each, 10 epochs (Fig. 3
also tries 100). Evaluation (:mod:`gensim_jax.evaluation.spurious_digits`): accuracy on MNIST test
digits over backgrounds of their own pool (ID) and over backgrounds of the other digits' pools
(OOD, the spurious cue now points to a wrong class), mean over seeds with a 95% Student-t
interval, plotted against lambda. The thesis finds no significant change of OOD accuracy for
moderate lambda and a drop at extreme values.

Not given by the thesis, our choices (overridable): batch size 64, Adam learning rate 1e-3
(PyTorch's default), 10 backgrounds per digit pool, disjoint pools, OOD by swapped pools, inputs
scaled to ``[0, 1]``, one data set (``data_seed``) shared by all runs while the seed of run ``r``
(``seed + r``) sets initialisation and batch order.

Configs:

``paper``
    tfds ``mnist`` (60,000 / 10,000) on ``cifar10`` train images, read from ``data_dir`` (tfds's
    default directory when None) without downloading: prepare the data first (see
    :func:`tfds_missing_message`), or set ``download=True`` on a machine with network access.
``cpu_small``
    Offline, no tfds: procedural stand-ins for both data sets
    (:mod:`gensim_jax.data.synthetic_digits`: stroke glyphs with random affine jitter instead of
    MNIST, smooth two-colour fields instead of CIFAR-10) put through the same pool and composition
    code; 1,000 training and 500 + 500 test images, 2 backgrounds per pool, glyph jitter 1.3,
    3 seeds, 4 epochs of batch 32. It checks the pipeline and shows the shortcut (ID >> OOD); it is
    not a reproduction of the thesis's numbers.

Outputs: ``workdir/lambda_<lam>/run<r>/`` holds ``config.json``, ``metrics.jsonl`` (loss, train
accuracy, and per-epoch ``eval/id_accuracy``, ``eval/ood_accuracy``), ``checkpoints/`` (an
interrupted call resumes) and ``export/`` (:func:`gensim_jax.training.export_variables`; re-evaluate
with ``python -m eval spurious_digits --workdir WORKDIR``); ``workdir/config.json``,
``results.json`` and ``spurious_digits.png``.

Entry point: ``train_and_evaluate(config, workdir)``; ``python -m train spurious_digits --config cpu_small``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Iterator, Optional

import flax
import jax
import numpy as np
import optax

from gensim_jax.evaluation import spurious_digits as protocol
from gensim_jax.models import get_model
from gensim_jax.training import (
    CenterLoss,
    create_train_state,
    export_variables,
    read_metrics,
    train,
)
from gensim_jax.training.step import train_step
from gensim_jax.experiments import _common

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 10.0, 100.0)
DATA_SOURCES = ("tfds", "synthetic")
OOD_MODES = ("swapped", "unseen")
TFDS_DATASETS = ("mnist", "cifar10")


@dataclasses.dataclass(frozen=True)
class Config:
    """Seed 003: LeNet-5, Adam, CE + lambda L_sim, lambda in {0, .25, .5, .75, 10, 100}, 5 seeds, 10 epochs."""

    seed: int = 0
    num_runs: int = 5
    lambdas: tuple = LAMBDAS
    # data
    data: str = "tfds"  # "tfds" (MNIST on CIFAR-10) or "synthetic" (offline stand-ins)
    data_dir: Optional[str] = None  # tfds data directory (None: tfds's default)
    download: bool = False  # let tfds download and prepare missing data sets
    data_seed: int = 0  # pools, background choice, synthetic images: one data set for all runs
    per_class: int = 10  # backgrounds per digit pool (the thesis does not give its pool size)
    overlap: float = 0.0  # fraction of each pool shared by all digits (0: disjoint, the thesis default)
    ood: str = "swapped"
    num_train_images: Optional[int] = None  # None: all (60,000 MNIST train digits)
    num_test_images: Optional[int] = None  # None: all (10,000 MNIST test digits)
    num_backgrounds: int = 1000  # synthetic only: candidate pool backgrounds
    num_ood_backgrounds: int = 200  # synthetic only: backgrounds of ood="unseen"
    digit_jitter: float = 1.0  # synthetic only: deformation scale of the glyphs
    # optimisation
    model: str = "lenet5"
    epochs: float = 10.0
    num_steps: Optional[int] = None  # overrides epochs when set
    batch_size: int = 64
    learning_rate: float = 1e-3
    # evaluation
    evals_per_run: int = 10  # ID/OOD accuracy logged this many times per run (0: only at the end)
    eval_batch_size: int = 1000
    confidence: float = 0.95
    checkpoint_every: int = 1000


CONFIGS = {
    "paper": Config(),
    # Offline on a 2-core CPU in about 3-4 minutes: procedural digits and backgrounds, 1,000 training
    # images over 2 backgrounds per digit pool (a strong spurious cue), the whole lambda grid x 3 seeds,
    # 4 epochs of batch 32 (125 steps), 500 + 500 test images, evaluated at the end of each run.
    "cpu_small": Config(
        num_runs=3, data="synthetic", num_train_images=1000, num_test_images=500, per_class=2,
        num_backgrounds=100, num_ood_backgrounds=50, digit_jitter=1.3, epochs=4.0, batch_size=32,
        evals_per_run=0, checkpoint_every=10_000,
    ),
}


def get_config(name: str = "paper", **overrides) -> Config:
    """The named config with ``overrides`` applied (lists become tuples); ``ValueError`` names a bad field or value."""
    return _common.select_config(CONFIGS, name, overrides, _validate)


def _validate(config: Config) -> Config:
    lams = config.lambdas
    if not lams or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
                       for v in lams):
        raise ValueError(f"lambdas must be a non-empty tuple of finite numbers >= 0, got {lams!r}")
    if len(set(float(v) for v in lams)) != len(lams):
        raise ValueError(f"lambdas must be distinct, got {lams!r}")
    if config.num_runs < 1:
        raise ValueError(f"num_runs must be >= 1, got {config.num_runs}")
    if config.data not in DATA_SOURCES:
        raise ValueError(f"data must be one of {DATA_SOURCES}, got {config.data!r}")
    if config.ood not in OOD_MODES:
        raise ValueError(f"ood must be one of {OOD_MODES}, got {config.ood!r}")
    if config.per_class < 1:
        raise ValueError(f"per_class must be >= 1, got {config.per_class}")
    if not 0.0 <= config.overlap < 1.0:
        raise ValueError(f"overlap must lie in [0, 1) (1 leaves no spurious cue and no swapped OOD), "
                         f"got {config.overlap}")
    for name in ("num_train_images", "num_test_images"):
        value = getattr(config, name)
        if value is not None and value < 10:
            raise ValueError(f"{name} must be None (all) or >= 10, got {value}")
    if config.data == "synthetic":
        if config.num_train_images is None or config.num_test_images is None:
            raise ValueError("num_train_images and num_test_images must be set with data='synthetic'")
        own = config.per_class - int(round(config.overlap * config.per_class))
        need = config.per_class - own + 10 * own
        if config.num_backgrounds < need:
            raise ValueError(f"num_backgrounds must be >= {need} for 10 pools of per_class={config.per_class} "
                             f"with overlap={config.overlap}, got {config.num_backgrounds}")
        if config.ood == "unseen" and config.num_ood_backgrounds < 1:
            raise ValueError(f"num_ood_backgrounds must be >= 1 with ood='unseen', got {config.num_ood_backgrounds}")
    if config.batch_size < 2 or (config.num_train_images is not None and config.batch_size > config.num_train_images):
        raise ValueError(f"batch_size must lie in [2, num_train_images={config.num_train_images}], "
                         f"got {config.batch_size}")
    if config.num_steps is None and not config.epochs > 0:
        raise ValueError(f"epochs must be > 0, got {config.epochs}")
    if config.num_steps is not None and config.num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {config.num_steps}")
    if not config.learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got {config.learning_rate}")
    if config.evals_per_run < 0:
        raise ValueError(f"evals_per_run must be >= 0, got {config.evals_per_run}")
    if config.eval_batch_size < 1:
        raise ValueError(f"eval_batch_size must be >= 1, got {config.eval_batch_size}")
    if not 0.0 < config.confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {config.confidence}")
    if config.model != "lenet5":
        raise ValueError(f"model must be 'lenet5' (32x32 RGB input, seed 003 Sec. 3.2), got {config.model!r}")
    return config


def num_steps(config: Config, num_train: int) -> int:
    """Optimizer steps of one run: ``num_steps`` or ``ceil(epochs * num_train / batch_size)``."""
    return _common.steps_per_run(config, num_train)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def tfds_missing_message(data_dir: Optional[str], missing) -> str:
    """How to prepare the tfds data sets the ``paper`` config reads (for the error it raises)."""
    where = data_dir or "~/tensorflow_datasets (tfds's default)"
    flag = f" --data_dir {data_dir}" if data_dir else ""
    return (f"tfds data sets {list(missing)} are not prepared under {where}. Prepare them once on a machine with "
            f"network access, e.g. `tfds build mnist cifar10{flag}` or `python -c \"import tensorflow_datasets as "
            f"tfds; [tfds.builder(n, data_dir={data_dir!r}).download_and_prepare() for n in ('mnist', 'cifar10')]\"`, "
            f"copy the directory here and pass --set data_dir='\"DIR\"'; or run with --set download=true; or use "
            f"--config cpu_small (offline procedural stand-ins).")


def load_arrays(config: Config) -> dict:
    """``{"mnist_train", "mnist_test", "cifar10_train", "cifar10_test"}`` arrays of the config's data.

    ``"synthetic"``: :func:`gensim_jax.data.synthetic_digits.synthetic_arrays`. ``"tfds"``: the
    prepared tfds splits (``FileNotFoundError`` with preparation instructions when absent, unless
    ``download``), digits cut to the first ``num_train_images`` / ``num_test_images`` when set.
    """
    if config.data == "synthetic":
        from gensim_jax.data.synthetic_digits import synthetic_arrays

        return synthetic_arrays(num_train=config.num_train_images, num_test=config.num_test_images,
                                num_backgrounds=config.num_backgrounds,
                                num_ood_backgrounds=config.num_ood_backgrounds if config.ood == "unseen" else 0,
                                seed=config.data_seed, jitter=config.digit_jitter)
    from gensim_jax.data.spurious_digits import load_tfds_arrays, tfds_prepared

    if not config.download:
        missing = [n for n in TFDS_DATASETS if not tfds_prepared(n, config.data_dir)]
        if missing:
            raise FileNotFoundError(tfds_missing_message(config.data_dir, missing))
    names = ["mnist_train", "mnist_test", "cifar10_train"] + (["cifar10_test"] if config.ood == "unseen" else [])
    arrays = {}
    for name in names:
        ds, split = name.split("_")
        arrays[name] = load_tfds_arrays(ds, split, config.data_dir, download=config.download)
    for name, n in (("mnist_train", config.num_train_images), ("mnist_test", config.num_test_images)):
        if n is not None:
            arrays[name] = {k: v[:n] for k, v in arrays[name].items()}
    return arrays


def make_splits(config: Config, arrays: dict) -> dict:
    """``{"train", "test_id", "test_ood"}`` :class:`~gensim_jax.data.spurious_digits.SpuriousDigits` sources."""
    from gensim_jax.data.spurious_digits import load_spurious_digits

    return {split: load_spurious_digits(split, per_class=config.per_class, overlap=config.overlap, ood=config.ood,
                                        seed=config.data_seed, arrays=arrays)
            for split in ("train", "test_id", "test_ood")}


def preprocess(images: np.ndarray) -> np.ndarray:
    """``uint8`` ``(..., 32, 32, 3)`` -> float32 in ``[0, 1]`` (the thesis's tensors; no mean/std shift)."""
    return np.asarray(images, np.float32) / 255.0


def evaluation_sets(splits: dict) -> dict:
    """``{"id": (images float32, labels), "ood": (...)}``: every test example composed once."""
    out = {}
    for name, split in (("id", "test_id"), ("ood", "test_ood")):
        ex = splits[split].examples(np.arange(len(splits[split])))
        out[name] = (preprocess(ex["image"]), ex["label"])
    return out


def make_batches(source, config: Config, seed: int):
    """``position -> iterator`` of training batches (``image``, ``label``, ``mask``), the ``train()`` protocol."""
    from gensim_jax.data import pipelines

    def batches(position: int) -> Iterator[dict]:
        ds = pipelines.labelled_batches(source, config.batch_size, seed=seed, keys=["label"], start_step=position)
        for batch in pipelines.as_numpy(ds):
            yield {"image": preprocess(batch["image"]), "label": batch["label"].astype(np.int32),
                   "mask": batch["mask"]}

    return batches


# --------------------------------------------------------------------------------------------
# Model and evaluation
# --------------------------------------------------------------------------------------------

MODEL_KWARGS = {"num_classes": 10}


class GridCenterLoss(CenterLoss):
    """:class:`~gensim_jax.training.CenterLoss` (seed 003 Eq. 12) with ``lam`` a traced pytree leaf.

    The same loss; only ``lam`` travels as data instead of a static field, so one compiled step
    serves the whole lambda grid (a static ``lam`` costs one XLA compilation per value, which
    dominates short CPU runs). Validate ``lam >= 0`` before building it (:func:`get_config` does).
    """

    lam: float = flax.struct.field(pytree_node=True, default=0.5)


def make_step_fn():
    """``objective -> step(state, batch)``: one jitted :func:`~gensim_jax.training.step.train_step` for all objectives.

    Compiled once for every lambda and seed as long as the states share their optimiser instance
    and model (static fields of the ``TrainState``) and the objectives their static fields.
    """
    jitted = jax.jit(lambda st, batch, obj: train_step(st, batch, obj), donate_argnums=(0,))
    return lambda objective: (lambda st, batch: jitted(st, batch, objective))


def make_model(config: Config):
    """LeNet-5 with the 10-way classifier (seed 003 Sec. 3.2)."""
    return get_model(config.model, **MODEL_KWARGS)


def init_variables(model, seed: int, init_fn=None) -> dict:
    """Freshly initialised variables drawn with JAX's ``rbg`` generator keyed by ``seed`` (fast to compile on CPU).

    ``init_fn``: a ready ``jax.jit(model.init)`` to reuse across runs (compiled once).
    """
    init_fn = init_fn or jax.jit(model.init)
    return init_fn(jax.random.key(seed, impl="rbg"), np.zeros((1, 32, 32, 3), np.float32))


def evaluate(predict, variables, sets: dict) -> dict:
    """``{"id_accuracy", "ood_accuracy"}`` of ``predict(variables, images)`` on :func:`evaluation_sets`."""
    return {f"{name}_accuracy": protocol.accuracy(predict(variables, x), y) for name, (x, y) in sets.items()}


def lambda_dir(lam: float) -> str:
    """Directory name of a lambda: ``lambda_0``, ``lambda_0.25``, ``lambda_100``."""
    return f"lambda_{float(lam):g}"


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def train_and_evaluate(config: Config, workdir: str | Path, progress: bool = True) -> dict:
    """Train every lambda ``num_runs`` times, evaluate ID / OOD, write ``config.json``, ``results.json``, ``spurious_digits.png``.

    Each run lives in ``workdir/lambda_<lam>/run<r>`` (seed ``seed + r``; ``config.json``,
    ``metrics.jsonl``, checkpoints, ``export/``). Returns the results dict.
    """
    config = _validate(config)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(json.dumps({"seed": config.seed, "experiment": "spurious_digits",
                                                     "config": dataclasses.asdict(config)}, indent=2))
    t_data = time.perf_counter()
    splits = make_splits(config, load_arrays(config))
    sets = evaluation_sets(splits)
    data_seconds = time.perf_counter() - t_data
    n_train = len(splits["train"])
    steps = num_steps(config, n_train)
    model = make_model(config)
    predict = protocol.make_predictor(model, config.eval_batch_size)
    init_fn = jax.jit(model.init)
    step_for = make_step_fn()
    tx = optax.adam(config.learning_rate)  # one instance: the optimiser is a static part of the state, so a new
    # instance per run would recompile the step
    eval_every = max(1, steps // config.evals_per_run) if config.evals_per_run else None

    def eval_fn(state, step):
        return evaluate(predict, state.variables, sets)

    per_run: dict = {}
    start = time.perf_counter()
    for lam in config.lambdas:
        objective = GridCenterLoss(lam=float(lam), num_classes=10)
        step_fn = step_for(objective)
        for r in range(config.num_runs):
            seed = config.seed + r
            run_dir = workdir / lambda_dir(lam) / f"run{r}"
            state = create_train_state(model, tx, jax.random.key(seed),
                                       variables=init_variables(model, seed, init_fn))
            if progress:
                print(f"[spurious_digits] lambda {lam:g} run {r} (seed {seed}): {steps} steps -> {run_dir}",
                      flush=True)
            t0 = time.perf_counter()
            result = train(state, objective, make_batches(splits["train"], config, seed), num_steps=steps,
                           workdir=run_dir, config={**dataclasses.asdict(config), "lam": float(lam)}, seed=seed,
                           checkpoint_every=config.checkpoint_every, log_every=max(1, steps // 100),
                           eval_every=eval_every, eval_fn=eval_fn if eval_every else None,
                           progress=progress, step_fn=step_fn)
            seconds = time.perf_counter() - t0
            acc = evaluate(predict, result.state.variables, sets)
            export_variables(run_dir / "export", result.state.variables, model=config.model,
                             model_kwargs=MODEL_KWARGS, image_size=32, preprocess="unit",
                             experiment="spurious_digits", lam=float(lam), seed=seed, run=r, steps=steps)
            metrics = read_metrics(run_dir)
            losses = [m["loss"] for m in metrics if "loss" in m]
            curve = [{"step": m["step"], "id_accuracy": m["eval/id_accuracy"], "ood_accuracy": m["eval/ood_accuracy"]}
                     for m in metrics if "eval/id_accuracy" in m]
            per_run.setdefault(f"{float(lam):g}", []).append(
                {"seed": seed, **acc, "seconds": seconds, "final_loss": losses[-1] if losses else None,
                 "losses": losses, "curve": curve})
            if progress:
                print(f"[spurious_digits] lambda {lam:g} run {r}: ID {acc['id_accuracy']:.3f} "
                      f"OOD {acc['ood_accuracy']:.3f} ({seconds:.1f} s)", flush=True)
            del result, state
    train_seconds = time.perf_counter() - start

    summary = protocol.summarize(per_run, config.confidence)
    results = {
        "experiment": "spurious_digits",
        "data": ("offline procedural stand-ins (gensim_jax.data.synthetic_digits), not MNIST/CIFAR-10"
                 if config.data == "synthetic" else "tfds mnist on cifar10"),
        "config": dataclasses.asdict(config),
        "seed": config.seed,
        "num_steps": steps,
        "num_train": n_train,
        "num_test": {k: int(len(v[1])) for k, v in sets.items()},
        "summary": summary,
        "per_run": per_run,
        "data_seconds": data_seconds,
        "train_seconds": train_seconds,
    }
    (workdir / "results.json").write_text(json.dumps(results, indent=2))
    _plot(workdir / "spurious_digits.png", results)
    return results


def _plot(path: Path, results: dict) -> None:
    data = "procedural stand-ins" if results["config"]["data"] == "synthetic" else "MNIST on CIFAR-10"
    protocol.plot_accuracy_vs_lambda(
        results["summary"], path, confidence=results["config"]["confidence"],
        title=f"Spurious digits ({data}): LeNet-5, CE + lambda L_sim, {results['config']['num_runs']} seeds")


def format_table(results: dict) -> str:
    """Lambda x ID / OOD accuracy (mean and t-interval over seeds) as Markdown, with a line on the data."""
    cfg = results["config"]
    head = (f"Spurious digits, {results['data']}; {cfg['num_runs']} seeds, {results['num_steps']} steps of "
            f"{cfg['batch_size']} ({results['num_train']} training images), OOD = {cfg['ood']} backgrounds:")
    return head + "\n" + protocol.format_table(results["summary"], cfg["confidence"])


__all__ = ["CONFIGS", "Config", "GridCenterLoss", "LAMBDAS", "evaluate", "format_table", "get_config", "init_variables", "lambda_dir",
           "load_arrays", "make_batches", "make_step_fn", "make_model", "make_splits", "num_steps", "preprocess", "evaluation_sets",
           "tfds_missing_message", "train_and_evaluate"]
