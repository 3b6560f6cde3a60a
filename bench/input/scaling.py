"""Host input work per process as processes are added, the global batch fixed (``make bench``).

For an experiment's config, every arm's stream (:meth:`~gensim_jax.training.experiment.Experiment.batches`)
is built for process 0 of ``P`` (:class:`~gensim_jax.training.experiment.HostShard`) and timed over
``steps`` global batches: the rows that process gathers, renders, augments and decodes in its
pipeline, and their transfer to the device (``jax.device_put``). The first batch (pipeline start-up)
is excluded. The time is the process's CPU time (all threads: tf.data's workers and the numpy
streams' background thread build rows ahead of the consumer), wall time beside it, each the mean of
two rounds that take the counts in opposite orders, after an untimed pass that touches the source's
pages. With per-process data the work per global batch falls as ``1/P``
where the per-row work dominates; fixed per-batch costs (tf.data scheduling, one transfer) do not
fall. Each line reports ``ratio = t(P) / t(1)`` (target at P = 4: at most 0.35; ideal 0.25) and the
bytes a process sends per global batch.

Usage::

    python -m bench.input.scaling                 # quadrilaterals and imagenet_hierarchy cpu_small, and at 224 px
    python -m bench.input.scaling --paper-size    # the 224-px cases only (device augmentation)
    python -m bench.input.scaling --quick         # fewer steps
"""

from __future__ import annotations

import argparse
import itertools
import time

import jax
import numpy as np

from bench._harness import emit

#: ``(experiment, config, overrides)`` measured by default: the two image experiments at their ``cpu_small``
#: global batch (32) and at 256, where the rows, not the per-batch overheads, carry the work, with the
#: SimCLR views augmented on the host; then at the paper's image size (224) and batch (256) with the views
#: drawn on the device (``data.augment=device``: the host gathers ``uint8`` rows at the load size, issue 31).
CASES = (
    ("quadrilaterals", "cpu_small", {"data.augment": "host"}),
    ("imagenet_hierarchy", "cpu_small", {"data.augment": "host"}),
    ("quadrilaterals", "cpu_small", {"batch_size": 256, "data.augment": "host"}),
    ("imagenet_hierarchy", "cpu_small", {"batch_size": 256, "data.augment": "host"}),
    ("quadrilaterals", "cpu_small", {"batch_size": 256, "data.image_size": 224, "data.augment": "device"}),
    ("imagenet_hierarchy", "cpu_small", {"batch_size": 256, "data.image_size": 224, "data.augment": "device"}),
)
#: ``--paper-size``: the 224-px cases only (what issue 31's target names)
PAPER_SIZE = tuple(c for c in CASES if c[2].get("data.image_size") == 224)
COUNTS = (1, 2, 4)
TARGET_AT_4 = 0.35


def _time_stream(experiment, arm, config, data, shard, steps: int) -> tuple[float, float, int]:
    """Host CPU seconds and wall seconds per global batch to build this process's rows and put them on the
    device, and their bytes. CPU time counts every thread of the process (tf.data's workers build the
    rows ahead of the consumer, so wall time alone would hide their work behind the prefetch)."""
    stream = iter(experiment.arm(arm, config, data).batches(config.seed, shard)(0))
    jax.block_until_ready(jax.device_put(next(stream)))  # start-up: the pipeline's first batch
    nbytes = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for batch in itertools.islice(stream, steps):
        jax.block_until_ready(jax.device_put(batch))
        nbytes = sum(np.asarray(v).nbytes for v in batch.values())
    return (time.process_time() - c0) / steps, (time.perf_counter() - t0) / steps, nbytes


def measure(name: str, config_name: str, overrides: dict, steps: int) -> list[dict]:
    from gensim_jax import experiments as registry
    from gensim_jax.training.experiment import HostShard

    experiment = registry.load(name)
    config = experiment.get_config(config_name, **overrides)
    data = experiment.prepare(config)
    lines = []
    # Warm-up, untimed: one pass of one process over the stream touches every page of the in-memory
    # source (first touches would otherwise be charged to whichever count runs first).
    _time_stream(experiment, experiment.arms(config)[0], config, data, HostShard(0, 1, config.batch_size), steps)
    for arm in experiment.arms(config):
        # two rounds, the counts in opposite orders (1, 2, 4 then 4, 2, 1), averaged: drift of a shared
        # machine hits every count alike
        rounds = [
            {
                count: _time_stream(experiment, arm, config, data, HostShard(0, count, config.batch_size), steps)
                for count in order
            }
            for order in (COUNTS, COUNTS[::-1])
        ]
        per = {
            count: (
                float(np.mean([r[count][0] for r in rounds])),
                float(np.mean([r[count][1] for r in rounds])),
                rounds[0][count][2],
            )
            for count in COUNTS
        }
        cpu1, wall1, bytes1 = per[1]
        for count in COUNTS[1:]:
            cpu, wall, nbytes = per[count]
            ratio = cpu / cpu1
            target = TARGET_AT_4 if count == 4 else 1.0 / count + 0.1
            lines.append(
                {
                    "bench": "input_scaling",
                    "params": {
                        "experiment": name,
                        "config": config_name,
                        "arm": arm,
                        "size": int(config.data.image_size),
                        "augment": config.data.augment,
                        "global_batch": config.batch_size,
                        "processes": count,
                        "steps": steps,
                    },
                    "ours_s": round(cpu, 6),
                    "reference": "host CPU seconds per global batch of the same stream built by 1 process",
                    "reference_s": round(cpu1, 6),
                    "ratio": round(ratio, 3),
                    "target": target,
                    "met": bool(ratio <= target),
                    "wall_s": round(wall, 6),
                    "wall_one_process_s": round(wall1, 6),
                    "bytes_per_process": nbytes,
                    "bytes_one_process": bytes1,
                }
            )
    return lines


def run(quick: bool = False, paper_size: bool = False):
    steps = 5 if quick else 30
    for name, config_name, overrides in PAPER_SIZE if paper_size else CASES:
        if quick and overrides.get("data.image_size") == 224:
            overrides = {**overrides, "data.image_size": 64}  # the smoke run keeps the path, not the size
        yield from measure(name, config_name, overrides, steps)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--paper-size", action="store_true", help="only the 224-px cases with device augmentation")
    args = parser.parse_args(argv)
    for line in run(quick=args.quick, paper_size=args.paper_size):
        emit(line)


if __name__ == "__main__":
    main()
