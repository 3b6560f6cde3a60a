"""Profiler traces of chosen training steps (``--profile-steps START:END``).

:class:`ProfileWindow` starts ``jax.profiler`` before step ``START`` runs and stops it once step
``END - 1`` has finished (steps count from 0, like a Python slice: ``10:15`` traces five steps).
The trace goes to ``WORKDIR/plugins/profile/<date_time>/<host>.xplane.pb`` (and a Chrome/Perfetto
``<host>.trace.json.gz`` beside it), so ``tensorboard --logdir WORKDIR`` shows it in the profile
tab of the same run as the scalars, and https://ui.perfetto.dev opens the ``.trace.json.gz``.
docs/OBSERVABILITY.md says what to look for.

Each step run under :meth:`ProfileWindow.annotate` is marked with a
``jax.profiler.StepTraceAnnotation``, which TensorBoard's profiler uses to split the trace into
steps (its step-time breakdown).  Outside the window the annotation is a no-op.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any, Optional

__all__ = ["ProfileWindow"]

_SPEC = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


class ProfileWindow:
    """Trace steps ``start <= i < end`` of a run (step ``i`` turns the step counter from ``i`` to ``i + 1``).

    Args:
      start, end: the steps, ``0 <= start < end``.
      logdir: where the trace goes (the run directory).
      enabled: whether this process traces (default: process 0 only, so that several processes of
        one host do not write the same file; pass True on every process of a multi-host job to get
        one trace per host).

    Use (``step`` = number of steps done so far)::

        prof = ProfileWindow.parse("10:15", workdir)
        prof.maybe_start(step)                 # before running the step
        with prof.annotate(step):
            state, metrics = step_fn(state, batch)
        step += 1
        prof.maybe_stop(step, wait_for=metrics)   # after it
        ...
        prof.close()                           # finally: stops a trace still running
    """

    def __init__(self, start: int, end: int, logdir, *, enabled: Optional[bool] = None):
        start, end = int(start), int(end)
        if start < 0 or end <= start:
            raise ValueError(f"profile steps: need 0 <= START < END, got {start}:{end}")
        self.start, self.end = start, end
        self.logdir = Path(logdir)
        if enabled is None:
            import jax

            enabled = jax.process_index() == 0
        self.enabled = bool(enabled)
        self.active = False
        self.done = False
        self.trace_dir: Optional[Path] = None

    @classmethod
    def parse(cls, spec: Optional[str], logdir, **kwargs) -> Optional["ProfileWindow"]:
        """``"START:END"`` -> a :class:`ProfileWindow`; None or ``""`` -> None (no profiling).

        ``ValueError`` naming the expected form for anything else (``"10"``, ``"5:2"``, ``"a:b"``).
        """
        if spec is None or str(spec).strip() == "":
            return None
        m = _SPEC.match(str(spec))
        if m is None:
            raise ValueError(
                f"--profile-steps must be START:END with integers 0 <= START < END "
                f"(e.g. 10:15 traces steps 10..14), got {spec!r}"
            )
        start, end = int(m.group(1)), int(m.group(2))
        if end <= start:
            raise ValueError(
                f"--profile-steps {spec!r}: END must be greater than START (START:END traces steps START..END-1)"
            )
        return cls(start, end, logdir, **kwargs)

    def maybe_start(self, step: int) -> bool:
        """Start tracing if step ``step`` (the next to run) is in the window; returns whether it started.

        A run resumed inside the window traces the rest of it; one resumed past it traces nothing.
        """
        if not self.enabled or self.active or self.done or not self.start <= int(step) < self.end:
            return False
        import jax

        self.logdir.mkdir(parents=True, exist_ok=True)
        before = set(self._sessions())
        jax.profiler.start_trace(str(self.logdir))
        self._before = before
        self.active = True
        return True

    def maybe_stop(self, step: int, wait_for: Any = None) -> bool:
        """Stop tracing once ``step`` steps are done and ``step >= end``; returns whether it stopped.

        ``wait_for`` (e.g. the last step's metrics or state) is waited on first, so that the
        device work of the last traced step is inside the trace.
        """
        if not self.active or int(step) < self.end:
            return False
        self._stop(wait_for)
        return True

    def close(self, wait_for: Any = None) -> None:
        """Stop a trace still running (a run that ended or failed inside the window)."""
        if self.active:
            self._stop(wait_for)

    def annotate(self, step: int):
        """Context manager marking step ``step`` in the trace (a no-op when not tracing)."""
        if not self.active:
            return contextlib.nullcontext()
        import jax

        return jax.profiler.StepTraceAnnotation("train", step_num=int(step))

    def _sessions(self):
        root = self.logdir / "plugins" / "profile"
        return [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []

    def _stop(self, wait_for) -> None:
        import jax

        try:
            if wait_for is not None:
                jax.block_until_ready(wait_for)
        finally:
            jax.profiler.stop_trace()
            self.active = False
            self.done = True
        new = [p for p in self._sessions() if p not in self._before]
        self.trace_dir = max(new, key=lambda p: p.stat().st_mtime) if new else None
        where = self.trace_dir if self.trace_dir is not None else self.logdir / "plugins" / "profile"
        print(
            f"profile: steps {self.start}..{self.end - 1} traced to {where} "
            f"(tensorboard --logdir {self.logdir}, profile tab)",
            file=sys.stderr,
            flush=True,
        )
