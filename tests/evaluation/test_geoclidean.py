"""Geoclidean few-shot protocol: synthetic known answers, AUC vs sklearn and a Mann-Whitney count,
the official benchmark images end to end with a pixel embedding, and the Fig. 3C bars."""

import numpy as np
import pytest
from PIL import Image
from sklearn.metrics import roc_auc_score

from gensim_jax.evaluation import geoclidean as fs
from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES, TEST_CONCEPTS

KINDS = np.array(["in"] * 5 + ["close"] * 5 + ["far"] * 5)


def _concept(rng, sep):
    centre = rng.standard_normal(16)
    train = centre + 0.1 * rng.standard_normal((5, 16))
    test = np.concatenate(
        [
            centre + 0.1 * rng.standard_normal((5, 16)),
            centre + sep + 0.1 * rng.standard_normal((5, 16)),
            centre + 2 * sep + 0.1 * rng.standard_normal((5, 16)),
        ]
    )
    return train, test, KINDS


def test_prototype_scores_loop():
    rng = np.random.default_rng(0)
    tr, te = rng.standard_normal((5, 7)), rng.standard_normal((4, 7))
    proto = [sum(tr[:, d]) / 5 for d in range(7)]
    want = [sum(abs(te[j, d] - proto[d]) for d in range(7)) / 7 for j in range(4)]
    np.testing.assert_allclose(fs.prototype_scores(tr, te), want, rtol=1e-5)


@pytest.mark.parametrize("rule", fs.THRESHOLD_RULES)
def test_separable_gives_accuracy_one(rule):
    rng = np.random.default_rng(1)
    emb = {f"c{i}": _concept(rng, 1.0 + i) for i in range(4)}
    r = fs.fewshot_evaluate(emb, rule)
    for key in ("acc_close", "acc_far", "auc_close", "auc_far", "acc"):
        assert r.mean[key] == 1.0


def _mann_whitney_auc(pos, neg):
    u = 0.0
    for p in pos:
        for n in neg:
            u += 1.0 if p < n else 0.5 if p == n else 0.0
    return u / (len(pos) * len(neg))


def test_auc_matches_sklearn_and_count():
    rng = np.random.default_rng(2)
    for _ in range(20):
        pos = np.round(rng.standard_normal(5), 1)
        neg = np.round(rng.standard_normal(7) + 0.3, 1)  # rounding creates ties
        auc = fs.roc_auc(pos, neg)
        assert auc == pytest.approx(_mann_whitney_auc(pos, neg))
        y = np.r_[np.ones(5), np.zeros(7)]
        assert auc == pytest.approx(roc_auc_score(y, -np.r_[pos, neg]))
    rng = np.random.default_rng(3)
    emb = {f"c{i}": (rng.standard_normal((5, 6)), rng.standard_normal((15, 6)), KINDS) for i in range(3)}
    r = fs.fewshot_evaluate(emb)
    for name, (tr, te, k) in emb.items():
        s = fs.prototype_scores(tr, te)
        m = (k == "in") | (k == "far")
        assert r.per_concept[name]["auc_far"] == pytest.approx(roc_auc_score(k[m] == "in", -s[m]))


def test_best_threshold_brute_force():
    rng = np.random.default_rng(4)
    for _ in range(30):
        s = np.round(rng.uniform(size=10), 1)
        y = rng.uniform(size=10) < 0.5
        t, acc = fs.best_threshold(s, y)
        brute = max(np.mean((s <= c) == y) for c in np.r_[-1.0, s, 2.0])
        assert acc == pytest.approx(brute)
        assert np.mean((s <= t) == y) == pytest.approx(acc)


def test_global_threshold_is_shared():
    rng = np.random.default_rng(5)
    emb = {f"c{i}": (rng.standard_normal((5, 6)), rng.standard_normal((15, 6)), KINDS) for i in range(5)}
    r = fs.fewshot_evaluate(emb, "global")
    assert len({row["threshold_close"] for row in r.per_concept.values()}) == 1
    per = fs.fewshot_evaluate(emb, "per_concept")
    # per-concept thresholds can only do at least as well on every task
    for name in emb:
        assert per.per_concept[name]["acc_close"] >= r.per_concept[name]["acc_close"]


