"""Does ``perf/device_idle_fraction`` tell a fed accelerator from a starved one? (``make bench``)

An experiment's real training stream (its ``batches`` for process 0 of 1: rendering, gathering,
augmenting on the host as the config says) feeds :func:`gensim_jax.training.train` -- the loop, its
prefetch, its timer and records, unchanged -- whose step runs on a
:class:`~gensim_jax.training.simulated_device.SimulatedDevice`: an in-order stream whose every step
takes a fixed time and uses no CPU, so the host's input work runs at its own rate beside it, as it
would beside a GPU.  First the loop runs with a device that takes no time (``host_s``: its wall
seconds per step, building, transferring and dispatching each batch); then the device's step is set
to ``ratio x host_s``:

* ``ratio`` 1.2: the device is slower than the host; a fed device should read
  ``device_idle_fraction <= 0.05``;
* ``ratio`` 0.5: the device waits for the host about half of the time; the figure must be within 0.1
  of the true idle share, which the simulated device's own log gives (``true_idle_fraction``).

The windows after the second are compared (the first two hold the pipeline's start and the first
compiles of the loop's metric reductions), over the device's log from the end of the step that
closed the second window to the last step's end.

Usage::

    python -m bench.runner.device_idle               # imagenet_hierarchy gensim and simclr, 224 px, batch 256
    python -m bench.runner.device_idle --quick       # 64 px, batch 32
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np

from bench._harness import emit

#: ``(experiment, config, arm)`` measured.
CASES = (("imagenet_hierarchy", "cpu_small", "gensim"), ("imagenet_hierarchy", "cpu_small", "simclr"))
RATIOS = (1.2, 0.5)
FED_TARGET = 0.05
STARVED_TOLERANCE = 0.1


def _run(experiment, arm, config, data, step_s: float, steps: int, log_every: int):
    """``train()`` on the experiment's stream, its step on a SimulatedDevice of ``step_s``; (history, device)."""
    from gensim_jax.training import CrossEntropy, train
    from gensim_jax.training.experiment import HostShard
    from gensim_jax.training.simulated_device import SimulatedDevice

    dev = SimulatedDevice(step_s)
    shard = HostShard.of_this_process(config.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            res = train(
                _tiny_state(),
                CrossEntropy(input_key="x"),
                experiment.arm(arm, config, data).batches(config.seed, shard),
                num_steps=steps,
                workdir=tmp,
                log_every=log_every,
                checkpoint_every=10**9,
                progress=False,
                tensorboard=False,
                step_fn=dev.step_fn(),
            )
        finally:
            dev.close()
    return res.history, dev


def _host_seconds(experiment, arm, config, data, log_every: int) -> float:
    """The loop's own wall seconds per step when the device takes no time: building, transferring and
    dispatching each batch (the windows after the first two)."""
    history, _ = _run(experiment, arm, config, data, 1e-6, 4 * log_every, log_every)
    rows = [r for r in history if "perf/step_time_s" in r][2:]
    return float(np.mean([r["perf/step_time_s"] for r in rows]))


def _tiny_state():
    import optax

    from gensim_jax.models import get_model
    from gensim_jax.training import create_train_state

    return create_train_state(get_model("mlp", in_features=4, hidden=8, embed_dim=4), optax.sgd(0.1), 0)


def measure(name: str, config_name: str, arm: str, overrides: dict, log_every: int, windows: int) -> list[dict]:
    from gensim_jax import experiments as registry

    experiment = registry.load(name)
    config = experiment.get_config(config_name, **overrides)
    data = experiment.prepare(config)
    host_s = _host_seconds(experiment, arm, config, data, log_every)
    lines = []
    for ratio in RATIOS:
        steps = log_every * (windows + 2)
        history, dev = _run(experiment, arm, config, data, ratio * host_s, steps, log_every)
        rows = [r for r in history if "perf/device_idle_fraction" in r][2:]
        weights = np.array([r["perf/step_time_s"] for r in rows])

        def mean(key: str) -> float:
            return float(np.sum(weights * [r[key] for r in rows]) / np.sum(weights))

        start, end = dev.busy[2 * log_every - 1][1], dev.busy[-1][1]
        truth = dev.idle_seconds(start, end) / (end - start)
        measured = mean("perf/device_idle_fraction")
        met = measured <= FED_TARGET if ratio > 1 else abs(measured - truth) <= STARVED_TOLERANCE
        lines.append(
            {
                "bench": "runner_device_idle",
                "params": {
                    "experiment": name,
                    "config": config_name,
                    "arm": arm,
                    "size": int(config.data.image_size),
                    "global_batch": int(config.batch_size),
                    "augment": str(getattr(config.data, "augment", "host")),
                    "ratio": ratio,
                    "simulated_step_ms": round(1e3 * ratio * host_s, 2),
                    "steps": steps,
                    "log_every": log_every,
                },
                "host_ms_per_batch": round(1e3 * host_s, 2),
                "device_idle_fraction": round(measured, 4),
                "input_idle_fraction": round(mean("perf/input_idle_fraction"), 4),
                "true_idle_fraction": round(truth, 4),
                "metric_error": round(measured - truth, 4),
                "data_wait_fraction": round(mean("perf/data_wait_fraction"), 4),
                "target": f"<= {FED_TARGET}" if ratio > 1 else f"within {STARVED_TOLERANCE} of true_idle_fraction",
                "met": bool(met),
            }
        )
    return lines


def run(quick: bool = False):
    size, batch = (64, 32) if quick else (224, 256)
    overrides = {
        "data.image_size": size,
        "batch_size": batch,
        "data.train_per_leaf": 4 if quick else 16,
    }  # 18 leaves: >= one batch
    for name, config_name, arm in CASES:
        yield from measure(name, config_name, arm, overrides, log_every=3 if quick else 4, windows=2)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for line in run(quick=args.quick):
        emit(line)


if __name__ == "__main__":
    main()
