"""Host input work per process as processes are added, the global batch fixed (``make bench``).

For an experiment's config, every arm's stream (:meth:`~gensim_jax.training.experiment.Experiment.batches`)
is built for process 0 of ``P`` (:class:`~gensim_jax.training.experiment.HostShard`) and timed over
``steps`` global batches: the rows that process gathers, renders, augments and decodes in its
pipeline, and their transfer to the device (``jax.device_put``). The first batch (pipeline start-up)
is excluded. With per-process data the time per global batch falls as ``1/P`` where the per-row work
dominates; fixed per-batch costs (tf.data scheduling, one transfer) do not fall. Each line reports
``ratio = t(P) / t(1)`` (target at P = 4: at most 0.35; ideal 0.25) and the bytes a process sends per
global batch.

Usage::

    python -m bench.input_scaling                 # quadrilaterals and imagenet_hierarchy cpu_small
    python -m bench.input_scaling --quick         # fewer steps
"""

from __future__ import annotations

import argparse
import itertools
import time

import jax
import numpy as np

from bench._harness import emit

#: ``(experiment, config, overrides)`` measured by default: the two image experiments named by the issue.
CASES = (
    ("quadrilaterals", "cpu_small", {}),
    ("imagenet_hierarchy", "cpu_small", {}),
)
COUNTS = (1, 2, 4)
TARGET_AT_4 = 0.35


def _time_stream(experiment, arm, config, data, shard, steps: int) -> tuple[float, int]:
    """Seconds per global batch to build this process's rows and put them on the device, and their bytes."""
    stream = iter(experiment.batches(arm, config, data, config.seed, shard)(0))
    jax.block_until_ready(jax.device_put(next(stream)))  # start-up: the pipeline's first batch
    nbytes = 0
    t0 = time.perf_counter()
    for batch in itertools.islice(stream, steps):
        jax.block_until_ready(jax.device_put(batch))
        nbytes = sum(np.asarray(v).nbytes for v in batch.values())
    return (time.perf_counter() - t0) / steps, nbytes


def measure(name: str, config_name: str, overrides: dict, steps: int) -> list[dict]:
    from gensim_jax import experiments as registry
    from gensim_jax.training.experiment import HostShard

    experiment = registry.load(name)
    config = experiment.get_config(config_name, **overrides)
    data = experiment.prepare(config)
    lines = []
    for arm in experiment.arms(config):
        per: dict = {}
        for count in COUNTS:
            per[count] = _time_stream(experiment, arm, config, data, HostShard(0, count, config.batch_size), steps)
        t1 = per[1][0]
        for count in COUNTS[1:]:
            ratio = per[count][0] / t1
            target = TARGET_AT_4 if count == 4 else 1.0 / count + 0.1
            lines.append(
                {
                    "bench": "input_scaling",
                    "params": {
                        "experiment": name,
                        "config": config_name,
                        "arm": arm,
                        "global_batch": config.batch_size,
                        "processes": count,
                        "steps": steps,
                    },
                    "ours_s": round(per[count][0], 5),
                    "reference": "the same stream built by 1 process",
                    "reference_s": round(t1, 5),
                    "ratio": round(ratio, 3),
                    "target": target,
                    "met": bool(ratio <= target),
                    "bytes_per_process": per[count][1],
                    "bytes_one_process": per[1][1],
                }
            )
    return lines


def run(quick: bool = False):
    steps = 5 if quick else 30
    for name, config_name, overrides in CASES:
        yield from measure(name, config_name, overrides, steps)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for line in run(quick=args.quick):
        emit(line)


if __name__ == "__main__":
    main()
