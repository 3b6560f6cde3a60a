"""The hierarchy protocol's calibration (issue 42): which stimulus settings separate a trained encoder from pixels
and from the untrained network, with the report card's 95% bootstrap intervals.

For each setting (the size the gratings are drawn at before they are enlarged to the model's input, the
images per class, the pixel noise) the report card's hierarchy protocol (``gensim_jax.evaluation.scorecard.score``,
protocol ``hierarchy``, 2 x 3 x 3 tree, 3-fold linear SVMs, seed 0) scores:

* a trained export (``--export``, e.g. an ``imagenet_hierarchy`` ``cpu_small`` run's ``gensim/run0/export``) at
  its input size, beside the pixels and its architecture untrained (initialisation seed 0): the rows the card
  puts beside an export;
* the untrained CORnet-Z at 224 px (``--cornet-size``; 0 skips it), the network whose ~98% per level at 224 px
  (gratings drawn at 224 px) made the protocol uninformative.

    python scripts/hierarchy_calibration.py --export runs/ih/gensim/run0/export [--resamples 1000]

Prints one Markdown table (score = sum_l log(a_l / c_l) [95% interval], accuracy per level) and, per setting,
whether the trained row's interval lies above both references'.
"""

from __future__ import annotations

import argparse

import jax

from gensim_jax.evaluation import scorecard as sc
from gensim_jax.evaluation.embed import ExportedEncoder, load_encoders
from gensim_jax.models import get_model
from gensim_jax.parallel import cpu_only_without_accelerators

#: (label, content size (None: drawn at the model's input size, as before issue 42), images per class, noise)
SETTINGS = (
    ("before: drawn at the input size, 12 per class, noise 0.1", None, 12, 0.1),
    ("calibrated: drawn at 32 px, 10 per class, noise 0.1", 32, 10, 0.1),
    ("drawn at 32 px, 10 per class, noise 0.3", 32, 10, 0.3),
    ("drawn at 32 px, 6 per class, noise 0.1", 32, 6, 0.1),
)


def _cell(v, iv, spec):
    return f"{v:{spec}} [{iv[0]:{spec}}, {iv[1]:{spec}}]" if iv else f"{v:{spec}}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", required=True, help="a trained export (imagenet_hierarchy cpu_small: 32 px)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cornet-size", type=int, default=224, help="input size of the untrained CORnet-Z row (0: none)")
    ap.add_argument("--settings", default="0,1,2,3", help="indices into SETTINGS")
    a = ap.parse_args(argv)
    cpu_only_without_accelerators()
    enc = load_encoders([a.export])[0]
    meta = dict(enc.metadata)
    model = get_model(meta["model"], **dict(meta.get("model_kwargs") or {}))
    untrained = ExportedEncoder(
        "", model, jax.jit(model.init)(jax.random.key(0), model.example_input(minimal=True)), meta
    )
    arch = meta["model"]
    print("| setting | row | input px | score [95%] | L1 | L2 | L3 | separated from the trained row |")
    print("|---|---|---|---|---|---|---|---|")
    for i in (int(x) for x in a.settings.split(",")):
        label, content, per_class, noise = SETTINGS[i]
        kw = dict(protocols=["hierarchy"], per_class=per_class, resamples=a.resamples, seed=a.seed,
                  hierarchy_content_size=content or 10_000, hierarchy_noise=noise)  # fmt: skip
        card = sc.score(
            lambda x: enc(x),
            name=f"{arch} trained ({meta.get('experiment')}/{meta.get('objective')}, seed {meta.get('seed')})",
            image_size=enc.image_size,
            references={"pixels": None, f"{arch} untrained": lambda x: untrained(x)},
            **kw,
        )
        e = card["hierarchy"]
        rows = [(card["model"], e, enc.image_size, "")]
        for name, r in e["references"].items():
            s = e["separation"]["rows"][name]
            rows.append((name, r, enc.image_size, {True: "yes", False: "no", None: "n/a"}[s["separated"]]))
        if a.cornet_size:
            fn, _ = sc.model_embedder("cornet_z", image_size=a.cornet_size)
            cz = sc.score(fn, name="cornet_z untrained", image_size=a.cornet_size, references={}, **kw)["hierarchy"]
            rows.append(("cornet_z untrained", cz, a.cornet_size, ""))
        for name, r, px, sep in rows:
            iv = r.get("interval", {})
            accs = " | ".join(
                _cell(x, (iv.get("accuracy") or [None] * 3)[j], ".3f") for j, x in enumerate(r["accuracy"])
            )
            print(
                f"| {label} | {name} | {px} | {_cell(r['score'], iv.get('score'), '.2f')} | {accs} | {sep} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
