"""python -m eval odd_one_out with --workdir: the likelihood-vs-alpha curve against explicit softmaxes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from gensim_jax.commands.eval import main


def test_odd_one_out_workdir_curve(tmp_path):
    rng = np.random.default_rng(0)
    ids = [f"i{k}" for k in range(6)]
    emb = rng.standard_normal((6, 4))
    np.savez(tmp_path / "emb.npz", ids=np.array(ids), embeddings=emb)
    rows = []
    for t in range(12):
        trio = rng.choice(6, 3, replace=False)
        rows.append((trio, int(rng.integers(3)), float(rng.uniform(0.5, 2.0)), f"p{t % 3}"))
    lines = ["image_1,image_2,image_3,choice,rt,participant"]
    lines += [f"{ids[a]},{ids[b]},{ids[c]},{ids[(a, b, c)[ch]]},{rt},{p}" for (a, b, c), ch, rt, p in rows]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    wd = tmp_path / "wd"
    assert (
        main(
            [
                "odd_one_out",
                "--trials",
                str(tmp_path / "t.csv"),
                "--embeddings",
                str(tmp_path / "emb.npz"),
                "--alphas",
                "-1",
                "1",
                "5",
                "--workdir",
                str(wd),
            ]
        )
        == 0
    )
    out = json.loads((wd / "odd_one_out.json").read_text())

    def cos(i, j):
        return float(emb[i] @ emb[j] / math.sqrt((emb[i] @ emb[i]) * (emb[j] @ emb[j])))

    alphas = [10.0**k for k in (-1, -0.5, 0, 0.5, 1)]
    per_part = {}
    for (a, b, c), ch, rt, p in rows:
        pair_left = [cos(b, c), cos(a, c), cos(a, b)]  # similarity of the pair that stays
        probs = []
        for al in alphas:
            z = [math.exp(s / (al * rt)) for s in pair_left]
            probs.append(z[ch] / sum(z))
        per_part.setdefault(p, []).append(probs)
    curves = {p: np.mean(v, axis=0) for p, v in per_part.items()}
    np.testing.assert_allclose(out["curve"]["alpha"], alphas)
    np.testing.assert_allclose(out["curve"]["mean"], np.mean(list(curves.values()), axis=0))
    for p, c in curves.items():
        fit = out["participants"][p]
        assert fit["alpha"] == pytest.approx(alphas[int(np.argmax(c))])
        assert fit["mean_likelihood"] == pytest.approx(c.max())
    with Image.open(wd / "odd_one_out.png") as im:
        assert im.format == "PNG" and min(im.size) > 0
