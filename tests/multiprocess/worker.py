"""``python -m tests.multiprocess.worker ARGS``: one process of a (possibly multi-process) training run.

Started by :mod:`tests.multiprocess.harness` (which sets ``XLA_FLAGS`` to the number of local CPU
devices and ``JAX_PLATFORMS=cpu`` before jax is imported).  With ``--num-processes > 1`` it joins
the run through :func:`gensim_jax.parallel.initialize_distributed` (gloo collectives on CPU), builds
a tiny model, objective and state, and runs :func:`gensim_jax.training.train` on a mesh of all
devices of all processes.  The data stream is deterministic: the global batch of position ``p`` is
``tiny_batch(default_rng((seed, p)), B)`` and each process yields only its rows
(:func:`gensim_jax.parallel.process_batch_slice`), so any process count sees the same global batches.

``--case gensim,ntxent`` trains each case in turn, in ``WORKDIR/<case>``.  Stdout is JSON lines:
``{"event": "ready", ...}`` after initialisation, ``{"event": "paused", "position": p}`` when
``--pause-at`` holds the stream, ``{"event": "dying", ...}`` just before ``--die-at`` kills the
process, and per case ``{"event": "done", "case": ...}`` with the per-step losses of this call, the
start and final steps, whether the run was preempted and a digest of the final variables.  With
``--out OUT`` the final variables are exported to ``OUT/<case>`` by
:func:`gensim_jax.training.export_variables` (called on every process; process 0 writes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_T0 = time.time()


CASES = ("gensim", "ntxent")


def emit(**record) -> None:
    print(json.dumps({**record, "time": round(time.time() - _T0, 3)}), flush=True)


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True, help="comma list of: " + ", ".join(CASES))
    p.add_argument("--workdir", required=True)
    p.add_argument("--num-steps", type=int, required=True)
    p.add_argument("--batch", type=int, default=16, help="global batch size")
    p.add_argument("--checkpoint-every", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        default=None,
        help="export the final variables to OUT/<case> (training.export_variables; process 0 writes)",
    )
    p.add_argument(
        "--fsdp",
        type=int,
        default=1,
        help="size of the mesh's fsdp axis; > 1 splits every parameter leaf of >= 16 elements over it",
    )
    p.add_argument("--coordinator", default=None)
    p.add_argument("--num-processes", type=int, default=1)
    p.add_argument("--process-id", type=int, default=0)
    p.add_argument(
        "--heartbeat-timeout",
        type=int,
        default=30,
        help="seconds after which JAX declares a silent process dead (and stops the others)",
    )
    p.add_argument("--init-timeout", type=int, default=60)
    p.add_argument(
        "--pause-at",
        type=int,
        default=None,
        help="when the stream reaches this position, print 'paused' and wait (see --pause-until)",
    )
    p.add_argument("--pause-until", default=None, help="end the pause when this file exists")
    p.add_argument("--pause", type=float, default=3.0, help="the longest pause (seconds)")
    p.add_argument("--die-at", type=int, default=None, help="SIGKILL this process at this stream position")
    p.add_argument("--die-process", type=int, default=None, help="the process that --die-at kills (default: all)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    import jax

    jax.config.update("jax_default_matmul_precision", "highest")
    from gensim_jax import parallel

    if args.num_processes > 1:
        parallel.initialize_distributed(
            args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
            initialization_timeout=args.init_timeout,
            heartbeat_timeout_seconds=args.heartbeat_timeout,
        )
    import numpy as np
    import optax

    from gensim_jax.models import get_model
    from gensim_jax.training import BetaBernoulliTarget, GenSimRegression, NTXent, create_train_state, train
    from gensim_jax.training.export import export_variables, gather_to_host
    from tests.training._tiny import CLASSES, IN, tiny_batch

    tiny = dict(in_features=IN, hidden=16, embed_dim=4, num_classes=CLASSES)  # as tests.training._tiny.tiny_model
    pid, pcount = jax.process_index(), jax.process_count()
    emit(
        event="ready",
        process_index=pid,
        process_count=pcount,
        devices=jax.device_count(),
        local_devices=jax.local_device_count(),
        pid=os.getpid(),
    )
    rows = parallel.process_batch_slice(args.batch)
    if args.fsdp > 1:
        parallel.FSDP_MIN_SIZE = 16  # let FSDP split the tiny model's matrices
    mesh = parallel.make_mesh(fsdp=args.fsdp)

    def batches(position: int):
        p = position
        while True:
            if args.die_at is not None and p >= args.die_at and args.die_process in (None, pid):
                emit(event="dying", position=p)
                os.kill(os.getpid(), signal.SIGKILL)
            if args.pause_at is not None and p == args.pause_at:
                emit(event="paused", position=p)
                until = time.monotonic() + args.pause
                while time.monotonic() < until and not (args.pause_until and os.path.exists(args.pause_until)):
                    time.sleep(0.02)
            full = tiny_batch(np.random.default_rng((args.seed, p)), args.batch)
            yield {k: v[rows] for k, v in full.items()}
            p += 1

    for case in args.case.split(","):
        if case not in CASES:
            raise SystemExit(f"worker: unknown case {case!r}; known: {', '.join(CASES)}")
        if case == "gensim":  # GenSim regression (paper Eq. 2), Beta-Bernoulli kernel target, cosine
            objective = GenSimRegression(target=BetaBernoulliTarget(), input_key="x")
            model_kwargs = dict(tiny)
        else:  # SimCLR: NT-Xent over two views, through a BatchNorm projection head (global-batch BN)
            objective = NTXent(temperature=0.5)
            model_kwargs = dict(tiny, projection_dims=[8, 3], projection_batchnorm=True)
        state = create_train_state(get_model("mlp", **model_kwargs), optax.sgd(0.05, momentum=0.9), args.seed)
        res = train(
            state,
            objective,
            batches,
            num_steps=args.num_steps,
            workdir=Path(args.workdir) / case,
            mesh=mesh,
            fsdp=args.fsdp > 1,
            checkpoint_every=args.checkpoint_every,
            log_every=1,
            progress=False,
            exit_on_preemption=False,
            config={"case": case, "batch": args.batch},
            seed=args.seed,
            prefetch=0,
        )  # no look-ahead: --pause-at/--die-at name the step being fed
        params = jax.tree.leaves(res.state.params)
        # leaves that jax.device_get cannot read here: this process holds only part of them (FSDP over processes)
        not_local = sum(
            1 for x in params if sum({str(s.index): s.data.size for s in x.addressable_shards}.values()) < x.size
        )
        flat = {
            "/".join(str(getattr(k, "key", k)) for k in path): np.asarray(v)
            for path, v in jax.tree_util.tree_leaves_with_path(gather_to_host(res.state.variables))
        }
        digest = hashlib.sha256(b"".join(flat[k].tobytes() for k in sorted(flat))).hexdigest()[:16]
        if args.out:  # a collective: every process calls it, process 0 writes
            export_variables(Path(args.out) / case, res.state.variables, model="mlp", model_kwargs=model_kwargs)
        losses = {int(r["step"]): r["loss"] for r in res.history if "loss" in r}
        emit(
            event="done",
            case=case,
            process_index=pid,
            start_step=res.start_step,
            final_step=int(jax.device_get(res.state.step)),
            preempted=res.preempted,
            stop_signal=res.stop_signal,
            losses=losses,
            digest=digest,
            param_leaves=len(params),
            params_split_across_processes=not_local,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
