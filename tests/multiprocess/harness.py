"""Start P worker processes of one JAX run on this machine, collect their output, always clean up.

Each process gets ``JAX_PLATFORMS=cpu`` and ``XLA_FLAGS`` with ``--xla_force_host_platform_device_count=D`` (the caller's other XLA flags kept)
(set before jax is imported, so every process owns ``D`` CPU devices), and, when ``P > 1``, the
coordinator address ``127.0.0.1:<free port>``, ``--num-processes P`` and ``--process-id i``.  The
processes run in their own session (a signal sent to one does not reach pytest), every wait is
bounded, and :meth:`Cluster.close` (also on ``with`` exit) kills whatever is still alive.

Example::

    with Cluster(["-m", "tests.multiprocess.worker", "--case", "gensim", ...], processes=2) as c:
        c.wait_for_event("paused", timeout=60)
        c.signal(signal.SIGTERM)
        results = c.wait(timeout=60)
    results[0].events("done")
"""

from __future__ import annotations

import json
import os
import signal as _signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port that was free a moment ago (bind port 0 and read what the kernel chose).

    Probed on all interfaces: JAX's coordinator binds ``[::]:PORT``, not only the loopback address.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@dataclass
class Result:
    """One finished (or killed) process: exit status, full stdout/stderr, parsed JSON lines."""

    process_id: int
    returncode: Optional[int]
    stdout: str
    stderr: str
    records: list = field(default_factory=list)

    def events(self, name: str) -> list:
        return [r for r in self.records if r.get("event") == name]

    def done(self, case: Optional[str] = None) -> dict:
        """The last ``done`` record (of ``case`` if given); raises with the stderr tail if there is none."""
        found = [r for r in self.events("done") if case is None or r.get("case") == case]
        if not found:
            raise AssertionError(
                f"process {self.process_id} (exit {self.returncode}) printed no 'done' record"
                f"{'' if case is None else ' for ' + case}; stderr tail:\n{self.stderr[-3000:]}"
            )
        return found[-1]


class _Proc:
    def __init__(self, pid: int, popen: subprocess.Popen):
        self.process_id = pid
        self.popen = popen
        self.out: list[str] = []
        self.err: list[str] = []
        self.records: list[dict] = []
        self.lock = threading.Lock()
        self.readers = [
            threading.Thread(target=self._read, args=(popen.stdout, True), daemon=True),
            threading.Thread(target=self._read, args=(popen.stderr, False), daemon=True),
        ]
        for t in self.readers:
            t.start()

    def _read(self, stream, is_out: bool) -> None:
        for line in iter(stream.readline, ""):
            with self.lock:
                (self.out if is_out else self.err).append(line)
                if is_out and line.startswith("{"):
                    try:
                        self.records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
        stream.close()

    def result(self) -> Result:
        for t in self.readers:
            t.join(timeout=5)
        with self.lock:
            return Result(
                self.process_id, self.popen.returncode, "".join(self.out), "".join(self.err), list(self.records)
            )


def with_device_count(xla_flags: str, devices: int) -> str:
    """``xla_flags`` (the caller's ``XLA_FLAGS``) with its host device count replaced by ``devices``."""
    kept = [f for f in xla_flags.split() if not f.startswith("--xla_force_host_platform_device_count")]
    return " ".join([*kept, f"--xla_force_host_platform_device_count={int(devices)}"])


