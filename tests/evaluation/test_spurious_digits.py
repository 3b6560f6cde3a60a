"""Tests for gensim_jax.evaluation.spurious_digits: t-intervals against scipy, summaries by loops, predictor."""

import math

import numpy as np
import pytest
from scipy import stats

from gensim_jax.evaluation import spurious_digits as sd


@pytest.mark.parametrize("n", [2, 3, 5, 12])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(n, confidence):
    v = np.random.default_rng(n).uniform(0.3, 0.9, n)
    mean, lo, hi = sd.t_interval(v, confidence)
    ref_lo, ref_hi = stats.t.interval(confidence, n - 1, loc=v.mean(), scale=stats.sem(v))
    np.testing.assert_allclose([mean, lo, hi], [v.mean(), ref_lo, ref_hi], rtol=1e-12, atol=1e-12)


def test_t_interval_hand_computed():
    # values 0.80, 0.90, 1.00: mean 0.9, s = 0.1, sem = 0.1 / sqrt(3); t_0.975(2) = 4.302652729749464
    mean, lo, hi = sd.t_interval([0.8, 0.9, 1.0])
    half = 4.302652729749464 * 0.1 / math.sqrt(3)
    assert mean == pytest.approx(0.9)
    # scipy 1.14 and 1.17 differ from this 16-digit quantile by ~3e-12
    assert (lo, hi) == pytest.approx((0.9 - half, 0.9 + half), abs=1e-10)
    # no spread -> zero width
    assert sd.t_interval([0.5, 0.5, 0.5]) == pytest.approx((0.5, 0.5, 0.5))


@pytest.mark.parametrize("bad, match", [([1.0], "at least 2"), ([[1.0, 2.0]], "1-d"), ([1.0, np.nan], "finite")])
def test_t_interval_rejects_bad_values(bad, match):
    with pytest.raises(ValueError, match=match):
        sd.t_interval(bad)
    with pytest.raises(ValueError, match="confidence"):
        sd.t_interval([1.0, 2.0], confidence=1.0)


def test_accuracy_against_loop():
    rng = np.random.default_rng(0)
    p, y = rng.integers(0, 10, 200), rng.integers(0, 10, 200)
    assert sd.accuracy(p, y) == sum(int(a == b) for a, b in zip(p, y)) / 200
    with pytest.raises(ValueError, match="predictions and labels"):
        sd.accuracy(p, y[:5])
    with pytest.raises(ValueError, match="non-empty"):
        sd.accuracy(np.array([], int), np.array([], int))


def test_summarize_against_explicit_loops():
    rng = np.random.default_rng(3)
    per_run = {
        str(lam): [
            {"id_accuracy": float(rng.uniform(0.8, 1)), "ood_accuracy": float(rng.uniform(0, 0.5)), "seed": s}
            for s in range(4)
        ]
        for lam in (100.0, 0.25, 0.0, 10.0)
    }
    per_run["0.5"] = [{"id_accuracy": 0.7, "ood_accuracy": 0.6}]
    rows = sd.summarize(per_run, 0.95)
    assert [r["lambda"] for r in rows] == [0.0, 0.25, 0.5, 10.0, 100.0]
    by_lam = {float(k): v for k, v in per_run.items()}
    for row in rows:
        runs = by_lam[row["lambda"]]
        assert row["runs"] == len(runs)
        for m in ("id_accuracy", "ood_accuracy", "gap"):
            vals = [r["id_accuracy"] - r["ood_accuracy"] if m == "gap" else r[m] for r in runs]
            n = len(vals)
            mean = sum(vals) / n
            assert row[f"{m}_mean"] == pytest.approx(mean)
            if n == 1:
                assert row[f"{m}_low"] is None and row[f"{m}_high"] is None and row[f"{m}_std"] is None
                continue
            s = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
            half = stats.t.ppf(0.975, n - 1) * s / math.sqrt(n)
            assert row[f"{m}_std"] == pytest.approx(s)
            assert (row[f"{m}_low"], row[f"{m}_high"]) == pytest.approx((mean - half, mean + half))
    table = sd.format_table(rows)
    assert table.count("\n") == 1 + len(rows)
    assert f"{rows[0]['id_accuracy_mean']:.3f} [{rows[0]['id_accuracy_low']:.3f}" in table
    with pytest.raises(ValueError, match="lacks 'ood_accuracy'"):
        sd.summarize({0: [{"id_accuracy": 1.0}]})
    with pytest.raises(ValueError, match="empty"):
        sd.summarize({})


