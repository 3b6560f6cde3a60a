"""RunRecorder: metrics.jsonl and TensorBoard events hold the same values; process 0 only; resume."""

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from gensim_jax.training import records
from gensim_jax.training.records import RunRecorder, image_grid, similarity_scatter_image
from tests._optional import needs_torch
from tests.training._events import event_files, read_events


def _jsonl(d):
    return [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]


def _scalars_of(lines):
    """``{tag: {step: value}}`` of the numeric values of metrics.jsonl (what TensorBoard must hold)."""
    out = {}
    for r in lines:
        for k, v in r.items():
            if k not in ("step", "time") and isinstance(v, (int, float)):
                out.setdefault(k, {})[r["step"]] = v
    return out


@pytest.mark.slow
def test_event_files_hold_the_same_tags_steps_and_values_as_metrics_jsonl(tmp_path):
    rng = np.random.default_rng(0)
    with RunRecorder(tmp_path) as rec:
        for step in range(5, 55, 5):
            rec.write(
                step,
                {
                    "loss": rng.normal(),
                    "accuracy": np.float32(rng.uniform()),
                    "grad_norm": np.array(3.25),
                    "opt/lr": 1e-3 * step,
                    "perf/examples_per_s": 1234.5 + step,
                    "flag": True,
                    "curve": [1.0, 2.0],
                    "name": "x",
                },
            )
        rec.write(50, {"eval/oddball/r": 0.71, "eval/fewshot/acc": np.float64(0.9)})
    lines = _jsonl(tmp_path)
    assert [r["step"] for r in lines] == list(range(5, 55, 5)) + [50]
    assert lines[0]["curve"] == [1.0, 2.0] and lines[0]["name"] == "x"  # non-scalars: jsonl only
    scalars, images = read_events(tmp_path)
    expected = _scalars_of(lines)
    assert (
        set(scalars)
        == set(expected)
        == {
            "loss",
            "accuracy",
            "grad_norm",
            "opt/lr",
            "perf/examples_per_s",
            "flag",
            "eval/oddball/r",
            "eval/fewshot/acc",
        }
    )
    for tag, by_step in expected.items():
        assert set(scalars[tag]) == set(by_step), tag
        for step, v in by_step.items():
            assert scalars[tag][step] == np.float32(v), (tag, step)  # TensorBoard stores float32
    assert images == {}
    assert len(event_files(tmp_path)) == 1


def test_other_processes_write_nothing(tmp_path, monkeypatch):
    import jax

    monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
    run = tmp_path / "run"
    rec = RunRecorder(run)
    assert not rec.active
    record = rec.write(3, {"loss": 1.0})
    rec.write_images(0, {"grid": np.zeros((4, 4, 3), np.uint8)})
    rec.close()
    assert record["step"] == 3 and record["loss"] == 1.0  # the record is still returned
    assert not run.exists()


def test_process_zero_writes_when_process_index_is_zero(tmp_path, monkeypatch):
    import jax

    monkeypatch.setattr(jax, "process_index", lambda *a, **k: 0)
    with RunRecorder(tmp_path / "run") as rec:
        assert rec.active
        rec.write(1, {"loss": 1.0})
    assert len(event_files(tmp_path / "run")) == 1 and (tmp_path / "run" / "metrics.jsonl").exists()


def test_resume_drops_later_lines_and_hides_later_events(tmp_path):
    with RunRecorder(tmp_path) as rec:  # the first attempt logged up to step 10, then died
        for step in range(2, 12, 2):
            rec.write(step, {"loss": float(step)})
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"step": 12, "lo')  # a line cut short by the kill
    with RunRecorder(tmp_path, start_step=6) as rec:  # resumed from the checkpoint at step 6
        for step in range(8, 14, 2):
            rec.write(step, {"loss": 100.0 + step})
    lines = _jsonl(tmp_path)
    assert [(r["step"], r["loss"]) for r in lines] == [
        (2, 2.0),
        (4, 4.0),
        (6, 6.0),
        (8, 108.0),
        (10, 110.0),
        (12, 112.0),
    ]
    scalars, _ = read_events(tmp_path)
    assert len(event_files(tmp_path)) == 2
    assert scalars == {"loss": {s: np.float32(v) for s, v in _scalars_of(lines)["loss"].items()}}


