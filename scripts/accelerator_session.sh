#!/usr/bin/env bash
# The device checks of a machine with one NVIDIA GPU, in one call, for a host that has its own Python
# with JAX + CUDA and no package index (an HPC GPU node, the lent H100): no venv is built; the project
# runs from the checkout (PYTHONPATH=.) and a missing pure-Python dependency comes as a wheel in .whl/.
#
#   OUT=DIR bash scripts/accelerator_session.sh [PART...]
#
# PART (default: all, in this order): runner (the runner-level ResNet-50 run of
# ../shared/measurements/gpu_h100.md, with the device-idle figures), accel (python -m bench.runner.accelerator:
# loss curves step by step, the paper steps against the planner), cornet (the CORnet-S paper step again
# with accel's persistent compilation cache: accel compiled and autotuned it, this run loads the
# executable, so its peak is the step's own; run it after accel), plan (gensim-jax plan for h100:1x8 through the CUDA
# plug-in), simclr (the SimCLR arm through the runner with augmentation on the device); and, only when named,
# profile (issue 41, item 5: python -m bench.runner.step_profile on the ResNet-50 bf16 paper step: the
# step with the shipped XLA flags, timed, with its HBM bytes per step (counted as gensim-jax plan counts them) against the HBM bandwidth; then traced
# with command buffers off so that every kernel names its HLO instruction: per-op times by kind, the
# largest non-convolution ops; then at batch 512; PROFILE_XLA_FLAGS adds a run with those flags). accel runs its
# steps with a persistent compilation cache (JAX_CACHE, else a fresh folder) that cornet then reads.
# Every part has its own time limit and writes under $OUT; a part that fails does not stop the others.
set -u
OUT=${OUT:-accel_session}
PY=${PY:-python3}
WORK=${WORK:-$(mktemp -d)}  # run directories (checkpoints, events); $OUT gets the few files worth keeping
mkdir -p "$OUT" "$WORK"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! $PY -c "import tensorboardX" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
parts=${*:-runner simclr accel cornet plan}
cache=${JAX_CACHE:-$(mktemp -d)}  # one persistent compilation cache: accel's paper steps fill it, cornet reads it
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
$PY -c "import gensim_jax, jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, jax.devices())" >> "$OUT/gpu.txt" 2>&1
stamp() { echo "== $1 $(date -u +%H:%M:%S)"; }

# the measurements file's command: synthetic images in host memory, batch 256, bf16, 100 steps
RUNNER_SET=(model.name=resnet50 'model.stage_sizes=[3,4,6,3]' data.image_size=224 batch_size=256
  dtype=bfloat16 data.train_per_leaf=100 num_steps=100 log_every=20 num_runs=1 eval.per_leaf=3)

for part in $parts; do
  stamp "$part"
  case $part in
    runner)
      timeout 180 $PY -m train imagenet_hierarchy --config cpu_small --objective gensim --workdir "$WORK/runner" \
        --set "${RUNNER_SET[@]}" > "$OUT/runner.log" 2>&1
      echo "rc $?"; cat "$WORK"/runner/*/run*/metrics.jsonl > "$OUT/runner_metrics.jsonl" 2>/dev/null
      grep -h '"perf/' "$OUT/runner_metrics.jsonl" | tail -3 | cut -c1-800 ;;
    simclr)
      timeout 180 $PY -m train imagenet_hierarchy --config cpu_small --objective simclr --workdir "$WORK/simclr" \
        --set "${RUNNER_SET[@]}" data.augment=device > "$OUT/simclr.log" 2>&1
      echo "rc $?"; cat "$WORK"/simclr/*/run*/metrics.jsonl > "$OUT/simclr_metrics.jsonl" 2>/dev/null
      grep -h '"perf/' "$OUT/simclr_metrics.jsonl" | tail -3 | cut -c1-800 ;;
    accel)
      JAX_COMPILATION_CACHE_DIR=$cache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 \
        timeout 290 $PY -m bench.runner.accelerator --skip multi --steps 6 --paper-steps 25 \
        --out "$OUT/accel.jsonl" --table "$OUT/accel.md" > "$OUT/accel.log" 2>&1
      echo "rc $?"; cat "$OUT/accel.md" 2>/dev/null ;;
    cornet)  # the quadrilaterals paper step again, its executable from accel's cache: no autotuning
      JAX_COMPILATION_CACHE_DIR=$cache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 \
        timeout 100 $PY -m bench.runner.accelerator --experiments quadrilaterals --skip curves multi --paper-steps 25 \
        --isolate no --out "$OUT/cornet_cached.jsonl" > "$OUT/cornet_cached.log" 2>&1
      echo "rc $?"; $PY - "$OUT" <<'PYEOF'
import json, sys
for f in ("accel.jsonl", "cornet_cached.jsonl"):
    try:
        rows = [json.loads(t) for t in open(f"{sys.argv[1]}/{f}") if '"accel_paper_step"' in t]
    except OSError:
        continue
    for r in rows:
        if r.get("experiment") == "quadrilaterals":
            print(f, {k: r.get(k) for k in r if k.startswith("memory") or k in ("step_s", "compilation_cache")})
PYEOF
      ;;
    profile)  # about 4 minutes on an H100: three processes, each compiling the step once
      P=(-m bench.runner.step_profile --set dtype=bfloat16 --out "$OUT/step_profile.jsonl")
      timeout 200 $PY "${P[@]}" --trace-steps 0 > /dev/null 2> "$OUT/step_profile_shipped.txt"; echo "rc $?"
      timeout 200 $PY "${P[@]}" --attribute > /dev/null 2> "$OUT/step_profile.txt"; echo "rc $?"
      timeout 200 $PY "${P[@]}" --batch 512 --trace-steps 0 > /dev/null 2> "$OUT/step_profile_b512.txt"; echo "rc $?"
      if [ -n "${PROFILE_XLA_FLAGS:-}" ]; then
        XLA_FLAGS="${XLA_FLAGS:-} $PROFILE_XLA_FLAGS" timeout 200 $PY "${P[@]}" --trace-steps 0 > /dev/null \
          2> "$OUT/step_profile_flags.txt"; echo "rc $?"
      fi
      grep -h -A14 "^imagenet_hierarchy" "$OUT"/step_profile*.txt | cut -c1-220 ;;
    plan)
      timeout 150 $PY -m gensim_jax.commands plan imagenet_hierarchy --config paper --topology h100:1x8 --json \
        > "$OUT/plan.json" 2> "$OUT/plan.err"
      echo "rc $?"; tail -c 600 "$OUT/plan.err"; $PY -c "import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print({k: d.get(k) for k in ('flops_per_step','flops_source','global_batch','memory_per_device_bytes')})" "$OUT/plan.json" ;;
  esac
done
stamp done
