"""bench/runner/step_profile.py: the trace summary on a GPU-shaped trace written by hand, the roofline
against the chip table's figures, and one smoke run of the runner's step on the CPU."""

import pytest

from bench.runner import step_profile
from bench.step.op_profile import summarize_trace
from gensim_jax.planning.chips import CHIPS

# a GPU program's optimized HLO: cuDNN convolution and cuBLAS product as custom calls, a batch-norm
# statistics fusion (reduces), an elementwise fusion, a transpose
HLO = """
%fused_stats (p: bf16[8,4,4,16]) -> f32[16] {
  %p = bf16[8,4,4,16]{3,2,1,0} parameter(0)
  ROOT %r = f32[16]{0} reduce(%p, %z), dimensions={0,1,2}, to_apply=%add
}

%fused_relu (p: bf16[8,4,4,16]) -> bf16[8,4,4,16] {
  %p = bf16[8,4,4,16]{3,2,1,0} parameter(0)
  ROOT %m = bf16[8,4,4,16]{3,2,1,0} maximum(%p, %p)
}

ENTRY %main (a: bf16[8,4,4,16]) -> bf16[8,4,4,16] {
  %a = bf16[8,4,4,16]{3,2,1,0} parameter(0)
  %cudnn-conv.1 = (bf16[8,4,4,16]{3,2,1,0}, u8[0]{0}) custom-call(%a, %a), custom_call_target="__cudnn$convForward"
  %cublas-gemm.2 = (bf16[128,16]{1,0}, s8[0]{0}) custom-call(%a, %a), custom_call_target="__cublas$gemm"
  %input_reduce_fusion = f32[16]{0} fusion(%a), kind=kInput, calls=%fused_stats
  %loop_maximum_fusion = bf16[8,4,4,16]{3,2,1,0} fusion(%a), kind=kLoop, calls=%fused_relu
  ROOT %transpose.3 = bf16[8,16,4,4]{3,2,1,0} transpose(%a), dimensions={0,3,1,2}
}
"""


def _x(name, ts, dur, **args):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


def test_trace_summary_attributes_kernels_to_instructions_by_kind():
    trace = {
        "traceEvents": [
            # kernels named by their library, the instruction in the arguments; two steps of each
            _x("sm90_xmma_fprop_implicit_gemm_bf16", 0, 400, hlo_op="cudnn-conv.1"),
            _x("sm90_xmma_fprop_implicit_gemm_bf16", 1000, 400, hlo_op="cudnn-conv.1"),
            _x("cutlass_80_tensorop_gemm", 500, 100, long_name="%cublas-gemm.2 = (bf16[128,16]) custom-call(...)"),
            _x("cutlass_80_tensorop_gemm", 1500, 100, long_name="%cublas-gemm.2 = (bf16[128,16]) custom-call(...)"),
            # XLA's own kernels named by their instruction, once on the op line and once on the stream
            _x("input_reduce_fusion", 600, 60),
            {**_x("input_reduce_fusion", 600, 60), "tid": 2},
            _x("input_reduce_fusion", 1600, 60),
            _x("loop_maximum_fusion", 700, 30),
            _x("loop_maximum_fusion", 1700, 30),
            _x("transpose.3", 800, 10),
            _x("transpose.3", 1800, 10),
            _x("ThunkExecutor::Execute", 0, 2000),  # names no instruction
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        ]
    }
    r = summarize_trace(trace, HLO, steps=2, top=10)
    us = 1e-6
    assert r["by_kind_s"] == pytest.approx(
        {
            "convolution": 400 * us,
            "dot": 100 * us,
            "reduction fusion": 60 * us,  # the duplicate at the same start counts once
            "elementwise fusion": 30 * us,
            "copy / transpose": 10 * us,
        }
    )
    assert r["op_seconds_per_step"] == pytest.approx(600 * us)
    assert sum(r["by_kind_share"].values()) == pytest.approx(1.0)
    assert [o["op"] for o in r["top_ops"]][:2] == ["cudnn-conv.1", "cublas-gemm.2"]
    assert [o["op"] for o in r["top_other_ops"]] == ["input_reduce_fusion", "loop_maximum_fusion", "transpose.3"]
    assert r["unmatched_events_s"] == pytest.approx({"ThunkExecutor::Execute": 1000 * us})
    assert r["num_ops_traced"] == 5


