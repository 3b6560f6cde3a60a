"""Experiment: tests/training/tiny_experiment.py whose data stream can hold once at one step (cluster tests).

With ``GENSIM_TEST_HOLD_DIR`` and ``GENSIM_TEST_HOLD_AT`` set, the first arm's stream of every process,
on reaching position ``HOLD_AT`` for the first time in that directory, writes ``held.<process>``
(its pid) and waits until one of: the file ``release`` exists (the test wrote it); JAX's preemption
notice reached the coordination service (SIGTERM from the scheduler: its time limit's ``--signal``,
a requeue or ``scancel``); ``GENSIM_TEST_HOLD_MAX`` seconds (default 120) passed. It then writes
``released.<process>`` and never holds again in that directory (so a resumed run goes straight on).
Everything else, and so every number of a run, is the tiny experiment's: the hold only delays.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import jax

from tests.training.tiny_experiment import CONFIGS, Tiny

#: the key JAX's preemption sync manager writes into the coordination service when a process got SIGTERM
NOTICE_KEY = "RECEIVED_PREEMPTION_NOTICE"


def _notice() -> bool:
    try:
        from jax._src import distributed

        client = distributed.global_state.client
        if client is None:
            return False
        client.key_value_try_get(NOTICE_KEY)
        return True
    except Exception:  # not set (or an API this jax lacks: the hold then ends on the file or the time)
        return False


def _write(path: Path, text: str) -> None:
    """Write whole or not at all (a test that sees the file reads all of it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _hold(directory: Path, process: int) -> None:
    deadline = time.monotonic() + float(os.environ.get("GENSIM_TEST_HOLD_MAX", "120"))
    _write(directory / f"held.{process}", str(os.getpid()))
    why = "time"
    while time.monotonic() < deadline:
        if (directory / "release").exists():
            why = "release"
            break
        if _notice():
            why = "notice"
            break
        time.sleep(0.1)
    _write(directory / f"released.{process}", why)


class Held(Tiny):
    CONFIGS = CONFIGS

    def arm(self, name, config, data):
        arm = super().arm(name, config, data)
        hold_dir, hold_at = os.environ.get("GENSIM_TEST_HOLD_DIR"), os.environ.get("GENSIM_TEST_HOLD_AT")
        if not hold_dir or hold_at is None or name != self.arms(config)[0]:
            return arm
        directory, at, inner = Path(hold_dir), int(hold_at), arm.batches

        def batches(seed, shard):
            stream = inner(seed, shard)

            def held(position):
                for p, batch in enumerate(stream(position), start=position):
                    if p == at and not list(directory.glob("released.*")):
                        _hold(directory, jax.process_index())
                    yield batch

            return held

        return dataclasses.replace(arm, batches=batches)


EXPERIMENT = Held()
