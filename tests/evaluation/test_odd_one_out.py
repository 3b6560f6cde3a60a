"""Odd-one-out likelihood: explicit softmax loops, alpha recovered from simulated choices, the curves and figure."""

import numpy as np
import pytest
from PIL import Image

from gensim_jax.evaluation import odd_one_out as oo


def _cos(a, b):
    return a @ b / np.linalg.norm(a) / np.linalg.norm(b)


def test_log_probs_match_loop():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((10, 4))
    items = np.array([rng.choice(10, 3, replace=False) for _ in range(25)])
    choice = rng.integers(0, 3, 25)
    rt = rng.uniform(0.5, 3, 25)
    trials = oo.trials_from_arrays(items, choice, rt, ["p"] * 25)
    alpha = 0.3
    got = oo.choice_log_probs(e, trials, alpha)
    for t in range(25):
        i, j, k = items[t]
        # logit of "i is odd" = s(j, k), of "j is odd" = s(i, k), of "k is odd" = s(i, j)
        logits = np.array([_cos(e[j], e[k]), _cos(e[i], e[k]), _cos(e[i], e[j])]) / (alpha * rt[t])
        p = np.exp(logits) / np.exp(logits).sum()
        assert got[t] == pytest.approx(np.log(p[choice[t]]))
    grid = oo.choice_log_probs(e, trials, np.array([alpha, 1.0]))
    np.testing.assert_allclose(grid[0], got)


def test_odd_is_k_when_ij_most_similar():
    e = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]])
    trials = oo.trials_from_arrays([[0, 1, 2]], [2], [1.0], ["p"])
    assert np.exp(oo.choice_log_probs(e, trials, 0.01)) > 0.99


def test_recover_alpha_from_simulated_choices():
    rng = np.random.default_rng(1)
    n_img, true_alpha = 40, 0.05
    e = rng.standard_normal((n_img, 6))
    fits = []
    for participant in range(3):
        t = 3000
        items = np.array([rng.choice(n_img, 3, replace=False) for _ in range(t)])
        rt = rng.uniform(0.5, 2.0, t)
        probe = oo.trials_from_arrays(items, np.zeros(t, int), rt, ["x"] * t)
        p = np.stack(
            [
                np.exp(oo.choice_log_probs(e, oo.Trials(items, np.full(t, c), rt, probe.participant), true_alpha))
                for c in range(3)
            ],
            axis=1,
        )
        np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-9)
        choice = (rng.uniform(size=(t, 1)) > np.cumsum(p, 1)).sum(1)
        fits.append(
            oo.fit_alpha(
                e, oo.trials_from_arrays(items, choice, rt, [f"p{participant}"] * t), objective="log_likelihood"
            )
        )
    for f in fits:
        assert abs(np.log(f.alpha / true_alpha)) < np.log(1.35)


def test_mean_likelihood_grid_search_brute_force(tmp_path):
    rng = np.random.default_rng(2)
    ids = [f"img{i}" for i in range(12)]
    e = rng.standard_normal((12, 5))
    rows = ["image_1,image_2,image_3,choice,rt,participant"]
    for p in ("a", "b"):
        for _ in range(30):
            trio = rng.choice(12, 3, replace=False)
            rows.append(
                ",".join(
                    [ids[trio[0]], ids[trio[1]], ids[trio[2]], ids[rng.choice(trio)], f"{rng.uniform(0.4, 2):.3f}", p]
                )
            )
    path = tmp_path / "trials.csv"
    path.write_text("\n".join(rows) + "\n")
    trials = oo.read_trials(path, ids)
    alphas = np.logspace(-2, 1, 13)
    res = oo.odd_one_out_likelihood(e, trials, alphas)
    for p in ("a", "b"):
        m = trials.participant == p
        sub = oo.Trials(trials.items[m], trials.choice[m], trials.rt[m], trials.participant[m])
        scores = [np.mean(np.exp(oo.choice_log_probs(e, sub, a))) for a in alphas]
        assert res["participants"][p].alpha == alphas[int(np.argmax(scores))]
        assert res["participants"][p].mean_likelihood == pytest.approx(max(scores))
    assert res["mean_likelihood"] == pytest.approx(np.mean([f.mean_likelihood for f in res["participants"].values()]))


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="rt"):
        oo.trials_from_arrays([[0, 1, 2]], [0], [0.0], ["p"])
    path = tmp_path / "t.csv"
    path.write_text("image_1,image_2,image_3,choice,rt,participant\na,b,c,d,1,p\n")
    with pytest.raises(ValueError, match="choice"):
        oo.read_trials(path, ["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="alpha"):
        oo.choice_log_probs(np.ones((3, 2)), oo.trials_from_arrays([[0, 1, 2]], [0], [1.0], ["p"]), -1.0)


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_plot_odd_one_out_mean_curve(tmp_path):
    a = np.logspace(-2, 1, 7)
    curves = {"p1": np.linspace(0.6, 0.34, 7), "p2": np.linspace(0.5, 0.33, 7)}
    fig = oo.plot_odd_one_out(a, curves, tmp_path / "o.png", fitted={"p1": a[0], "p2": a[0]})
    mean = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("mean over 2")][0]
    np.testing.assert_allclose(mean.get_ydata(), (curves["p1"] + curves["p2"]) / 2)
    assert fig.axes[0].get_xscale() == "log"
    _png_ok(tmp_path / "o.png")
    with pytest.raises(ValueError, match="shape"):
        oo.plot_odd_one_out(a, {"p": np.ones(3)})


def test_objective_curves_are_per_participant_means_of_the_loop_probabilities():
    rng = np.random.default_rng(7)
    e = rng.standard_normal((6, 3))
    items = np.array([rng.choice(6, 3, replace=False) for _ in range(9)])
    trials = oo.trials_from_arrays(items, rng.integers(0, 3, 9), rng.uniform(0.5, 2.0, 9), ["a"] * 4 + ["b"] * 5)
    alphas = np.array([0.1, 1.0])
    for objective in ("mean_likelihood", "log_likelihood"):
        curves = oo.objective_curves(e, trials, alphas, objective)
        assert sorted(curves) == ["a", "b"]
        for who, rows in (("a", range(4)), ("b", range(4, 9))):
            want = []
            for alpha in alphas:  # softmax of the remaining pair's cosine over tau = alpha * rt, by hand
                vals = []
                for t in rows:
                    i, j, k = items[t]
                    s = np.array([_cos(e[j], e[k]), _cos(e[i], e[k]), _cos(e[i], e[j])]) / (alpha * trials.rt[t])
                    p = np.exp(s[trials.choice[t]]) / np.exp(s).sum()
                    vals.append(p if objective == "mean_likelihood" else np.log(p))
                want.append(np.mean(vals))
            np.testing.assert_allclose(curves[who], want, rtol=1e-10)
