"""``gensim-jax score`` (gensim_jax.evaluation.scorecard): exports, registry models, PyTorch checkpoints,
the stimuli / embeddings route and the one-line errors, checked against independent computations."""

import json
import re

import numpy as np
import pytest
from scipy import stats

from gensim_jax.commands.main import main as cli_main
from gensim_jax.evaluation import scorecard as sc
from gensim_jax.evaluation.sable_meyer import (
    HUMAN_POPULATIONS,
    SHAPES,
    packaged_error_rates,
    pooled_error_rates,
    regularity_rank,
)
from tests._optional import needs_torch

TINY = ["--trials-per-condition", "1", "--per-class", "4", "--no-progress"]
ODDBALL_KEYS = {
    "rho9", "r_human", "r_baboon", "mean_error", "error_rate", "r_population", "argmax", "temperature",
    "regression_error", "interval", "interval_method", "stimuli", "references",
}  # fmt: skip


def _run(argv, capsys):
    status = cli_main(["score", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _independent_stats(rates):
    """rho9 and the Pearson r with the pooled humans and the baboons, by scipy directly."""
    table = packaged_error_rates()
    human = pooled_error_rates(table, HUMAN_POPULATIONS)
    return (
        stats.spearmanr(rates, regularity_rank()).statistic,
        stats.pearsonr(rates, human).statistic,
        stats.pearsonr(rates, table["baboons"]["error_rate"]).statistic,
    )


def _argmax_error_rates(z, deviant, shapes):
    """The paper's rule by a loop: the item farthest from the trial mean; error rate per shape."""
    wrong = {s: [] for s in SHAPES}
    for t in range(len(z)):
        d = [np.linalg.norm(z[t, i] - z[t].mean(axis=0)) for i in range(z.shape[1])]
        wrong[shapes[t]].append(int(np.argmax(d)) != int(deviant[t]))
    return np.array([np.mean(wrong[s]) for s in SHAPES])


@pytest.mark.slow
def test_model_oddball_out_writes_the_documented_keys_and_independent_numbers(tmp_path, capsys):
    out = tmp_path / "card"
    argv = ["--model", "cornet_z", "--image-size", "32", "--protocols", "oddball", "--resamples", "50"]
    status, text, err = _run([*argv, *TINY, "--out", str(out)], capsys)
    assert status == 0, err
    card = json.loads((out / "scorecard.json").read_text())
    assert (out / "scorecard.png").stat().st_size > 1000
    assert set(card) == {"model", "inputs", "provenance", "protocols", "oddball"}
    assert card["protocols"] == ["oddball"]
    e = card["oddball"]
    assert ODDBALL_KEYS <= set(e)
    assert set(e["references"]) == {"pixels", "humans (pooled)", "baboons", *sc.DOCUMENTED_ODDBALL}
    assert card["inputs"]["model"] == "cornet_z" and card["inputs"]["layer"] == "embedding"
    assert card["provenance"]["versions"]["jax"]
    # the argmax error rates from the model's own embeddings, by a loop
    fn, _ = sc.model_embedder("cornet_z", image_size=32)
    stim = sc.stimuli(["oddball"], 32, trials_per_condition=1)["oddball"]
    z = fn(stim.images).reshape(len(stim.data.images), 6, -1)
    want = _argmax_error_rates(z, stim.data.deviant, stim.data.shapes)
    np.testing.assert_allclose(e["argmax"]["error_rate"], want, atol=1e-12)
    for got, ref in zip((e["rho9"], e["r_human"], e["r_baboon"]), _independent_stats(e["error_rate"])):
        assert got == pytest.approx(ref, abs=1e-9)
    lo, hi = e["interval"]["graded"]["rho9"]
    assert -1 <= lo <= hi <= 1
    assert e["interval_method"]["resamples"] == 50
    # the human row: the pooled humans' own rho9 and their r with the baboons
    h = e["references"]["humans (pooled)"]
    assert h["rho9"] == pytest.approx(_independent_stats(h["error_rate"])[0])
    assert "| cornet_z (untrained) |" in text and "| pixels |" in text and "| humans (pooled) |" in text


@pytest.mark.slow
def test_stimuli_pngs_embedded_elsewhere_score_as_the_model_itself(tmp_path, capsys):
    from PIL import Image

    sizes = ["--trials-per-condition", "1", "--per-class", "4"]
    status, _, err = _run(["stimuli", "--out", str(tmp_path / "stim"), "--image-size", "32", *sizes], capsys)
    assert status == 0, err
    manifest = json.loads((tmp_path / "stim" / "manifest.json").read_text())
    assert {s["protocol"] for s in manifest["stimuli"]} == {"oddball", "hierarchy", "geoclidean"}
    assert manifest["protocols"]["geoclidean"]["images"] == 740
    assert manifest["protocols"]["oddball"]["trials"] == 44 and manifest["protocols"]["hierarchy"]["images"] == 72
    # "another framework": read the PNGs back and embed them with the same model
    fn, _ = sc.model_embedder("cornet_z", image_size=32)
    ids = [s["id"] for s in manifest["stimuli"]]
    images = np.stack(
        [np.asarray(Image.open(tmp_path / "stim" / s["file"]).convert("RGB")) for s in manifest["stimuli"]]
    )
    vectors = np.concatenate([fn(images[[i for i, s in enumerate(ids) if s.startswith(p)]]) for p in sc.PROTOCOLS])
    order = [i for p in sc.PROTOCOLS for i, s in enumerate(ids) if s.startswith(p)]
    np.savez(tmp_path / "emb.npz", ids=np.array(ids)[order], embeddings=vectors)
    common = ["--resamples", "30", *TINY]
    status, _, err = _run(["--embeddings", str(tmp_path / "emb.npz"), "--stimulus-size", "32", "--out",
                           str(tmp_path / "a"), *common], capsys)  # fmt: skip
    assert status == 0, err
    status, _, err = _run(["--model", "cornet_z", "--image-size", "32", "--out", str(tmp_path / "b"), *common], capsys)
    assert status == 0, err
    a = json.loads((tmp_path / "a" / "scorecard.json").read_text())
    b = json.loads((tmp_path / "b" / "scorecard.json").read_text())
    for p in sc.PROTOCOLS:
        strip = lambda e: {k: v for k, v in e.items() if k != "references"}  # noqa: E731
        assert strip(a[p]) == strip(b[p])
        assert a[p]["references"]["pixels"] == b[p]["references"]["pixels"]
    # the PNGs hold exactly the renders the model route embeds
    stims = sc.stimuli(sc.PROTOCOLS, 32, trials_per_condition=1, per_class=4)
    np.testing.assert_array_equal(images[order], np.concatenate([stims[p].images for p in sc.PROTOCOLS]))


def test_hierarchy_interval_and_held_out_predictions():
    """decode_levels' held-out predictions reproduce its per-fold accuracies; a one-hot leaf code decodes perfectly."""
    from gensim_jax.evaluation.hierarchy import decode_levels
    from gensim_jax.evaluation.scorecard_protocols import _score_hierarchy

    stim = sc.stimuli(["hierarchy"], 16, per_class=6)["hierarchy"]
    labels, tree, nodes = stim.data
    rng = np.random.default_rng(0)
    x = rng.standard_normal((len(labels), 8))
    res = decode_levels(x, labels, tree, nodes, seed=0)
    for lv, c in zip(res.levels, res.held_out_correct):
        assert np.nanmean(c) == pytest.approx(lv.accuracy, abs=0.02)  # pooled vs mean over near-equal folds
    onehot = np.eye(18)[labels] * 5 + 0.01 * rng.standard_normal((len(labels), 18))
    row = _score_hierarchy(onehot, stim, 100, 0)
    assert row["accuracy"] == [1.0, 1.0, 1.0]
    assert row["score"] == pytest.approx(np.log(2) + np.log(6) + np.log(18))
    assert row["interval"]["score"] == pytest.approx([row["score"]] * 2)


def _npz(path, ids, emb):
    np.savez(path, ids=np.array(ids), embeddings=emb)
    return str(path)


def test_embeddings_errors_are_one_line(tmp_path, capsys):
    stim = sc.stimuli(["oddball"], 16, trials_per_condition=1)["oddball"]
    ids = list(stim.ids)
    good = np.random.default_rng(0).standard_normal((len(ids), 4))
    cases = {
        "lack 1 of the 264 oddball": _npz(tmp_path / "missing.npz", ids[:-1], good[:-1]),
        "must be \\(N,\\) and embeddings \\(N, D\\)": _npz(tmp_path / "dims.npz", ids, good[:, :, None]),
        "1 embedding\\(s\\) contain NaN": _npz(tmp_path / "nan.npz", ids, np.where(np.arange(len(ids))[:, None] == 3, np.nan, good)),
        "ids repeat": _npz(tmp_path / "rep.npz", [ids[0]] * len(ids), good),
    }  # fmt: skip
    np.savez(tmp_path / "keys.npz", vectors=good)
    cases["missing arrays"] = str(tmp_path / "keys.npz")
    for match, path in cases.items():
        status, out, err = _run(
            ["--embeddings", path, "--protocols", "oddball", "--stimulus-size", "16", *TINY], capsys
        )
        assert status == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("gensim-jax score: error: ")
        assert re.search(match, err), err


def test_argument_errors_are_one_line(tmp_path, capsys):
    cases = {
        "no such directory": ["--export", str(tmp_path / "nope")],
        "unknown model 'resnet7'": ["--model", "resnet7"],
        "no such file": ["--model", "cornet_z", "--weights", str(tmp_path / "w.pth")],
        "the odd_one_out protocol needs a trials CSV": ["--model", "cornet_z", "--protocols", "odd_one_out"],
        "not a layer of cornet_z; choose from embedding, logits, IT, V1, V2, V4": [
            "--model", "cornet_z", "--layer", "V9", "--image-size", "32",
        ],
    }  # fmt: skip
    for match, argv in cases.items():
        status, out, err = _run(argv, capsys)
        assert status == 2 and out == "", err
        assert err.count("\n") == 1 and match in err, err
    usage = {  # argparse's own errors: one line too, exit status 2 by SystemExit
        "go with --model": ["--embeddings", "x.npz", "--layer", "V1"],
        "invalid choice: 'spurious_digits'": ["--model", "cornet_z", "--protocols", "spurious_digits"],
    }
    for match, argv in usage.items():
        with pytest.raises(SystemExit) as exc:
            cli_main(["score", *argv])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.count("\n") == 1 and match in err, err


@needs_torch
@pytest.mark.slow
def test_torchvision_resnet18_checkpoint_loads_scores_and_embeds_as_pytorch(tmp_path, capsys):
    import jax
    import torch

    from gensim_jax.preprocessing import normalize_uint8
    from tests.reference.torch_models import RefCORnetZ, randomize_, tv_resnet

    torch.manual_seed(0)
    ref = randomize_(tv_resnet(18), seed=3)
    path = tmp_path / "resnet18.pth"
    torch.save(ref.state_dict(), path)
    # the layer read is PyTorch's avgpool output of the ImageNet-normalised image
    fn, info = sc.model_embedder("resnet18", str(path), image_size=32)
    assert info["weights_sha256"] == __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    images = np.random.default_rng(0).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    with jax.default_matmul_precision("highest"):
        got = fn(images)
    x = torch.from_numpy(normalize_uint8(images, "imagenet")).permute(0, 3, 1, 2)
    with torch.no_grad():
        want = ref.embed(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    argv = ["--model", "resnet18", "--weights", str(path), "--image-size", "32", "--protocols", "oddball"]
    status, text, err = _run([*argv, "--resamples", "20", *TINY, "--out", str(tmp_path / "o")], capsys)
    assert status == 0, err
    card = json.loads((tmp_path / "o" / "scorecard.json").read_text())
    assert set(card["oddball"]["references"]) == {
        "pixels",
        "resnet18 (untrained)",
        "humans (pooled)",
        "baboons",
        *sc.DOCUMENTED_ODDBALL,
    }
    assert card["model"] == "resnet18 (weights resnet18.pth)"
    # a CORnet-Z checkpoint is not a ResNet-18: one line naming what does not match
    torch.save(RefCORnetZ().state_dict(), tmp_path / "cornet.pth")
    status, _, err = _run(["--model", "resnet18", "--weights", str(tmp_path / "cornet.pth"), *TINY], capsys)
    assert status == 2 and err.count("\n") == 1 and "gensim-jax score: error:" in err, err


@pytest.mark.slow
def test_score_export_equals_eval_export(tmp_path, capsys):
    """A tiny quadrilaterals run: score --export gives the numbers of eval export exactly."""
    from gensim_jax.commands.eval import main as eval_main
    from gensim_jax.experiments import quadrilaterals as exp
    from gensim_jax.training.runner import train_and_evaluate
    from tests.experiments.test_quadrilaterals import tiny_config

    config = tiny_config(**{"num_runs": 1, "arms": ("gensim",), "data.num_train_images": 16})
    train_and_evaluate(exp.EXPERIMENT, config, tmp_path / "w", progress=False)
    export = tmp_path / "w" / "gensim" / "run0" / "export"
    assert eval_main(["export", "--export", str(export), "--out", str(tmp_path / "eval.json")]) == 0
    capsys.readouterr()
    evaluation = json.loads((tmp_path / "eval.json").read_text())["runs"][0]["evaluation"]
    status, text, err = _run(["--export", str(export), "--out", str(tmp_path / "card"), "--resamples", "20",
                              "--per-class", "4", "--no-progress"], capsys)  # fmt: skip
    assert status == 0, err
    card = json.loads((tmp_path / "card" / "scorecard.json").read_text())
    assert card["protocols"] == list(sc.PROTOCOLS) and card["export_evaluation"]["evaluation"] == evaluation
    for p in ("hierarchy", "geoclidean"):  # the protocols the run did not evaluate: at the export's 32 px
        assert card[p]["stimuli"]["image_size"] == 32
        assert set(card[p]["references"]) == {"pixels", "cornet_z (untrained)"}
    e = card["oddball"]
    assert e["error_rate"] == evaluation["graded"] and e["argmax"]["error_rate"] == evaluation["argmax"]
    assert e["temperature"] == evaluation["temperature"]
    for got, ref in zip((e["rho9"], e["r_human"], e["r_baboon"]), _independent_stats(evaluation["graded"])):
        assert got == pytest.approx(ref, abs=1e-12)
    assert "cornet_z (untrained)" in e["references"] and "pixels" in e["references"]
    assert e["stimuli"]["trials"] == 44 and e["stimuli"]["image_size"] == 32


@pytest.mark.slow
def test_the_documented_python_example_runs(tmp_path):
    """docs/EVALUATION.md, section 5: its Python block runs and gives a scorecard with the documented keys."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "EVALUATION.md").read_text()
    section = doc[doc.index("## 5. Score your own model") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(
        compile(code.replace("/tmp/scorecard_example.png", str(tmp_path / "x.png")), "EVALUATION.md", "exec"), namespace
    )
    card = namespace["card"]
    assert {"model", "inputs", "provenance", "protocols", "oddball", "hierarchy"} <= set(card)
    assert ODDBALL_KEYS <= set(card["oddball"])
    assert {"score", "levels", "accuracy", "chance", "interval", "references"} <= set(card["hierarchy"])
    assert (tmp_path / "x.png").is_file()
    # every key the JSON table names for the oddball entry exists
    table = section[section.index("**`scorecard.json`**") :]
    row = next(line for line in table.splitlines() if line.startswith("| `oddball` |"))
    for key in ("rho9", "r_human", "r_baboon", "mean_error", "error_rate", "r_population", "argmax", "temperature"):
        assert f"`{key}`" in row and key in card["oddball"]


@pytest.mark.slow
def test_geoclidean_official_images_against_a_loop(shared_dir):
    """The geoclidean entry on the official images: per-concept AUC of the prototype's mean L1 distance, by a loop."""
    from PIL import Image

    root = shared_dir / "reference" / "geoclidean"

    def embed(images):  # any function of uint8 images: grey levels pooled 4 x 4
        g = images.astype(np.float64).mean(axis=-1)
        return g.reshape(len(g), 8, 4, 8, 4).mean(axis=(2, 4)).reshape(len(g), -1)

    card = sc.score(embed, ["geoclidean"], image_size=32, geoclidean_dir=str(root), references={}, resamples=200)
    e = card["geoclidean"]
    assert e["stimuli"]["concepts"] == 37 and e["stimuli"]["images"] == 37 * 20
    assert "official" in e["stimuli"]["source"]
    aucs = {"close": [], "far": []}
    for d in sorted((root / "elements").glob("concept_*")) + sorted((root / "constraints").glob("concept_*")):
        load = lambda p: np.asarray(Image.open(p).convert("RGB").resize((32, 32), Image.BILINEAR))  # noqa: E731
        proto = embed(np.stack([load(p) for p in sorted((d / "train").glob("*_fin.png"))])).mean(axis=0)
        dist = lambda prefix: [  # noqa: E731
            np.mean(np.abs(embed(load(p)[None])[0] - proto)) for p in sorted((d / "test").glob(f"{prefix}*_fin.png"))
        ]
        pos = dist("in_")
        for task, prefix in (("close", "out_close_"), ("far", "out_far_")):
            neg = dist(prefix)
            aucs[task].append(np.mean([(n > p) + 0.5 * (n == p) for p in pos for n in neg]))
    assert e["auc_close"] == pytest.approx(np.mean(aucs["close"]), abs=1e-6)
    assert e["auc_far"] == pytest.approx(np.mean(aucs["far"]), abs=1e-6)
    lo, hi = e["interval"]["auc_close"]
    assert lo <= e["auc_close"] <= hi
    assert e["acc"] == pytest.approx((e["acc_close"] + e["acc_far"]) / 2)


def test_geoclidean_renders_are_labelled_and_missing_dir_is_one_line(tmp_path, capsys):
    stim = sc.stimuli(["geoclidean"], 16)["geoclidean"]
    assert len(stim.ids) == 37 * 20 and stim.images.dtype == np.uint8 and stim.images.shape[1:] == (16, 16, 3)
    assert "own renders" in stim.settings["source"] and "geoclidean/perp_bisector/test_close_5" in stim.ids
    argv = ["--embeddings", "x.npz", "--protocols", "geoclidean", "--geoclidean-dir", str(tmp_path / "no")]
    status, out, err = _run(argv, capsys)
    assert status == 2 and err.count("\n") == 1 and "x.npz: no such file" in err


@pytest.mark.slow
def test_layers_are_read_where_named():
    """CORnet-Z's embedding is IT's output averaged over space, so --layer IT equals it; V1 has 64 channels."""
    images = np.random.default_rng(1).integers(0, 256, (5, 32, 32, 3), dtype=np.uint8)
    emb = sc.model_embedder("cornet_z", image_size=32)[0](images)
    it = sc.model_embedder("cornet_z", image_size=32, layer="IT")[0](images)
    np.testing.assert_allclose(it, emb, rtol=1e-6, atol=1e-6)
    v1, info = sc.model_embedder("cornet_z", image_size=32, layer="V1")
    assert v1(images).shape == (5, 64) and info["layer"] == "V1"
    logits = sc.model_embedder("cornet_z", image_size=32, layer="logits")[0](images)
    assert logits.shape == (5, 1000)
    with pytest.raises(ValueError, match="expected uint8 images"):
        v1(images.astype(np.float32))


def _loop_mean_likelihood(z, trials_rows, ids):
    """The paper's objective by loops: per participant, the best alpha of mean P(choice) over the grid; then the mean."""
    from gensim_jax.evaluation.odd_one_out import DEFAULT_ALPHAS

    u = {i: v / np.linalg.norm(v) for i, v in zip(ids, z)}
    best = []
    for part in sorted({r[5] for r in trials_rows}):
        rows = [r for r in trials_rows if r[5] == part]
        per_alpha = []
        for alpha in DEFAULT_ALPHAS:
            ps = []
            for a, b, c, choice, rt, _ in rows:
                sim = {a: u[b] @ u[c], b: u[a] @ u[c], c: u[a] @ u[b]}  # the pair left when each is odd
                t = alpha * rt
                m = max(sim.values())
                ps.append(np.exp((sim[choice] - m) / t) / sum(np.exp((v - m) / t) for v in sim.values()))
            per_alpha.append(np.mean(ps))
        best.append(max(per_alpha))
    return float(np.mean(best))


def test_odd_one_out_from_a_trials_csv_and_images(tmp_path, capsys):
    """Trials of 3 participants over 9 PNGs: the model route, the embeddings route and a loop agree."""
    from PIL import Image

    imgs = sc.stimuli(["hierarchy"], 16, per_class=1)["hierarchy"].images[:9]
    ids = [f"im{i}" for i in range(9)]
    for i, im in zip(ids, imgs):
        Image.fromarray(im).save(tmp_path / f"{i}.png")
    rng = np.random.default_rng(3)
    rows = []
    for part in ("p1", "p2", "p3"):
        for _ in range(12):
            a, b, c = rng.choice(ids, 3, replace=False)
            rows.append((a, b, c, [a, b, c][rng.integers(3)], float(rng.uniform(0.5, 2.0)), part))
    csv = tmp_path / "trials.csv"
    csv.write_text(
        "image_1,image_2,image_3,choice,rt,participant\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
    )

    def embed(x):  # grey levels pooled 4 x 4, shifted so no vector is zero
        g = x.astype(np.float64).mean(axis=-1)
        return g.reshape(len(g), 4, 4, 4, 4).mean(axis=(2, 4)).reshape(len(g), -1) + 1.0

    kw = dict(image_size=16, odd_one_out_trials=str(csv), resamples=100)
    card = sc.score(embed, ["odd_one_out"], odd_one_out_images=str(tmp_path), references={}, **kw)
    e = card["odd_one_out"]
    loaded = np.stack([np.asarray(Image.open(tmp_path / f"{i}.png").convert("RGB")) for i in ids])
    assert e["mean_likelihood"] == pytest.approx(
        _loop_mean_likelihood(embed(loaded), rows, ids), rel=1e-6
    )  # float32 vectors
    assert set(e["participants"]) == {"p1", "p2", "p3"} and e["stimuli"]["trials"] == 36
    lo, hi = e["interval"]["mean_likelihood"]
    assert lo <= e["mean_likelihood"] <= hi
    # the same vectors by id, without the images (no pixels row then)
    vectors = {f"odd_one_out/{i}": v for i, v in zip(ids, embed(loaded))}
    card2 = sc.score_embeddings(vectors, ["odd_one_out"], **kw)
    assert card2["odd_one_out"]["mean_likelihood"] == e["mean_likelihood"]
    assert card2["odd_one_out"]["references"] == {}
    # a trial naming an image that is not there: one line naming it
    csv.write_text(csv.read_text() + "im0,im1,nope,im0,1.0,p1\n")
    argv = ["--model", "cornet_z", "--image-size", "16", "--odd-one-out-trials", str(csv)]
    status, _, err = _run([*argv, "--odd-one-out-images", str(tmp_path), "--protocols", "odd_one_out"], capsys)
    assert status == 2 and err.count("\n") == 1 and "no image 'nope'" in err, err


@pytest.mark.slow
def test_score_export_of_another_experiment_keeps_its_evaluation(tmp_path, capsys):
    """An imagenet_hierarchy export (LeNet-5): eval export's entry kept whole; the protocols scored at 32 px."""
    from gensim_jax.commands.eval import main as eval_main
    from gensim_jax.experiments import imagenet_hierarchy as exp
    from gensim_jax.training.runner import train_and_evaluate
    from tests.experiments.test_imagenet_hierarchy import tiny_config

    config = tiny_config(**{"num_runs": 1, "arms": ("gensim",)})
    train_and_evaluate(exp.EXPERIMENT, config, tmp_path / "w", progress=False)
    export = tmp_path / "w" / "gensim" / "run0" / "export"
    assert eval_main(["export", "--export", str(export), "--out", str(tmp_path / "eval.json")]) == 0
    capsys.readouterr()
    want = json.loads((tmp_path / "eval.json").read_text())["runs"][0]
    argv = ["--export", str(export), "--protocols", "hierarchy", "oddball", "--resamples", "10", *TINY]
    status, text, err = _run([*argv, "--out", str(tmp_path / "card")], capsys)
    assert status == 0, err
    card = json.loads((tmp_path / "card" / "scorecard.json").read_text())
    assert card["export_evaluation"] == want
    assert card["protocols"] == ["hierarchy", "oddball"] and "source" not in card["oddball"]
    assert card["inputs"]["model"] == "lenet5"
    h, ev = card["hierarchy"], want["evaluation"]  # the run's held-out images, its numbers exactly
    assert h["score"] == ev["score_uniform"] and h["accuracy"] == [lv["accuracy"] for lv in ev["levels"]]
    assert h["source"].startswith("gensim-jax eval export") and h["stimuli"]["images"] == 12
    assert len(h["interval"]["accuracy"]) == len(h["levels"])  # bootstrap of the same decoding's predictions
    assert set(h["references"]) == {"pixels", "lenet5 (untrained)"}
    assert set(card["oddball"]["references"]) == {
        "pixels",
        "lenet5 (untrained)",
        "humans (pooled)",
        "baboons",
        *sc.DOCUMENTED_ODDBALL,
    }


@pytest.mark.slow
def test_score_export_of_a_geoclidean_run_is_its_evaluation(tmp_path, capsys):
    """A geoclidean export: the few-shot entry is the run's own (its 7 held-out concepts), as eval export gives it."""
    from gensim_jax.commands.eval import main as eval_main
    from gensim_jax.experiments import geoclidean as exp
    from gensim_jax.training.runner import train_and_evaluate
    from tests.experiments.test_geoclidean import tiny_config

    train_and_evaluate(
        exp.EXPERIMENT, tiny_config(**{"num_runs": 1, "arms": ("gensim",)}), tmp_path / "w", progress=False
    )
    export = tmp_path / "w" / "gensim" / "run0" / "export"
    assert eval_main(["export", "--export", str(export), "--out", str(tmp_path / "eval.json")]) == 0
    capsys.readouterr()
    ev = json.loads((tmp_path / "eval.json").read_text())["runs"][0]["evaluation"]
    status, _, err = _run(["--export", str(export), "--protocols", "geoclidean", "--resamples", "10", "--out",
                           str(tmp_path / "card"), "--no-progress"], capsys)  # fmt: skip
    assert status == 0, err
    g = json.loads((tmp_path / "card" / "scorecard.json").read_text())["geoclidean"]
    want = ev.get("sampler/per_concept", ev.get("sampler"))
    assert {k: g[k] for k in sc.GEOCLIDEAN_METRICS} == {k: want[k] for k in sc.GEOCLIDEAN_METRICS}
    assert g["stimuli"]["concepts"] == 7 and g["source"].startswith("gensim-jax eval export")
    # the per-concept numbers behind the interval come from the same embedding: their mean is the run's
    assert np.mean([c["auc_close"] for c in g["per_concept"].values()]) == pytest.approx(want["auc_close"], abs=1e-12)


def test_documented_rows_are_the_documented_numbers():
    """The documented reference rows carry the numbers of their source page's tables (graded, then argmax)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "results" / "quadrilaterals.md").read_text()
    section = page[page.index("### The demo's run (3 runs per objective)") :]
    graded, argmax = (section[section.index(h) :] for h in ("Graded read-out (headline)", "Argmax read-out"))

    def row(text, model):  # | model | runs | mean error | [tau |] rho(9) | p | r human | r baboon | ...
        cells = [c.strip() for c in next(x for x in text.splitlines() if x.startswith(f"| {model} |")).split("|")[1:-1]]
        off = 1 if text is graded else 0
        return {"mean_error": float(cells[2]), "rho9": float(cells[3 + off]), "r_human": float(cells[5 + off]),
                "r_baboon": float(cells[6 + off])}  # fmt: skip

    for name, model in (("GenSim", "gensim"), ("supervised", "supervised")):
        doc = sc.DOCUMENTED_ODDBALL[f"documented: {name} CORnet-Z (make demo, 3 runs)"]
        assert {k: doc[k] for k in ("mean_error", "rho9", "r_human", "r_baboon")} == row(graded, model)
        assert doc["argmax"] == row(argmax, model)


@pytest.mark.slow
def test_a_graded_readout_that_cannot_reach_the_human_error_says_so_and_legends_cover_no_data():
    """A random encoder errs more than the humans' 0.249 even without noise: its graded columns are its argmax
    ones, and the row (JSON and Markdown) says so with the error it does reach. The figure's legends lie
    outside every panel's axes."""
    from gensim_jax.evaluation.oddball import human_mean_error

    def random_encoder(images):  # no information about the images: chance on the oddball task
        return np.random.default_rng(len(images)).normal(size=(len(images), 8)).astype(np.float32)

    small = dict(image_size=32, trials_per_condition=1, per_class=4, resamples=20, chunk=10_000)
    card = sc.score(random_encoder, ["oddball", "hierarchy"], name="random", **small)
    row = card["oddball"]
    assert row["temperature"] == 0 and row["level_matched"] is False
    assert row["mean_error"] == pytest.approx(row["argmax"]["mean_error"]) and row["mean_error"] > human_mean_error()
    # the JSON says so, with the lowest error any temperature reaches (by a grid here, independently)
    ro = row["readout"]
    assert ro["reached"] is False and ro["target_error"] == pytest.approx(human_mean_error())
    stim = sc.stimuli(["oddball"], 32, trials_per_condition=1)["oddball"]
    z = random_encoder(stim.images).reshape(len(stim.data.images), 6, -1)
    d = np.linalg.norm(z - z.mean(1, keepdims=True), axis=-1)
    s, dev = d / d.std(), stim.data.deviant
    errs = [np.mean(np.argmax(s, 1) != dev)]
    for tau in np.geomspace(1e-3, 1e3, 241):
        q = np.exp(s / tau - (s / tau).max(1, keepdims=True))
        errs.append(np.mean(1 - (q / q.sum(1, keepdims=True))[np.arange(len(dev)), dev]))
    assert ro["lowest_error"] == pytest.approx(min(errs)) and ro["lowest_error"] > human_mean_error()
    assert f"the lowest error any temperature gives this encoder is {ro['lowest_error']:.3f}" in row["readout_note"]
    text = sc.format_markdown(card)
    line = next(x for x in text.splitlines() if x.startswith("| random |"))
    assert (
        f"CANNOT reach its target {human_mean_error():.3f}: the lowest error it reaches is {ro['lowest_error']:.3f}"
        in line
    )
    assert f"random: {row['readout_note']}." in text
    for name, ref in row["references"].items():  # pixels and the untrained network: level-matched or said
        assert "temperature" not in ref or ref["level_matched"] or ref["readout_note"], name

    fig = sc.scorecard_figure(card)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend().get_window_extent(renderer)
        frame = ax.get_window_extent(renderer)
        assert legend.y1 <= frame.y0 or not legend.overlaps(frame), ax.get_title()
        assert legend.y0 >= 0, f"{ax.get_title()}: the legend falls off the figure"


def test_json_prints_only_the_report_card(tmp_path, capsys):
    stim = sc.stimuli(["oddball"], 16, trials_per_condition=1)["oddball"]
    vectors = np.random.default_rng(1).standard_normal((len(stim.ids), 4))
    path = _npz(tmp_path / "v.npz", list(stim.ids), vectors)
    argv = ["--embeddings", path, "--protocols", "oddball", "--stimulus-size", "16", "--resamples", "0", *TINY]
    status, out, err = _run([*argv, "--json", "--out", str(tmp_path / "card")], capsys)
    assert status == 0, err
    card = json.loads(out)
    assert card == json.loads((tmp_path / "card" / "scorecard.json").read_text())
    status, text, err = _run(argv, capsys)
    assert status == 0, err
    assert text.startswith(f"# Scorecard: {card['model']}") and "| humans (pooled) |" in text


@pytest.mark.slow
def test_separation_of_reference_rows_and_fractions_of_the_ceiling():
    """A one-hot code of the hierarchy's leaf classes is separated from pixels (its interval above theirs); the same
    encoder as a reference row is not. The oddball rows carry r / ceiling, the human rows their reliability."""
    stims = sc.stimuli(["hierarchy"], 16, per_class=6)
    labels = stims["hierarchy"].data[0]
    noise = np.random.default_rng(0).standard_normal((len(labels), 18))

    def leaf_code(images):
        assert len(images) == len(labels)  # one call (chunk below)
        return (np.eye(18)[labels] * 5 + 0.01 * noise).astype(np.float32)

    card = sc.score(leaf_code, ["hierarchy"], name="code", image_size=16, per_class=6, resamples=100,
                    references={"pixels": None, "code again": leaf_code}, chunk=10_000)  # fmt: skip
    sep = card["hierarchy"]["separation"]
    assert sep["metric"] == "score" and sep["rows"]["pixels"]["separated"] is True
    assert sep["rows"]["pixels"]["model_above"] is True and sep["rows"]["code again"]["separated"] is False
    assert sep["all_separated"] is False
    text = sc.format_markdown(card)
    assert "| hierarchy | score | yes, model above | no | no |" in text

    rng = np.random.default_rng(3)
    card = sc.score(lambda x: rng.standard_normal((len(x), 6)).astype(np.float32), ["oddball"], name="r",
                    image_size=32, trials_per_condition=1, resamples=30)  # fmt: skip
    e = card["oddball"]
    c = e["ceilings"]
    rel = c["r_human"]["split_half"]["reliability"]
    assert e["of_ceiling"]["r_human"] == pytest.approx(e["r_human"] / rel)
    assert e["of_between_group"]["r_human"] == pytest.approx(e["r_human"] / c["r_human"]["between_group"]["r"])
    name = "documented: GenSim CORnet-Z (make demo, 3 runs)"
    doc = e["references"][name]
    assert doc["of_ceiling"]["r_human"] == pytest.approx(sc.DOCUMENTED_ODDBALL[name]["r_human"] / rel)
    humans, baboons = e["references"]["humans (pooled)"], e["references"]["baboons"]
    assert humans["r_human"] == pytest.approx(rel) and humans["r_human"] < 1.0
    assert baboons["r_baboon"] == pytest.approx(c["r_baboon"]["split_half"]["reliability"])
    assert "| humans (pooled) |" in sc.format_markdown(card) and " (reliability) |" in sc.format_markdown(card)
    assert "_draws" not in json.dumps(card, default=str)


@pytest.mark.slow
def test_several_exports_give_one_row_with_intervals_over_trials_and_seeds(tmp_path, capsys):
    """Two exports of CORnet-Z (two initialisations): score --export A B prints one row whose numbers are the mean of
    the two single cards, its seed interval the Student t interval of the two values, its trial interval from the
    mean of the draws."""
    import jax

    from gensim_jax.models import get_model
    from gensim_jax.training.export import export_variables

    model = get_model("cornet_z", num_classes=None)
    exports = []
    for r in (1, 2):
        v = jax.jit(model.init)(jax.random.key(r), model.example_input(minimal=True))
        exports.append(str(export_variables(tmp_path / f"run{r}", v, model="cornet_z", model_kwargs={"num_classes": None},
                                            image_size=32, preprocess="imagenet", seed=r)))  # fmt: skip
    common = ["--protocols", "oddball", "--resamples", "40", "--trials-per-condition", "1", "--no-progress"]
    status, text, err = _run(["--export", *exports, "--out", str(tmp_path / "both"), *common], capsys)
    assert status == 0, err
    card = json.loads((tmp_path / "both" / "scorecard.json").read_text())
    e = card["oddball"]
    assert card["model"].endswith("mean of 2 exports") and len(card["inputs"]["exports"]) == 2
    assert [r["export"] for r in e["runs"]] == exports and [r["seed"] for r in e["runs"]] == [1, 2]
    checked = 0
    for key in ("r_human", "r_baboon", "mean_error", "rho9"):  # each export's own value, as its single card has it
        vals = [r[key] for r in e["runs"]]
        if None in vals:
            continue
        checked += 1
        assert e[key] == pytest.approx(np.mean(vals))
        half = stats.t.ppf(0.975, 1) * np.std(vals, ddof=1) / np.sqrt(2)
        assert e["interval_seeds"][key] == pytest.approx([np.mean(vals) - half, np.mean(vals) + half])
    assert checked >= 2
    lo, hi = e["interval"]["graded"]["mean_error"]
    assert lo <= e["mean_error"] <= hi
    rows = [x for x in text.splitlines() if x.startswith("| cornet_z")]
    assert len(rows) == 2 and "mean of 2 exports" in rows[0] and "; seeds [" in rows[0]  # the model, then untrained
    # both initialisations err more than the humans: the mean row says the read-out missed its target in both
    assert e["readout"]["exports_not_reached"] == 2 and "in 2 of the 2 exports" in e["readout_note"]
