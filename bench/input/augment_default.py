"""Host or device augmentation on this machine: seconds per SimCLR training step through the runner.

What decides ``data.augment="auto"`` on a backend (:data:`gensim_jax.data.device_augment.AUTO_DEFAULT`):
the ``simclr`` arm of an experiment's ``cpu_small`` config trained by
:func:`~gensim_jax.training.runner.train_and_evaluate` for 10 and for 50 steps with each setting; the
difference over 40 steps is the time per step without start-up and compilation. ``host``: the views
augmented by TensorFlow in tf.data's parallel workers, beside the step; ``device``: drawn inside the
jitted step. Rounds alternate the two settings (``--rounds``). ``ratio = device / host``.

Usage::

    python -m bench.input.augment_default quadrilaterals imagenet_hierarchy --rounds 2
"""

from __future__ import annotations

import argparse
import tempfile

import jax

from bench._harness import emit


def seconds(experiment, mode: str, steps: int) -> float:
    from gensim_jax.training.runner import train_and_evaluate

    overrides = {"data.augment": mode, "arms": ("simclr",), "num_runs": 1, "num_steps": steps, "log_every": 10}
    config = experiment.get_config("cpu_small", **overrides)
    with tempfile.TemporaryDirectory() as workdir:
        result = train_and_evaluate(experiment, config, workdir, progress=False)
    return float(result["training"]["simclr"][0]["seconds"])


def run(names=("quadrilaterals",), rounds: int = 1, quick: bool = False):
    from gensim_jax import experiments as registry

    short, long = (2, 6) if quick else (10, 50)
    for name in names:
        experiment = registry.load(name)
        for r in range(rounds):
            per = {}
            for mode in ("host", "device"):
                per[mode] = (seconds(experiment, mode, long) - seconds(experiment, mode, short)) / (long - short)
            yield {
                "bench": "augment_default",
                "params": {"experiment": name, "config": "cpu_small", "arm": "simclr", "round": r},
                "ours_s": round(per["device"], 5),
                "reference": "the same steps with data.augment=host (TensorFlow in tf.data)",
                "reference_s": round(per["host"], 5),
                "ratio": round(per["device"] / per["host"], 3),
                "target": None,
                "met": True,
                "backend": jax.default_backend(),
            }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="*", default=["quadrilaterals", "imagenet_hierarchy"])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for line in run(args.experiments, args.rounds, args.quick):
        emit(line)


if __name__ == "__main__":
    main()