class Cluster:
    """``processes`` copies of ``python ARGS`` forming one JAX run with ``devices`` CPU devices each.

    Args:
      args: the arguments after ``python`` (``["-m", "tests.multiprocess.worker", ...]`` or a script path).
      processes: number of processes P; with P > 1 each gets ``--coordinator 127.0.0.1:PORT
        --num-processes P --process-id i`` appended.
      devices: CPU devices per process.
      env: extra environment variables.
      per_process_args: optional extra arguments for each process (a list of P lists).
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        processes: int = 1,
        devices: int = 1,
        env: Optional[dict] = None,
        per_process_args: Optional[Sequence[Sequence[str]]] = None,
    ):
        self.processes = int(processes)
        base_env = dict(os.environ)
        base_env.update(
            JAX_PLATFORMS="cpu",
            XLA_FLAGS=with_device_count(base_env.get("XLA_FLAGS", ""), devices),
            PYTHONPATH=str(REPO) + os.pathsep + base_env.get("PYTHONPATH", ""),
            PYTHONUNBUFFERED="1",
            TF_CPP_MIN_LOG_LEVEL="1",
        )
        base_env.update(env or {})
        self.port = free_port()
        self.procs: list[_Proc] = []
        try:
            for i in range(self.processes):
                cmd = [sys.executable, *args]
                if self.processes > 1:
                    cmd += [
                        "--coordinator",
                        f"127.0.0.1:{self.port}",
                        "--num-processes",
                        str(self.processes),
                        "--process-id",
                        str(i),
                    ]
                if per_process_args is not None:
                    cmd += list(per_process_args[i])
                popen = subprocess.Popen(
                    cmd,
                    cwd=REPO,
                    env=base_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
                self.procs.append(_Proc(i, popen))
        except BaseException:
            self.close()
            raise

    # -- control -------------------------------------------------------------------------------
    def signal(self, sig: int, process_id: Optional[int] = None) -> None:
        """Send ``sig`` to one process (``process_id``) or to all that are still running."""
        for p in self.procs:
            if (process_id is None or p.process_id == process_id) and p.popen.poll() is None:
                try:
                    p.popen.send_signal(sig)
                except ProcessLookupError:
                    pass

    def wait_for_event(self, name: str, *, timeout: float, process_ids: Optional[Sequence[int]] = None) -> None:
        """Block until every process in ``process_ids`` (default all) printed a record ``{"event": name}``.

        Raises ``TimeoutError`` after ``timeout`` seconds, or ``RuntimeError`` if such a process exits first.
        """
        ids = set(range(self.processes) if process_ids is None else process_ids)
        deadline = time.monotonic() + timeout
        while True:
            pending = []
            for p in self.procs:
                if p.process_id not in ids:
                    continue
                with p.lock:
                    seen = any(r.get("event") == name for r in p.records)
                if not seen:
                    if p.popen.poll() is not None:
                        raise RuntimeError(
                            f"process {p.process_id} exited ({p.popen.returncode}) before '{name}':\n"
                            + "".join(p.err)[-3000:]
                        )
                    pending.append(p.process_id)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes {pending} did not print '{name}' within {timeout} s")
            time.sleep(0.05)

    def wait_for_stderr(self, text: str, *, timeout: float, process_ids: Optional[Sequence[int]] = None) -> None:
        """Block until the stderr of every process in ``process_ids`` (default all) contains ``text``.

        Raises ``TimeoutError`` after ``timeout`` seconds, or ``RuntimeError`` if such a process exits first.
        """
        ids = set(range(self.processes) if process_ids is None else process_ids)
        deadline = time.monotonic() + timeout
        while True:
            pending = []
            for p in self.procs:
                if p.process_id not in ids:
                    continue
                with p.lock:
                    seen = text in "".join(p.err)
                if not seen:
                    if p.popen.poll() is not None:
                        raise RuntimeError(
                            f"process {p.process_id} exited ({p.popen.returncode}) before writing "
                            f"{text!r} to stderr:\n" + "".join(p.err)[-3000:]
                        )
                    pending.append(p.process_id)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes {pending} did not write {text!r} to stderr within {timeout} s")
            time.sleep(0.05)

    def wait(self, timeout: float, process_ids: Optional[Sequence[int]] = None) -> list[Result]:
        """Wait (at most ``timeout`` s in all) for the processes to exit; kill any left, then return all results.

        Raises ``TimeoutError`` (after killing everything) when a process is still running at the deadline.
        """
        deadline = time.monotonic() + timeout
        late = []
        for p in self.procs:
            if process_ids is not None and p.process_id not in process_ids:
                continue
            try:
                p.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                late.append(p.process_id)
        if late:
            results = self.close()
            tails = "\n".join(f"--- process {r.process_id} stderr tail:\n{r.stderr[-2000:]}" for r in results)
            raise TimeoutError(f"processes {late} still running after {timeout} s (killed)\n{tails}")
        return [p.result() for p in self.procs]

    def close(self) -> list[Result]:
        """Kill every process still alive (SIGKILL to its session) and reap it; returns the results."""
        for p in self.procs:
            if p.popen.poll() is None:
                try:
                    os.killpg(p.popen.pid, _signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for p in self.procs:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
                pass
        return [p.result() for p in self.procs]

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_PORT_TAKEN = ("Failed to start RPC server", "Failed to add port to server")  # the coordinator's bind failed


def run(
    args: Sequence[str],
    *,
    processes: int = 1,
    devices: int = 1,
    timeout: float = 120,
    env: Optional[dict] = None,
    check: bool = True,
) -> list[Result]:
    """Start a :class:`Cluster`, wait for it (bounded) and return the results; with ``check``, every
    process must exit 0 (else ``AssertionError`` with the stderr tails).

    The coordinator port is free when chosen but another program may take it before the coordinator
    binds it; a run that fails that way is started once more on a new port.
    """
    for _attempt in range(2):
        with Cluster(args, processes=processes, devices=devices, env=env) as cluster:
            results = cluster.wait(timeout)
        taken = processes > 1 and any(r.returncode != 0 and any(m in r.stderr for m in _PORT_TAKEN) for r in results)
        if not taken:
            break
    if check:
        bad = [r for r in results if r.returncode != 0]
        if bad:
            raise AssertionError(
                "\n".join(
                    f"process {r.process_id} exited {r.returncode}; stderr tail:\n{r.stderr[-3000:]}" for r in bad
                )
            )
    return results


def worker_args(case: str, workdir, num_steps: int, **options) -> list[str]:
    """``["-m", "tests.multiprocess.worker", "--case", case, ...]`` with ``--key value`` per option."""
    args = ["-m", "tests.multiprocess.worker", "--case", case, "--workdir", str(workdir), "--num-steps", str(num_steps)]
    for k, v in options.items():
        if v is not None:
            args += [f"--{k.replace('_', '-')}", str(v)]
    return args
