"""Smoke test of bench/step/op_profile.py on the tiny ResNet-50 variant (the numbers are not asserted)."""

import pytest

from bench.step import op_profile as profile_step


def test_hlo_kinds_of_a_hand_written_module():
    hlo = """
%fused_reduce (p: f32[4,4]) -> f32[4] {
  %p = f32[4,4]{1,0} parameter(0)
  ROOT %r = f32[4]{0} reduce(%p, %c), dimensions={1}, to_apply=%add
}

ENTRY %main (a: f32[4,4]) -> f32[4] {
  %a = f32[4,4]{1,0} parameter(0)
  %convolution.1 = f32[1,2,2,4]{3,2,1,0} convolution(%a, %a), window={size=2x2}
  %dot.3 = f32[4,4]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %reduce_fusion = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused_reduce
}
"""
    kinds = profile_step._hlo_kinds(hlo)
    assert kinds["convolution.1"] == "conv" and kinds["dot.3"] == "dot" and kinds["reduce_fusion"] == "reduce"
    assert profile_step._kind("convolution.1", kinds) == "convolution"
    assert profile_step._kind("reduce_fusion", kinds) == "reduction fusion"
    assert profile_step._kind("transpose_copy_fusion.2", {}) == "copy / transpose"
    assert "window={size=2x2}" in profile_step._describe(hlo, "convolution.1")


@pytest.mark.slow
def test_quick_profile_runs():
    r = profile_step.profile("resnet50", size=32, batch=2, steps=1, top=5, quick=True)
    assert r["step_wall_s"] > 0 and r["num_ops_traced"] > 0 and len(r["top_ops"]) <= 5
    assert abs(sum(r["by_kind_share"].values()) - 1) < 1e-6
