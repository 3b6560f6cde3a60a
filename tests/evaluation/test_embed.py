"""embed_images vs a direct apply of the model on the whole batch."""

import jax
import numpy as np
import pytest

from gensim_jax.evaluation.embed import embed_images
from gensim_jax.models import get_model


def test_batched_equals_direct():
    model = get_model("mlp", in_features=3, hidden=8, embed_dim=4)
    v = model.init(jax.random.key(0), model.example_input())
    x = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    direct = np.asarray(model.apply(v, x)["embedding"])
    got = embed_images(model, v, x, batch_size=3)   # 3 + 3 + 1 (padded)
    assert got.shape == (7, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="batch_size"):
        embed_images(model, v, x, batch_size=0)