def test_plot_writes_png(tmp_path):
    rows = sd.summarize(
        {
            0: [{"id_accuracy": 0.9, "ood_accuracy": 0.4}, {"id_accuracy": 0.95, "ood_accuracy": 0.3}],
            100: [{"id_accuracy": 0.1, "ood_accuracy": 0.1}, {"id_accuracy": 0.12, "ood_accuracy": 0.1}],
        }
    )
    path = tmp_path / "p.png"
    sd.plot_accuracy_vs_lambda(rows, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_predictor_equals_direct_argmax():
    import jax

    from gensim_jax.models import get_model

    m = get_model("mlp", in_features=5, num_classes=4)
    v = m.init(jax.random.key(1), m.example_input())
    x = np.random.default_rng(0).normal(size=(7, 5)).astype(np.float32)
    logits = np.asarray(m.apply(v, x)["logits"])
    ref = [max(range(4), key=lambda c: logits[i, c]) for i in range(7)]
    np.testing.assert_array_equal(sd.make_predictor(m, batch_size=3)(v, x), ref)  # 3 + 3 + 1 padded
    with pytest.raises(ValueError, match="batch_size"):
        sd.make_predictor(m, 0)


@pytest.mark.slow
def test_docstring_examples():
    import doctest

    result = doctest.testmod(sd, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_nearest_centre_accuracy_against_loops():
    rng = np.random.default_rng(8)
    train, yt = rng.normal(size=(40, 3)), rng.integers(0, 5, 40)
    yt[:5] = np.arange(5)  # every class present
    test, ys = rng.normal(size=(25, 3)), rng.integers(0, 5, 25)
    centres = {
        q: [sum(train[k][d] for k in range(40) if yt[k] == q) / sum(yt == q) for d in range(3)] for q in range(5)
    }
    pred = [min(range(5), key=lambda q: sum((test[i][d] - centres[q][d]) ** 2 for d in range(3))) for i in range(25)]
    expected = sum(int(p == y) for p, y in zip(pred, ys)) / 25
    assert sd.nearest_centre_accuracy(train, yt, test, ys) == pytest.approx(expected)
    # a class absent from the training set is never predicted
    assert sd.nearest_centre_accuracy(train[yt != 4], yt[yt != 4], test[ys == 4], ys[ys == 4]) == 0.0
    with pytest.raises(ValueError, match="one D"):
        sd.nearest_centre_accuracy(train, yt, test[:, :2], ys)
    with pytest.raises(ValueError, match="labels must match"):
        sd.nearest_centre_accuracy(train, yt[:3], test, ys)


def test_summarize_and_table_carry_centre_accuracies_when_every_run_has_them():
    runs = [
        {"id_accuracy": 0.1, "ood_accuracy": 0.1, "id_centre_accuracy": 0.8, "ood_centre_accuracy": 0.5},
        {"id_accuracy": 0.1, "ood_accuracy": 0.1, "id_centre_accuracy": 0.6, "ood_centre_accuracy": 0.4},
    ]
    rows = sd.summarize({1: runs})
    mean, lo, hi = sd.t_interval([0.8, 0.6])
    assert (rows[0]["id_centre_accuracy_mean"], rows[0]["id_centre_accuracy_low"]) == pytest.approx((mean, lo))
    table = sd.format_table(rows)
    assert "nearest-centre" in table.splitlines()[0] and f"{hi:.3f}" in table
    plain = sd.summarize({1: runs[:1] + [{"id_accuracy": 0.2, "ood_accuracy": 0.1}]})
    assert "id_centre_accuracy_mean" not in plain[0] and "nearest-centre" not in sd.format_table(plain)


@pytest.mark.slow
def test_embedder_and_evaluate_centres_equal_direct_computation():
    import jax

    from gensim_jax.models import get_model

    m = get_model("mlp", in_features=5, num_classes=4)
    v = m.init(jax.random.key(2), m.example_input())
    rng = np.random.default_rng(1)
    x_train, y_train = rng.normal(size=(9, 5)).astype(np.float32), np.array([0, 1, 2, 3] * 2 + [0])
    x_test, y_test = rng.normal(size=(7, 5)).astype(np.float32), rng.integers(0, 4, 7)
    embed = sd.make_embedder(m, batch_size=4)
    z = np.asarray(m.apply(v, x_test)["embedding"])
    np.testing.assert_allclose(embed(v, x_test), z, rtol=1e-6)
    got = sd.evaluate_centres(embed, v, (x_train, y_train), {"id": (x_test, y_test)})
    zt = np.asarray(m.apply(v, x_train)["embedding"])
    assert got == {"id_centre_accuracy": sd.nearest_centre_accuracy(zt, y_train, z, y_test)}