def test_roofline_against_the_chip_table():
    h100 = CHIPS["h100"]
    flops, hbm, step_s = 6.3e12, 60e9, 0.05
    r = step_profile.roofline_line(flops, hbm, step_s, h100)
    t_compute, t_memory = flops / h100.peak_bf16_flops, hbm / h100.hbm_bytes_per_s
    assert r["t_compute_s"] == pytest.approx(t_compute) and r["t_memory_s"] == pytest.approx(t_memory)
    assert r["bound"] == ("memory" if t_memory > t_compute else "compute")
    assert r["step_over_floor"] == pytest.approx(step_s / max(t_compute, t_memory))
    assert r["hbm_fraction"] == pytest.approx(hbm / step_s / 3.35e12, rel=0.01)  # the datasheet's 3.35 TB/s
    assert r["mfu"] == pytest.approx(flops / step_s / h100.peak_bf16_flops)
    cpu = step_profile.roofline_line(flops, None, step_s, None)
    assert cpu["achieved_flops_per_s"] == pytest.approx(flops / step_s) and "bound" not in cpu


def test_attribute_kernels_adds_the_flag_once_and_keeps_a_users_choice():
    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    assert step_profile.attribute_kernels(env)
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_gpu_enable_command_buffer="
    assert not step_profile.attribute_kernels(env)  # already there
    mine = {"XLA_FLAGS": "--xla_gpu_enable_command_buffer=FUSION"}
    assert not step_profile.attribute_kernels(mine) and mine["XLA_FLAGS"] == "--xla_gpu_enable_command_buffer=FUSION"
    empty: dict = {}
    assert step_profile.attribute_kernels(empty) and empty["XLA_FLAGS"] == "--xla_gpu_enable_command_buffer="


@pytest.mark.slow
def test_smoke_profile_of_the_runner_step_on_the_cpu(capsys):
    assert step_profile.main(["--experiment", "spurious_digits", "--smoke", "--set", "batch_size=16"]) == 0
    out, err = capsys.readouterr()
    import json

    line = json.loads(out.strip().splitlines()[-1])
    assert line["bench"] == "runner_step_profile" and line["global_batch"] == 16 and line["loss_finite"]
    assert line["num_ops_traced"] > 0 and line["step_s"] > 0
    assert sum(line["by_kind_share"].values()) == pytest.approx(1.0)
    r = line["roofline"]
    assert r["chip"] is None and r["achieved_flops_per_s"] == pytest.approx(r["flops_per_step"] / line["step_s"])
    assert r["flops_source"] == "compiler cost analysis" and r["hbm_bytes_per_step"] > 0  # as gensim-jax plan counts
    assert "spurious_digits" in err and "ms a step" in err


@pytest.mark.slow
def test_a_profiler_that_fails_leaves_the_timing_and_zero_steps_trace_nothing(monkeypatch):
    import jax

    def broken(*args, **kwargs):
        raise RuntimeError("no CUPTI here")

    monkeypatch.setattr(jax.profiler, "trace", broken)
    line = step_profile.profile_runner_step(
        "spurious_digits", overrides=["batch_size=8"], steps=1, trace_steps=1, smoke=True
    )
    assert line["trace_error"] == "RuntimeError: no CUPTI here" and line["step_s"] > 0 and line["num_ops_traced"] == 0
    assert "no profile: RuntimeError: no CUPTI here" in step_profile.summary(line)
    untraced = step_profile.profile_runner_step(
        "spurious_digits", overrides=["batch_size=8"], steps=1, trace_steps=0, smoke=True
    )
    assert (
        untraced["trace_error"] is None and untraced["num_ops_traced"] == 0 and untraced["device_busy_fraction"] is None
    )
    assert untraced["roofline"]["flops_per_step"] > 0
