"""Bad input, the HLO parser, the chip table and the batch bisection (no compiles)."""

import sys

import pytest

from gensim_jax import planning
from gensim_jax.planning import max_batch as max_batch_mod
from gensim_jax.planning.topology import parse_topology
from gensim_jax.training import hlo


@pytest.mark.parametrize(
    "name, n, hosts",
    [
        ("v5e:4x4", 16, 2),
        ("v5e:16x16", 256, 32),
        ("v4:2x2x2", 8, 2),
        ("h100:8x8", 64, 8),
        ("a100:8", 8, 1),
        ("H200:2x8", 16, 2),
    ],
)
def test_parse_topology(name, n, hosts):
    t = parse_topology(name)
    assert (t.num_devices, t.hosts) == (n, hosts)


@pytest.mark.parametrize(
    "name, words",
    [
        ("v9:2x2", "unknown chip"),
        ("v5e", "cannot parse"),
        ("v5e:4", "2-D"),
        ("v4:2x2", "3-D"),
        ("h100:2x16", "at most 8 GPUs"),
        ("v5e:0x4", "zero"),
    ],
)
def test_bad_topology_is_one_clear_error(name, words):
    with pytest.raises(ValueError, match=words) as e:
        parse_topology(name)
    assert "\n" not in str(e.value)


def test_batch_not_divisible_by_devices():
    from tests.planning._steps import all_pairs_build

    sb = all_pairs_build(8, 16, 8)(1001)
    with pytest.raises(
        ValueError, match=r"global batch 1001 is not divisible by the 4 devices of v5e:2x2; use a multiple of 4"
    ):
        planning.plan_step(sb.fn, sb.args, topology="v5e:2x2")


def test_missing_libtpu_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "libtpu", None)
    with pytest.raises(planning.PlannerSetupError, match=r"pip install 'gensim-jax\[tpu\]'"):
        planning.build_devices("v5e:2x2")


def test_missing_cuda_plugin_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax_plugins.xla_cuda12", None)
    monkeypatch.setitem(sys.modules, "jax_plugins.xla_cuda13", None)
    with pytest.raises(planning.PlannerSetupError, match=r"pip install 'jax\[cuda12\]'"):
        planning.build_devices("h100:1x8")


def test_chip_table_has_a_source_for_every_figure():
    for name in ("v4", "v5e", "v5p", "v6e", "a100", "h100", "h200"):
        c = planning.get_chip(name)
        for fig in ("peak_bf16_flops", "hbm_bytes", "hbm_bytes_per_s", "interconnect_bytes_per_s"):
            assert getattr(c, fig) > 0 and c.sources.get(fig), (name, fig)
        if c.kind == "gpu":
            assert c.sources.get("network_bytes_per_s")
    md = planning.chip_table_markdown()
    assert md.count("\n| v5e |") >= 1 and "cloud.google.com/tpu/docs/v5e" in md


HLO = """HloModule jit_step, entry_computation_layout={()->f32[]}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%body (p: (s32[], f32[64,32])) -> (s32[], f32[64,32]) {
  %p = (s32[], f32[64,32]) parameter(0)
  %x = f32[64,32]{1,0} get-tuple-element(%p), index=1
  %ar = f32[64,32]{1,0} all-reduce(%x), channel_id=3, replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add
  %i = s32[] get-tuple-element(%p), index=0
  ROOT %t = (s32[], f32[64,32]) tuple(%i, %ar)
}

%cond (p: (s32[], f32[64,32])) -> pred[] {
  %p = (s32[], f32[64,32]) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (x: f32[16,32], w: f32[32,64]) -> f32[] {
  %x = f32[16,32]{1,0} parameter(0)
  %w = f32[32,64]{1,0} parameter(1)
  %ag = f32[128,32]{1,0} all-gather(%x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, metadata={op_name="jit(step)/gather_me"}
  %d = f32[128,64]{1,0} dot(%ag, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %rs = f32[16,64]{1,0} reduce-scatter(%d), channel_id=2, replica_groups=mesh['axis_0'=8,'axis_1'=1] {'axis_0'}, dimensions={0}, to_apply=%add
  %init = (s32[], f32[64,32]) tuple(%i0, %buf)
  %loop = (s32[], f32[64,32]) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"5"}}
  ROOT %r = f32[] constant(0)
}
"""


