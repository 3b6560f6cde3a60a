"""embed_images vs a direct apply of the model on the whole batch."""

import jax
import numpy as np
import pytest

from gensim_jax.evaluation.embed import embed_images
from gensim_jax.models import get_model


@pytest.mark.slow
def test_batched_equals_direct():
    model = get_model("mlp", in_features=3, hidden=8, embed_dim=4)
    v = model.init(jax.random.key(0), model.example_input())
    x = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32)
    direct = np.asarray(model.apply(v, x)["embedding"])
    got = embed_images(model, v, x, batch_size=3)  # 3 + 3 + 1 (padded)
    assert got.shape == (7, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="batch_size"):
        embed_images(model, v, x, batch_size=0)


def test_equal_models_share_one_compiled_embedding_and_unhashable_ones_still_embed():
    """A second call with an equal model (built anew) and the same batch shape traces nothing: the
    counter below runs once per trace. A model with an unhashable field embeds all the same."""
    import flax.linen as nn

    traces = []

    class Counted(nn.Module):
        width: int = 4
        tag: object = None  # a list here makes the module unhashable

        def setup(self):
            self.dense = nn.Dense(self.width)

        def __call__(self, x, train: bool = False):
            return {"embedding": self.embed(x)}

        def embed(self, x):
            traces.append(x.shape)
            return self.dense(x)

    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    v = Counted().init(jax.random.key(0), x)
    direct = np.asarray(Counted().apply(v, x, method="embed"))
    traces.clear()  # init and the direct apply ran it
    first = embed_images(Counted(), v, x, batch_size=2)
    second = embed_images(Counted(), v, x, batch_size=2)
    assert len(traces) == 1, traces
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, direct, rtol=1e-5, atol=1e-6)
    embed_images(Counted(width=4, tag=None), v, x, batch_size=5)  # another batch shape: one more trace
    assert len(traces) == 2
    unhashable = Counted(tag=[1, 2])
    with pytest.raises(TypeError):
        hash(unhashable)
    np.testing.assert_allclose(embed_images(unhashable, v, x, batch_size=2), first, rtol=1e-6)


def test_prepare_images_grey_to_rgb_and_imagenet_by_hand():
    from gensim_jax.evaluation.embed import prepare_images

    g = np.random.default_rng(0).random((2, 4, 4)).astype(np.float32)
    got = prepare_images(g, 4, "imagenet")
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    for c in range(3):
        np.testing.assert_allclose(got[..., c], (g - mean[c]) / std[c], rtol=1e-6)
    np.testing.assert_array_equal(prepare_images(g[..., None], 4, "none"), np.repeat(g[..., None], 3, -1))
    with pytest.raises(ValueError, match="preprocess"):
        prepare_images(g, 4, "zscore")
    with pytest.raises(ValueError, match="images must be"):
        prepare_images(np.ones((2, 4, 4, 2)), 4)


def test_prepare_images_resize_samples_a_smooth_image_at_pixel_centres():
    from gensim_jax.evaluation.embed import prepare_images

    def f(u, v):  # smooth image on [0, 1]^2, sampled at pixel centres
        return 0.5 + 0.25 * np.sin(2 * u) * np.cos(3 * v)

    def grid(n):
        c = (np.arange(n) + 0.5) / n
        return f(c[:, None], c[None, :])

    big = grid(64)[None]
    np.testing.assert_allclose(prepare_images(big, 16, "none")[0, ..., 0], grid(16), atol=0.01)
    up = prepare_images(grid(16)[None], 64, "none")[0, ..., 0]
    np.testing.assert_allclose(up[2:-2, 2:-2], grid(64)[2:-2, 2:-2], atol=0.005)
    np.testing.assert_allclose(up, grid(64), atol=0.02)  # edge pixels: clamped, not extrapolated


def test_load_encoder_rejects_incomplete_exports(tmp_path):
    import jax

    from gensim_jax.evaluation.embed import load_encoder
    from gensim_jax.models import get_model
    from gensim_jax.training.export import export_variables

    m = get_model("lenet5", num_classes=None)
    shapes = jax.eval_shape(m.init, jax.random.key(0), np.zeros((1, 32, 32, 3), np.float32))  # nothing compiled
    v = jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), shapes)
    kw = {"num_classes": None}
    export_variables(tmp_path / "e", v, model="lenet5", model_kwargs=kw)
    with pytest.raises(ValueError, match="image_size"):
        load_encoder(tmp_path / "e")
    with pytest.raises(FileNotFoundError):
        load_encoder(tmp_path / "missing")
    export_variables(tmp_path / "f", v, model="lenet5", model_kwargs=kw, image_size=32, preprocess="zscore")
    with pytest.raises(ValueError, match="preprocess"):
        load_encoder(tmp_path / "f")
