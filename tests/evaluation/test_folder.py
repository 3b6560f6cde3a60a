"""The folder protocol: held-out Spearman, k-NN per level and the bins against loops over pairs; summary, table, figure."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from gensim_jax.evaluation import folder as protocol


def _stimuli(m=24, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=m)
    top = (labels > 0).astype(int)
    log_s = np.where(labels[:, None] == labels[None], 2.0, np.where(top[:, None] == top[None], 1.0, 0.0))
    levels = np.stack([top, labels], axis=1)
    images = np.zeros((m, 4, 4, 3), np.uint8)
    return protocol.FolderStimuli(images, log_s, levels, ("level 1", "level 2"), np.arange(m)), labels


def _spearman_by_loop(z, log_s):
    sims, targets = [], []
    for i in range(len(z)):
        for j in range(i + 1, len(z)):
            sims.append(float(z[i] @ z[j] / (np.linalg.norm(z[i]) * np.linalg.norm(z[j]))))
            targets.append(log_s[i, j])
    a, b = rankdata(sims), rankdata(targets)
    return float(np.corrcoef(a, b)[0, 1])


def _knn_by_loop(z, labels, k):
    zn = z / np.linalg.norm(z, axis=1, keepdims=True)
    right = 0
    for i in range(len(z)):
        sims = [(float(zn[i] @ zn[j]), j) for j in range(len(z)) if j != i]
        near = [j for _, j in sorted(sims, key=lambda t: -t[0])[:k]]
        counts = {}
        for j in near:
            counts[labels[j]] = counts.get(labels[j], 0) + 1
        top = max(counts.values())
        choice = next(labels[j] for j in near if counts[labels[j]] == top)  # a tie: the nearest of the tied
        right += choice == labels[i]
    return right / len(z)


def test_spearman_knn_and_bins_against_loops_over_pairs():
    stim, labels = _stimuli()
    rng = np.random.default_rng(1)
    z = rng.normal(size=(24, 5)) + 2.0 * np.eye(5)[labels]
    got = protocol.evaluate(lambda images: z, stim, k=3, num_bins=4)
    assert got["heldout_spearman"] == pytest.approx(_spearman_by_loop(z, stim.log_s), abs=1e-12)
    assert got["pairs"] == 24 * 23 // 2 and got["images"] == 24
    assert got["knn"]["level 2"]["accuracy"] == pytest.approx(_knn_by_loop(z, stim.levels[:, 1], 3))
    assert got["knn"]["level 1"]["accuracy"] == pytest.approx(_knn_by_loop(z, stim.levels[:, 0], 3))
    assert got["knn"]["level 2"]["chance"] == pytest.approx(np.bincount(labels).max() / 24)
    # log s takes three values: three bins, one per value, each the mean similarity of its pairs
    assert got["bins"]["log_s"] == [0.0, 1.0, 2.0]
    iu = np.triu_indices(24, 1)
    zn = z / np.linalg.norm(z, axis=1, keepdims=True)
    sim = (zn @ zn.T)[iu]
    for v, s in zip(got["bins"]["log_s"], got["bins"]["similarity"]):
        assert s == pytest.approx(sim[stim.log_s[iu] == v].mean())
    # an embedding that is the target's own ordering correlates perfectly; a constant one gives 0
    assert protocol.evaluate_embedding(np.eye(3)[labels] + 0.0, stim)["heldout_spearman"] > 0.8
    assert protocol.evaluate_embedding(np.ones((24, 3)), stim)["heldout_spearman"] == 0.0


def test_summary_table_and_figure(tmp_path):
    stim, labels = _stimuli()
    rng = np.random.default_rng(2)
    runs = {
        "pixels": [protocol.evaluate_embedding(rng.normal(size=(24, 4)), stim)],
        "gensim": [
            protocol.evaluate_embedding(np.eye(3)[labels] + rng.normal(0, s, (24, 3)), stim) for s in (0.1, 0.3)
        ],
    }
    summary = protocol.summarize(runs)
    values = [r["heldout_spearman"] for r in runs["gensim"]]
    assert summary["heldout_spearman"]["gensim"]["mean"] == pytest.approx(np.mean(values))
    assert summary["heldout_spearman"]["gensim"]["sem"] == pytest.approx(np.std(values, ddof=1) / np.sqrt(2))
    assert summary["heldout_spearman"]["pixels"]["runs"] == 1 and set(summary["knn"]["gensim"]) == {
        "level 1",
        "level 2",
    }
    text = protocol.format_table(summary)
    assert "| gensim | 2 |" in text and "k-NN level 2" in text and "chance" in text
    path = protocol.plot({**summary, "evaluations": runs}, tmp_path / "folder.png")
    assert (tmp_path / "folder.png").stat().st_size > 1000 and path.endswith("folder.png")
