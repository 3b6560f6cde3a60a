"""Export round trip: the rebuilt model gives the trained model's outputs; bad exports are named."""

import jax
import numpy as np
import optax
import pytest

from gensim_jax.models import get_model
from gensim_jax.training import create_train_state
from gensim_jax.training.export import MODEL_FILE, VARIABLES_FILE, export_variables, load_exported

KW = {"num_classes": None, "stage_sizes": (1, 1, 1, 1)}


def _variables():
    model = get_model("resnet18", **KW)
    state = create_train_state(model, optax.adam(1e-3), 0, example_input=np.zeros((1, 32, 32, 3), np.float32))
    # perturb the BatchNorm statistics so that a lost collection would show in the outputs
    stats = jax.tree_util.tree_map(lambda x: x + 0.5, state.batch_stats)
    return model, {"params": state.params, "batch_stats": stats}


@pytest.mark.slow
def test_round_trip_gives_the_same_embeddings(tmp_path):
    model, variables = _variables()
    export_variables(tmp_path, variables, model="resnet18", model_kwargs=KW, image_size=32, seed=3)
    rebuilt, restored, meta = load_exported(tmp_path)
    assert meta["seed"] == 3 and rebuilt.stage_sizes == (1, 1, 1, 1)
    x = np.random.default_rng(0).random((3, 32, 32, 3), np.float32)
    want = model.apply(variables, x, train=False)["embedding"]
    got = rebuilt.apply(restored, x, train=False)["embedding"]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.slow
def test_mismatched_description_and_missing_files(tmp_path):
    _, variables = _variables()
    export_variables(tmp_path, variables, model="resnet18", model_kwargs={"num_classes": None}, image_size=32)
    with pytest.raises(ValueError, match="do not match model 'resnet18'"):
        load_exported(tmp_path)
    with pytest.raises(ValueError, match="not registered"):
        export_variables(tmp_path / "b", variables, model="no_such_net")
    with pytest.raises(TypeError):
        export_variables(tmp_path / "c", variables, model="resnet18", note=object())
    assert not (tmp_path / "c" / VARIABLES_FILE).exists()
    (tmp_path / MODEL_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=MODEL_FILE):
        load_exported(tmp_path)


def test_a_missing_or_file_path_is_named_as_such(tmp_path):
    missing = tmp_path / "runs" / "gensim" / "run0" / "export"
    with pytest.raises(FileNotFoundError) as info:
        load_exported(missing)
    assert str(info.value) == f"no such directory: {missing}"
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="is a file, not a directory"):
        load_exported(tmp_path / "file")
    with pytest.raises(FileNotFoundError) as info:
        load_exported(tmp_path)  # an existing directory without the files
    assert str(info.value) == f"{tmp_path} is not an export ({VARIABLES_FILE} is missing)"


def test_a_run_or_workdir_given_for_its_export_names_the_exports_below_it(tmp_path):
    """A run directory (or a workdir) passed where an export is expected: the one line says which to pass."""
    from gensim_jax.models.export import read_export_metadata

    kw = {"in_features": 3, "hidden": 4, "embed_dim": 2}
    variables = get_model("mlp", **kw).init(jax.random.key(0), np.zeros((1, 3), np.float32))
    for run in ("run0", "run1", "run2"):
        export_variables(tmp_path / "w" / "gensim" / run / "export", variables, model="mlp", model_kwargs=kw)
    run0 = tmp_path / "w" / "gensim" / "run0"
    for load in (load_exported, read_export_metadata):
        with pytest.raises(FileNotFoundError) as info:
            load(run0)
        assert str(info.value).endswith(f"is missing); did you mean {run0 / 'export'}?"), info.value
    with pytest.raises(FileNotFoundError) as info:
        load_exported(tmp_path / "w")
    assert str(info.value).endswith(
        f"did you mean one of the 3 exports below it: {run0 / 'export'}, {run0.parent / 'run1' / 'export'} and 1 more?"
    ), info.value


def test_gather_to_host_copies_every_layout_to_numpy():
    """Single process: device arrays (sharded on a one-device mesh, or not) come back as equal numpy arrays.
    The multi-process case (leaves split across processes) is tests/multiprocess (FSDP over 2 processes)."""
    from gensim_jax import parallel
    from gensim_jax.training.export import gather_to_host

    mesh = parallel.make_mesh()
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    tree = {"a": jax.device_put(x, parallel.batch_sharding(mesh)), "b": {"c": jax.numpy.ones(2)}, "d": x}
    out = gather_to_host(tree)
    assert all(isinstance(v, np.ndarray) for v in jax.tree_util.tree_leaves(out))
    np.testing.assert_array_equal(out["a"], x)
    np.testing.assert_array_equal(out["b"]["c"], np.ones(2))
