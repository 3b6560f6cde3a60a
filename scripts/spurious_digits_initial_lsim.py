"""Initial L_sim of the spurious-digits LeNet-5 (thesis 003: "the similarity loss starts from 1e-5").

Prints, for the default and PyTorch initialisations of LeNet-5, L_sim at initialisation in both
forms (Eq. 11 as a sum, and the element mean over batch and embedding width) and the cross
entropy: per seed (mean over the first ``--batches`` training batches) and the mean with a 95%
t-interval over seeds; and the untrained network's ID / OOD accuracy, of the classifier and of the
nearest class centre of the embedding (the reference for the cross-entropy-off run). Used by
docs/results/spurious_digits.md.

    python scripts/spurious_digits_initial_lsim.py [--config thesis_mean] [--batches 10]
"""

from __future__ import annotations

import argparse
import json

from gensim_jax.evaluation import spurious_digits as protocol
from gensim_jax.evaluation.statistics import t_interval
from gensim_jax.experiments import spurious_digits as sd


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="thesis_mean")
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args(argv)
    base = sd.EXPERIMENT.get_config(args.config)
    data = sd.EXPERIMENT.prepare(base)
    report = {"config": args.config, "batch_size": base.batch_size, "batches": args.batches, "init": {}}
    for torch_init in (False, True):
        config = sd.EXPERIMENT.get_config(args.config, **{"model.torch_init": torch_init})
        rows = protocol.initial_losses(sd.EXPERIMENT, config, data, num_batches=args.batches)
        model = sd.make_model(config)
        predict, embed = protocol.make_predictor(model, config.eval.batch_size), protocol.make_embedder(model)
        for row in rows:
            variables = sd.EXPERIMENT.arm(sd.EXPERIMENT.arms(config)[0], config, data).init_variables(row["seed"])
            row.update(protocol.evaluate(predict, variables, data.sets))
            row.update(
                protocol.evaluate_centres(embed, variables, data.centre_train_set(config.eval.centre_images), data.sets)
            )
        summary = {}
        for key in ("l_sim_sum", "l_sim_mean", "ce", *protocol.METRICS[:2], *protocol.CENTRE_METRICS):
            mean, low, high = t_interval([r[key] for r in rows])
            summary[key] = {"mean": mean, "low": low, "high": high}
        report["init"]["pytorch" if torch_init else "default"] = {"per_seed": rows, "summary": summary}
        for key, v in summary.items():
            print(
                f"{'pytorch' if torch_init else 'default'} init: {key} = {v['mean']:.3g} "
                f"[{v['low']:.3g}, {v['high']:.3g}] (95% t-interval over {len(rows)} seeds)"
            )
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
