"""Smoke test of bench.input.folder_stream at tiny sizes: its rows, against the ImageNet stream on the same JPEGs."""

import math

import pytest

pytest.importorskip("sklearn", reason="the JPEGs are made from scikit-learn's sample photographs")
pytest.importorskip("tensorflow_datasets")
pytest.importorskip("PIL.Image")

from bench import report  # noqa: E402
from bench.input import folder_stream as S  # noqa: E402


@pytest.mark.slow
def test_quick_run_prints_one_row_per_image_size():
    lines = list(S.run(quick=True, n=16, seconds=0.0))
    assert [ln["params"]["image_size"] for ln in lines] == list(S.SIZES)
    for line in lines:
        assert line["bench"] == "input_folder_stream" and report._module(line["bench"]) == "input.folder_stream"
        size = line["params"]["image_size"]
        assert line["output_shape"] == [size, size, 3] and line["images_timed"] >= 2 * S.BATCH
        assert math.isclose(line["ours_s"], 1 / line["images_per_s_per_core"], rel_tol=5e-3)
        assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
        assert line["met"] == (line["ours_s"] <= line["reference_s"])