def test_benchmark_rule_matches_the_benchmark_loop():
    """``"benchmark"``: one threshold over all close and far tasks after per-task min-max scaling.

    Independent computation in the benchmark code's form: min-max each task's 10 distances
    (prototype = mean of the 5 train embeddings, sum of |differences|: the scale cancels in the
    min-max), try every scaled value (and "all out") as the threshold, keep the best mean task
    accuracy.
    """
    rng = np.random.default_rng(11)
    emb = {f"c{i}": (rng.standard_normal((5, 6)), rng.standard_normal((15, 6)) * (1 + i), KINDS) for i in range(6)}
    tasks = []
    for tr, te, kind in emb.values():
        d = np.array([np.sum(np.abs(x - tr.mean(0))) for x in te])
        for neg in ("close", "far"):
            m = (kind == "in") | (kind == neg)
            v = d[m]
            tasks.append(((v - v.min()) / (v.max() - v.min()), kind[m] == "in"))
    cands = [-1.0] + [v for s, _ in tasks for v in s]
    best = max(np.mean([np.mean((s <= t) == y) for s, y in tasks]) for t in cands)
    r = fs.fewshot_evaluate(emb, "benchmark")
    assert r.mean["acc"] == pytest.approx(best)
    thresholds = {row[f"threshold_{task}"] for row in r.per_concept.values() for task in ("close", "far")}
    assert len(thresholds) == 1
    # one threshold for both task types can do no better than one per type ("global")
    assert fs.fewshot_evaluate(emb, "global").mean["acc"] >= r.mean["acc"] - 1e-12


def test_pixel_embedding_pools():
    x = np.arange(2 * 8 * 8 * 3, dtype=np.float32).reshape(2, 8, 8, 3)
    e = fs.pixel_embedding(x, 4)
    want = x.mean(-1)[0, :2, :2].mean()
    assert e.shape == (2, 16) and e[0, 0] == pytest.approx(want)


def test_bad_inputs():
    with pytest.raises(ValueError, match="threshold"):
        fs.fewshot_evaluate({"a": _concept(np.random.default_rng(0), 1.0)}, "local")
    with pytest.raises(ValueError, match="share D"):
        fs.prototype_scores(np.zeros((5, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="no concept"):
        fs.load_geoclidean("/nonexistent-dir")


@pytest.mark.slow
def test_official_benchmark_end_to_end(shared_dir):
    root = shared_dir / "reference" / "geoclidean"
    concepts = fs.load_geoclidean(root, image_size=64)
    assert sorted(concepts) == sorted(CONCEPT_NAMES) and len(concepts) == 37
    c = concepts["triangle"]
    assert c.train.shape == (5, 64, 64, 3) and c.test.shape == (15, 64, 64, 3)
    assert c.test_kind.tolist() == KINDS.tolist()
    assert 0.0 <= c.train.min() and c.train.max() <= 1.0
    emb = fs.embed_concepts(concepts, lambda x: fs.pixel_embedding(x, 16))
    for rule in fs.THRESHOLD_RULES:
        for subset in (CONCEPT_NAMES, TEST_CONCEPTS):
            r = fs.fewshot_evaluate({k: emb[k] for k in subset}, rule)
            assert len(r.per_concept) == len(subset)
            for row in r.per_concept.values():
                for key in ("acc_close", "acc_far", "auc_close", "auc_far"):
                    assert 0.0 <= row[key] <= 1.0
            # a fitted threshold is never worse than calling everything "out" (5 of 10 right)
            if rule == "per_concept":
                assert min(row["acc_close"] for row in r.per_concept.values()) >= 0.5


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_plot_geoclidean_bars_are_run_means(tmp_path):
    models = {"gensim": {"close": [0.7, 0.8], "far": [0.9, 0.95]}, "simclr": {"close": [0.6], "far": [0.65]}}
    fig = fs.plot_geoclidean(models, tmp_path / "g.png", human={"close": 0.85, "far": 0.97})
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == sorted([0.75, 0.925, 0.6, 0.65])
    human = [c for c in ax.collections if c.get_label() == "human"]
    assert len(human) == 1
    ys = sorted(
        {round(float(s[0][1]), 6) for c in ax.collections if c.get_color()[0][1] > 0.5 for s in c.get_segments()}
    )
    assert 0.85 in ys
    _png_ok(tmp_path / "g.png")
    with pytest.raises(ValueError, match="far"):
        fs.plot_geoclidean({"m": {"close": [0.5]}})