def test_hlo_collectives_bytes_groups_and_loops():
    mod = hlo.parse_hlo(HLO)
    cs = {c.op: c for c in hlo.collectives(mod, 8)}
    ag, rs, ar = cs["all-gather"], cs["reduce-scatter"], cs["all-reduce"]
    assert (ag.bytes, ag.group_size, ag.count, ag.op_name) == (128 * 32 * 4, 8, 1, "jit(step)/gather_me")
    assert ag.wire_bytes == pytest.approx(7 / 8 * 128 * 32 * 4)
    assert (rs.bytes, rs.group_size) == (8 * 16 * 64 * 4, 8)  # the scattered input
    assert (ar.bytes, ar.group_size, ar.count) == (64 * 32 * 4, 4, 5)  # inside a 5-trip loop
    assert ar.wire_bytes == pytest.approx(2 * 3 / 4 * 64 * 32 * 4)
    assert hlo.matmul_flops(mod) == 2 * 128 * 64 * 32
    assert hlo.largest_arrays(mod, 1)[0]["shape"] == "f32[128,64]"


def test_max_batch_bisection(monkeypatch):
    """Against a fake planner where a step fits iff B <= 1000 (4 devices): the answer is the largest multiple of 4 found
    within the tolerance, and every trial is a multiple of 4."""
    from gensim_jax.planning import plan as plan_mod

    class Rep(dict):
        fits = property(lambda self: self["fits"])

    def fake_plan(fn, args, **kw):
        b = args[0]
        return Rep(fits=b <= 1000, memory_per_device_bytes=float(b), compile_seconds=0.0)

    monkeypatch.setattr(plan_mod, "plan_step", fake_plan)
    monkeypatch.setattr(max_batch_mod, "build_devices", lambda topo: [])
    res = max_batch_mod.max_global_batch(lambda b, f: planning.StepBuild(None, (b,)), "v5e:2x2", rel_tol=0.0)
    assert res["max_global_batch"] == 1000
    assert all(t["global_batch"] % 4 == 0 for t in res["trials"])
    none = max_batch_mod.max_global_batch(lambda b, f: planning.StepBuild(None, (b * 10**6,)), "v5e:2x2")
    assert none["max_global_batch"] == 0


def test_plan_command_bad_input_is_one_line(capsys):
    from gensim_jax.commands.plan import run_plan_command
    from tests.planning._steps import all_pairs_build

    build = all_pairs_build(8, 16, 8)
    assert run_plan_command(build, 1001, topology="v5e:2x2") == 2
    e = capsys.readouterr().err
    assert e.count("\n") == 1 and "not divisible" in e
    assert run_plan_command(build, 1024, topology="tpu9:2x2") == 2
    e = capsys.readouterr().err
    assert e.count("\n") == 1 and "unknown chip" in e
    assert run_plan_command(build, 1024, topology="v5e:2x2", chips=True) == 0
    assert "| h100 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, n, kind",
    [
        ("v4:2x2x1", 4, "TPU v4"),
        ("v5p:2x2x1", 4, "TPU v5"),
        ("v6e:2x2", 4, "TPU v6 lite"),
        ("v5e:4x4", 16, "TPU v5 lite"),
    ],
)
def test_tpu_topologies_build_compile_only_devices(name, n, kind):
    devs = planning.build_devices(name)
    assert len(devs) == n and devs[0].device_kind == kind  # v4: one device per chip (megacore)


def test_libtpu_rejects_a_shape_in_one_line():
    with pytest.raises(ValueError, match="libtpu does not accept topology 'v5e:3x3'") as e:
        planning.build_devices("v5e:3x3")
    assert "\n" not in str(e.value)


