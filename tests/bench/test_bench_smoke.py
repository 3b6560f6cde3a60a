"""Smoke test of the benchmark suite: every module runs at tiny sizes and prints valid lines.

Nothing here checks speed (speed targets belong to ``python -m bench.run_all``); it keeps the
suite from rotting: imports, result format, the agreement of every reference with ours (each
benchmark measures the difference as a by-product), and the program generator's validity.
"""

import importlib
import json
import math

import pytest

from bench import report, run_all
from bench.functions import naive_tree_kernel
from bench.functions.geoclidean_programs import random_programs
from gensim_jax.kernels import trees
from gensim_jax.stimuli.geoclidean.grammar import parse_program, parse_tree
from tests._optional import needs_torch  # the timed references and bench's machine line are PyTorch's

KEYS = {"bench", "params", "ours_s", "reference", "reference_s", "ratio", "target", "met"}


def _check_line(line):
    assert KEYS <= set(line), line
    json.dumps(line)  # serialisable
    assert line["ours_s"] > 0 and line["reference_s"] > 0
    assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
    assert isinstance(line["met"], bool)


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("name", ["functions.losses", "functions.kernels", "input.throughput"])
def test_module_quick(name):
    lines = importlib.import_module(f"bench.{name}").run(quick=True)
    assert lines
    for line in lines:
        _check_line(line)
        # every reference agrees with ours on the values it computed
        for key, tol in (
            ("value_rel_diff", 1e-5),
            ("grad_max_abs_diff", 1e-5),
            ("max_abs_diff", 1e-4),
            ("naive_vs_fast_max_log_diff", 1e-9),
        ):
            if key in line:
                assert line[key] <= tol, (line["bench"], key, line[key])


@pytest.mark.slow
@needs_torch
def test_run_all_quick_prints_json_lines(capsys):
    assert run_all.main(["--quick", "--only", "functions.scaling"]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert lines[0]["bench"] == "machine" and lines[-1]["bench"] == "summary"
    assert {ln["bench"] for ln in lines[1:-1]} == {"scaling_gensim_loss_grad", "scaling_beta_bernoulli_table"}
    for line in lines[1:-1]:
        _check_line(line)
        assert report._module(line["bench"]) == "functions.scaling"  # the report's rerun command names this module


def test_random_programs_valid_distinct_and_seeded():
    progs = random_programs(25, seed=7)
    assert len(set(progs)) == 25
    assert progs == random_programs(25, seed=7)
    assert progs != random_programs(25, seed=8)
    for p in progs:
        parse_program(p, strict=True)  # syntax and semantics


def test_naive_kernel_matches_library_on_programs():
    ts = [parse_tree(p) for p in random_programs(3, seed=1)]
    for kind in ("st", "sst"):
        for lam in (1.0, 0.5):
            k = naive_tree_kernel.kernel(ts[0], ts[1], kind, lam)
            assert math.isclose(
                math.log(k), trees.log_tree_kernel(ts[0], ts[1], kind=kind, lam=lam), rel_tol=1e-12, abs_tol=1e-12
            )


@pytest.mark.slow
def test_input_scaling_lines_and_bytes_per_process():
    from bench.input import scaling as input_scaling

    small = {
        "data.num_train_images": 64,
        "data.image_size": 32,
        "eval.trials_per_condition": 1,
        "objectives.simclr.projection_dims": (16, 8),
    }
    lines = input_scaling.measure("quadrilaterals", "cpu_small", small, steps=2)
    assert {ln["params"]["arm"] for ln in lines} == {"gensim", "supervised", "simclr"}
    assert sorted({ln["params"]["processes"] for ln in lines}) == [2, 4]
    for line in lines:
        _check_line(line)
        # each process sends only its rows: exactly 1/P of the one-process bytes (uint8 images)
        assert line["bytes_per_process"] * line["params"]["processes"] == line["bytes_one_process"]
        # the fixed part is measured beside the counts (one row per process, and at a 4x global batch)
        for key in ("fixed_s", "fixed_4x_batch_s", "fixed_transfer_s"):
            assert line[key] > 0, key
        assert line["epoch_permutation_s"] > 0 and line["noise_s"] >= 0
        # a row met above its target is met by a measured fixed part, and says what it is
        if line["met"] and line["ratio"] > line["target"]:
            assert "does not fall with P" in line["unsplit"] and "ms" in line["unsplit"]
            assert input_scaling.fixed_part_explains(
                line["ours_s"],
                line["reference_s"],
                line["fixed_s"],
                line["fixed_4x_batch_s"],
                line["epoch_permutation_s"],
                line["noise_s"],
                line["target"],
            )
        else:
            assert "unsplit" not in line


def test_input_scaling_accepts_a_fixed_part_only_when_it_explains_the_ratio():
    """The rule of ``fixed_part_explains`` on made-up timings (seconds per global batch, target 0.35)."""
    from bench.input.scaling import fixed_part_explains

    ms = 1e-3
    # a batch that is all fixed cost (32 px, batch 32): t(4) = t(1) = fixed, and the same at a 4x batch
    assert fixed_part_explains(0.60 * ms, 0.60 * ms, 0.59 * ms, 0.60 * ms, 0.0, 0.01 * ms, 0.35)
    # fixed part plus rows that fall as 1/4: met
    assert fixed_part_explains(0.50 * ms, 1.40 * ms, 0.30 * ms, 0.31 * ms, 0.0, 0.01 * ms, 0.35)
    # the rest does not fall (each process builds rows of other processes): refused
    assert not fixed_part_explains(1.00 * ms, 1.40 * ms, 0.30 * ms, 0.31 * ms, 0.0, 0.01 * ms, 0.35)
    # every process builds the whole global batch: the "one row" cost grows with the global batch: refused
    assert not fixed_part_explains(1.00 * ms, 1.00 * ms, 1.00 * ms, 4.00 * ms, 0.0, 0.01 * ms, 0.35)
    # ... unless the growth is the measured epoch permutation (3x its cost per batch at a 4x batch)
    assert fixed_part_explains(1.00 * ms, 1.00 * ms, 1.00 * ms, 1.30 * ms, 0.1 * ms, 0.01 * ms, 0.35)
    # the noise tolerance is the measured noise times NOISE_TOLERANCE, no more
    assert fixed_part_explains(0.629 * ms, 0.60 * ms, 0.60 * ms, 0.60 * ms, 0.0, 0.01 * ms, 0.35)
    assert not fixed_part_explains(0.631 * ms, 0.60 * ms, 0.60 * ms, 0.60 * ms, 0.0, 0.01 * ms, 0.35)


@pytest.mark.slow
def test_device_augment_lines():
    from bench.input import device_augment

    lines = list(device_augment.run(size=32, batch=4))
    assert [ln["params"]["preset"] for ln in lines] == ["imagenet", "quadrilaterals", "geoclidean"]
    for line in lines:
        _check_line(line)
        assert line["views_per_s"] == pytest.approx(8 / line["batch_s"], rel=1e-3)
