"""``gensim-jax score``: the human-alignment report card of a vision encoder (:mod:`gensim_jax.evaluation.scorecard`).

One of (the encoder):

* ``--export DIR [DIR ...]``: an export of ``gensim-jax train`` (``WORKDIR/<arm>/run<r>/export``); the protocol
  its run evaluated gives exactly the numbers of ``gensim-jax eval export``; several exports of one model
  (e.g. the three seeds of ``make demo``) give one row, their mean, with an interval over the stimuli and
  one over the seeds (Student t);
* ``--model NAME [--weights FILE] [--layer NAME]``: a registry model (``gensim-jax list-models``),
  untrained (``--init-seed``) or with a PyTorch checkpoint (.pth/.pt/.safetensors, e.g. torchvision's
  ResNet-18 or the official CORnet-S), read at a layer (default: the pooled penultimate features);
* ``--embeddings FILE``: an .npz with ``ids`` (N,) and ``embeddings`` (N, D), one vector per stimulus
  written by ``gensim-jax score stimuli --out DIR`` (embed its PNGs with any framework).

Protocols (``--protocols``): ``oddball`` (quadrilaterals, humans and baboons), ``hierarchy``
(decoding a synthetic class tree), ``geoclidean`` (few-shot concepts; the official images with
``--geoclidean-dir``, else the product's renders, labelled as such) and, with
``--odd-one-out-trials CSV``, ``odd_one_out`` (the likelihood of human odd-one-out choices).

Prints a Markdown table (the model, then the reference rows: pixels, the untrained network of the
same architecture, humans and baboons, whose r is their split-half reliability) with a bootstrap interval
on every number, the human noise ceilings of the oddball and each row's r as a fraction of them, and
whether each protocol's reference rows are separated from the model (95% intervals apart); ``--json`` prints
the report card's JSON instead (the content of ``scorecard.json``); ``--out DIR`` writes
``DIR/scorecard.json`` and ``DIR/scorecard.png`` (a panel per protocol).

``gensim-jax score stimuli --out DIR`` writes every protocol's stimuli as PNG with ``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gensim_jax.evaluation.scorecard import ALL_PROTOCOLS, PROTOCOLS

PROG = "gensim-jax score"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--protocols",
        nargs="+",
        default=None,
        choices=ALL_PROTOCOLS,
        metavar="NAME",
        help=f"protocols to run (default: {' '.join(PROTOCOLS)}, and odd_one_out with --odd-one-out-trials)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the stimuli, the decoders' folds and the bootstrap")
    p.add_argument(
        "--trials-per-condition", type=int, default=10, help="oddball trials per (shape, deviant): 10 -> 440 trials"
    )
    p.add_argument("--per-class", type=int, default=10, help="hierarchy images per class (18 classes; 10: 180 images)")
    p.add_argument(
        "--geoclidean-dir",
        metavar="DIR",
        default=None,
        help="the official Geoclidean benchmark (elements/, constraints/); default: the product's own renders of "
        "the 37 concepts, labelled as such",
    )
    p.add_argument(
        "--odd-one-out-trials",
        metavar="CSV",
        default=None,
        help="human odd-one-out choices (image_1, image_2, image_3, choice, rt, participant): adds odd_one_out",
    )
    p.add_argument(
        "--odd-one-out-images",
        metavar="DIR",
        default=None,
        help="the images the trials name (DIR/<id>, <id>.png or <id>.jpg); not needed with --embeddings",
    )


def _protocols(a) -> list:
    if a.protocols is None:
        return list(PROTOCOLS) + (["odd_one_out"] if a.odd_one_out_trials else [])
    return list(dict.fromkeys(a.protocols))


def _stimuli_main(argv) -> int:
    from gensim_jax.evaluation import scorecard as sc

    p = argparse.ArgumentParser(
        prog=f"{PROG} stimuli",
        description="Write every protocol's stimuli as PNG (DIR/<protocol>/<id>.png) and DIR/manifest.json, to embed "
        "with any framework and score with gensim-jax score --embeddings FILE (the same --seed, "
        "--trials-per-condition and --per-class).",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (created)")
    p.add_argument("--image-size", type=int, default=224, help="side of the PNGs in pixels (default 224)")
    _common(p)
    a = p.parse_args(argv)
    stims = sc.stimuli(
        _protocols(a),
        a.image_size,
        seed=a.seed,
        trials_per_condition=a.trials_per_condition,
        per_class=a.per_class,
        geoclidean_dir=a.geoclidean_dir,
        odd_one_out_trials=a.odd_one_out_trials,
        odd_one_out_images=a.odd_one_out_images,
    )
    path = sc.write_stimuli(a.out, stims, progress=sys.stderr.isatty())
    print(f"wrote {sum(len(s.ids) for s in stims.values())} PNGs and {path}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    """Entry point of ``gensim-jax score``; returns the exit status (errors raise,
    :func:`gensim_jax.commands.errors.run_command` turns them into one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "stimuli":
        return _stimuli_main(argv[1:])
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--export",
        metavar="DIR",
        nargs="+",
        help="export directories of gensim-jax train; several (one model's seeds): one row, their mean, with an "
        "interval over the stimuli and one over the seeds",
    )
    src.add_argument("--model", metavar="NAME", help="a registry model (gensim-jax list-models)")
    src.add_argument("--embeddings", metavar="FILE", help="npz with ids (N,) and embeddings (N, D)")
    p.add_argument("--weights", metavar="FILE", help="with --model: a PyTorch checkpoint (.pth, .pt, .safetensors)")
    p.add_argument(
        "--layer",
        metavar="NAME",
        default=None,
        help="with --model: embedding (default: pooled penultimate), logits, or a top-level block (V1..IT of a "
        "CORnet, layer1_0..layer4_1 of a ResNet-18; an unknown name lists them), averaged over space",
    )
    p.add_argument("--image-size", type=int, default=None, help="with --model: input side (default: the model's, 224)")
    p.add_argument("--init-seed", type=int, default=0, help="with --model and no --weights: the initialisation seed")
    p.add_argument("--name", default=None, help="the model's row name")
    p.add_argument(
        "--stimulus-size",
        type=int,
        default=224,
        help="with --embeddings: the image side the pixels reference row is computed at (the PNGs' size)",
    )
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples per interval (0: none)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--out", metavar="DIR", help="write DIR/scorecard.json and DIR/scorecard.png")
    p.add_argument(
        "--json", action="store_true", help="print the report card's JSON instead of the Markdown table (only JSON)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar while embedding")
    _common(p)
    a = p.parse_args(argv)
    if not a.model and (a.weights or a.layer or a.image_size):
        p.error("--weights, --layer and --image-size go with --model")
    if a.resamples < 0:
        p.error(f"--resamples must be >= 0, got {a.resamples}")
    protocols = _protocols(a)

    from gensim_jax.parallel import cpu_only_without_accelerators

    cpu_only_without_accelerators()
    from gensim_jax.evaluation import scorecard as sc

    progress = not a.no_progress
    kw = dict(resamples=a.resamples, seed=a.seed)
    sizes = dict(
        trials_per_condition=a.trials_per_condition,
        per_class=a.per_class,
        geoclidean_dir=a.geoclidean_dir,
        odd_one_out_trials=a.odd_one_out_trials,
        odd_one_out_images=a.odd_one_out_images,
    )
    if a.export:
        for d in a.export:
            if not Path(d).is_dir():
                raise FileNotFoundError(f"--export {d}: no such directory (an export of gensim-jax train)")
        import importlib

        from gensim_jax import experiments as registry
        from gensim_jax.evaluation.scorecard_exports import score_exports

        card = score_exports(
            a.export,
            protocols,
            progress=progress,
            evaluate_export=registry.evaluate_export,
            experiment_module=lambda name: importlib.import_module(f"gensim_jax.experiments.{name}"),
            **kw,
            **sizes,
        )
    elif a.model:
        embed_fn, info = sc.model_embedder(
            a.model, a.weights, layer=a.layer, image_size=a.image_size, seed=a.init_seed, batch_size=a.batch_size
        )
        trained = "weights " + Path(a.weights).name if a.weights else "untrained"
        layer = "" if info["layer"] == "embedding" else f", {info['layer']}"
        name = a.name or f"{a.model} ({trained}{layer})"
        refs = {"pixels": None}
        if a.weights:  # the same architecture untrained
            untrained, _ = sc.model_embedder(
                a.model, None, layer=a.layer, image_size=a.image_size, seed=a.init_seed, batch_size=a.batch_size
            )
            refs[f"{a.model} (untrained)"] = untrained
        card = sc.score(
            embed_fn,
            protocols,
            name=name,
            image_size=info["image_size"],
            references=refs,
            progress=progress,
            info=info,
            **kw,
            **sizes,
        )
    else:
        vectors = sc.read_embeddings(a.embeddings)
        info = {"embeddings": a.embeddings, "sha256": sc.file_sha256(a.embeddings), "vectors": len(vectors)}
        card = sc.score_embeddings(
            vectors,
            protocols,
            name=a.name or Path(a.embeddings).stem,
            image_size=a.stimulus_size,
            info=info,
            **kw,
            **sizes,
        )
    from gensim_jax.jsonable import to_jsonable

    text = json.dumps(to_jsonable(card), indent=1)
    print(text if a.json else sc.format_markdown(card))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "scorecard.json").write_text(text + "\n")
        sc.plot_scorecard(card, out / "scorecard.png")
        print(f"wrote {out / 'scorecard.json'} and {out / 'scorecard.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