def test_plan_arguments_parse():
    import argparse

    from gensim_jax.commands.plan import add_plan_arguments, run_plan_command

    p = argparse.ArgumentParser()
    add_plan_arguments(p)
    a = p.parse_args(["--topology", "v5e:16x16", "--json", "--max-batch", "--fsdp", "4"])
    assert (a.topology, a.json, a.max_batch, a.fsdp, a.batch_size, a.chips) == ("v5e:16x16", True, True, 4, None, False)
    assert run_plan_command(lambda b, f: None, 8, topology=None) == 2


def test_hlo_convolution_flops():
    text = """HloModule m

ENTRY %main (x: f32[8,32,32,4], k: f32[3,3,4,16]) -> f32[8,30,30,16] {
  %x = f32[8,32,32,4]{3,2,1,0} parameter(0)
  %k = f32[3,3,4,16]{3,2,1,0} parameter(1)
  ROOT %conv = f32[8,30,30,16]{3,2,1,0} convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->b01f
}
"""
    mod = hlo.parse_hlo(text)
    assert hlo.matmul_flops(mod) == 2 * (8 * 30 * 30 * 16) * (3 * 3 * 4)
    assert hlo.hbm_bytes(mod) == 4 * (8 * 30 * 30 * 16 + 8 * 32 * 32 * 4 + 3 * 3 * 4 * 16)


def test_hlo_cudnn_backward_convolution_flops():
    """cuDNN's forward, backward-input and backward-filter calls each do the forward's multiply-adds.

    Their ``dim_labels`` describe the forward convolution y = conv(x, w): backward-input computes dx
    from (dy, w), backward-filter dw from (x, dy); x (8, 32, 32, 4), w (16 out, 3, 3, 4 in), y (8, 30, 30, 16).
    """
    conv = 'window={size=3x3}, dim_labels=b01f_o01i->b01f, custom_call_target="__cudnn$conv%s"'
    text = f"""HloModule m

ENTRY %main (x: f32[8,32,32,4], w: f32[16,3,3,4], dy: f32[8,30,30,16]) -> f32[8,30,30,16] {{
  %x = f32[8,32,32,4]{{3,2,1,0}} parameter(0)
  %w = f32[16,3,3,4]{{3,2,1,0}} parameter(1)
  %dy = f32[8,30,30,16]{{3,2,1,0}} parameter(2)
  %dx = (f32[8,32,32,4]{{3,2,1,0}}, u8[0]{{0}}) custom-call(%dy, %w), {conv % "BackwardInput"}
  %dw = (f32[16,3,3,4]{{3,2,1,0}}, u8[0]{{0}}) custom-call(%x, %dy), {conv % "BackwardFilter"}
  ROOT %y = (f32[8,30,30,16]{{3,2,1,0}}, u8[0]{{0}}) custom-call(%x, %w), {conv % "Forward"}
}}
"""
    assert hlo.matmul_flops(hlo.parse_hlo(text)) == 3 * 2 * (8 * 30 * 30 * 16) * (3 * 3 * 4)


@pytest.mark.parametrize(
    "module, topology, fix",
    [
        ("jax_plugins.xla_cuda12", "h100:8x8", "pip install 'jax[cuda12]'"),
        ("libtpu", "v5e:2x2", "pip install 'gensim-jax[tpu]'"),
    ],
)
def test_plan_cli_without_the_compiler_plugin_is_one_line(monkeypatch, capsys, module, topology, fix):
    from gensim_jax.commands.main import main

    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "jax_plugins.xla_cuda13", None)
    assert main(["plan", "gaussian_mixture", "--topology", topology]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fix in err and topology in err


def test_has_compiler_looks_the_plugin_up_without_loading_it(monkeypatch):
    """``gensim-jax plan`` asks before it says what it compiles: a missing compiler is its one-line error."""
    import importlib.util

    from gensim_jax.planning.topology import has_compiler

    tpu, gpu = parse_topology("v5e:2x2"), parse_topology("h100:1x8")
    assert has_compiler(tpu) == (importlib.util.find_spec("libtpu") is not None)
    monkeypatch.setitem(sys.modules, "libtpu", None)
    monkeypatch.setitem(sys.modules, "jax_plugins.xla_cuda12", None)
    monkeypatch.setitem(sys.modules, "jax_plugins.xla_cuda13", None)
    assert not has_compiler(tpu) and not has_compiler(gpu)