def test_images_round_trip_as_png(tmp_path):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(9, 7, 3), dtype=np.uint8)
    gray = rng.uniform(size=(5, 6))
    with RunRecorder(tmp_path) as rec:
        rec.write_images(0, {"train/stimuli": rgb, "gray": gray})
        with pytest.raises(ValueError, match="shape"):
            rec.write_images(1, {"bad": np.zeros((2, 3, 5))})
    _, images = read_events(tmp_path)
    h, w, c, png = images["train/stimuli"][0]
    assert (h, w, c) == (9, 7, 3)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), rgb)
    h, w, c, png = images["gray"][0]
    assert (h, w, c) == (5, 6, 1)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), np.round(gray * 255).astype(np.uint8))


def test_large_images_are_shrunk_to_max_image_side(tmp_path):
    big = np.zeros((300, 120, 3), np.uint8)
    big[:150] = 255  # top half white
    with RunRecorder(tmp_path, max_image_side=100) as rec:
        rec.write_images(3, {"big": big})
    h, w, c, png = read_events(tmp_path)[1]["big"][3]
    small = np.asarray(Image.open(io.BytesIO(png)))
    assert (h, w, c) == (100, 40, 3) and small.shape == (100, 40, 3)
    assert small[:45].min() == 255 and small[55:].max() == 0


def test_image_grid_places_image_i_at_row_i_div_ncol():
    x = np.arange(5 * 2 * 3, dtype=np.uint8).reshape(5, 2, 3)
    g = image_grid(x, ncol=2, pad=1, pad_value=255)
    assert g.shape == (3 * 3 + 1, 2 * 4 + 1, 1) and g.dtype == np.uint8
    for i in range(5):
        r, q = divmod(i, 2)
        np.testing.assert_array_equal(g[1 + 3 * r : 3 + 3 * r, 1 + 4 * q : 4 + 4 * q, 0], x[i])
    assert (g[7:9, 5:8] == 255).all()  # the empty sixth tile
    std = image_grid(np.array([[[[-2.0]]], [[[2.0]]]]), ncol=2, pad=0)  # standardised floats: min-max
    assert std[..., 0].tolist() == [[0, 255]]
    assert image_grid(np.full((4, 3, 3, 3), 0.5)).shape == (2 * 5 + 2, 2 * 5 + 2, 3)
    with pytest.raises(ValueError, match="image_grid"):
        image_grid(np.zeros((2, 3)))


def test_similarity_scatter_uses_each_unordered_pair_once():
    b = 6
    rng = np.random.default_rng(2)
    e, t = rng.normal(size=(b, b)), rng.normal(size=(b, b))
    pe, pt = records._offdiagonal_pairs(e, t)
    ref = [(e[i, j], t[i, j]) for i in range(b) for j in range(i + 1, b)]
    np.testing.assert_array_equal(np.stack([pe, pt], 1), np.array(ref))
    img = similarity_scatter_image(e, t, size=(3, 2), dpi=50)
    assert img.shape == (100, 150, 3) and img.dtype == np.uint8 and img.std() > 0
    with pytest.raises(ValueError, match="differ in shape"):
        similarity_scatter_image(e, t[:3])


def test_closed_recorder_refuses_to_write(tmp_path):
    rec = RunRecorder(tmp_path, tensorboard=False)
    rec.close()
    rec.close()
    with pytest.raises(ValueError, match="closed"):
        rec.write(1, {"loss": 1.0})
    with pytest.raises(ValueError, match="reserved"):
        RunRecorder(tmp_path / "b", tensorboard=False).write(1, {"step": 2})


@pytest.mark.slow
@needs_torch
def test_the_writer_imports_neither_torch_nor_scipy_stats(tmp_path):
    code = (
        "import sys; import numpy as np; from gensim_jax.training.records import RunRecorder, similarity_scatter_image\n"
        f"r = RunRecorder({str(tmp_path)!r}); r.write(1, {{'loss': 1.0}})\n"
        "r.write_images(1, {'s': similarity_scatter_image(np.arange(6.0), np.arange(6.0) ** 2)}); r.close()\n"
        "print('torch' in sys.modules, 'scipy.stats' in sys.modules); import torch; print(torch.tensor([1]).sum().item())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # torch was not loaded by tensorboardX, and still imports afterwards; the scatter's title computed Spearman's
    # rho without scipy.stats (1-3 s of every training process's start-up)
    assert out == ["False", "False", "1"]
