"""A pytest plugin that shows where a test session's time goes, per pytest-xdist worker.

Usage::

    python -m pytest -q -n 2 --dist worksteal -p bench.suite.session_profile tests gensim_jax

Every process of the session (the controller and each worker) records, on the clock of the whole
session:

* when its collection ended, when its first test started and its last test ended, and its busy
  seconds (setup + call + teardown of every test it ran);
* what JAX spent inside that process (``jax.monitoring``): tracing to a jaxpr, lowering to StableHLO,
  XLA's backend compile, and how many programs came from the persistent compilation cache. The
  subprocesses that tests start are not counted;
* its last five tests, with their start and end;
* the CPU seconds of its tests: the process's own (``cpu_s``) and those of the subprocesses its tests
  started and waited for (``child_cpu_s``: fresh interpreters, clean venvs, the docs build; not the
  jobs a scheduler such as SLURM runs), and its ten costliest tests by the two together
  (``costliest``). On 2 cores the session takes about half the sum of every worker's CPU seconds;
  the rest of a worker's busy seconds is waiting;
* the JAX seconds (trace + lower + compile) of each test and each test file: its ten costliest tests
  (``jax_costliest``) and fifteen costliest files (``jax_by_file``), where a faster compile or fewer
  programs would pay;
* every test it ran, costliest first (``every_test``: test, wall s, own CPU s, subprocesses' CPU s,
  JAX s, programs XLA compiled for it), the whole map of a session: a test that compiles hundreds of
  programs runs a function op by op (each operation on a new shape is a program of its own).

Each process writes ``<dir>/<worker>.json`` when its session ends (``dir``: ``$SUITE_PROFILE_DIR``, else
``suite_profile/`` in the working directory), and the controller prints one table row per worker.
docs/performance_log.md ("The test loop") quotes it.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

from bench.suite.compile_flags import COMPILE_EVENTS

_T0_ENV = "SUITE_PROFILE_T0"


def _worker(config) -> str:
    """``gw0``, ``gw1``, ... in a pytest-xdist worker, else ``controller``."""
    return getattr(config, "workerinput", {}).get("workerid", "controller")


def _directory() -> Path:
    return Path(os.environ.get("SUITE_PROFILE_DIR", "suite_profile"))


class _Profile:
    def __init__(self):
        # the controller's start time, inherited by the workers through the environment
        self.t0 = float(os.environ.setdefault(_T0_ENV, repr(time.time())))
        self.jax = dict.fromkeys(COMPILE_EVENTS.values(), 0.0)
        self.cache_hits = 0
        self.collected = None
        self.runs: list = []  # (start, end, nodeid)
        self.started: dict = {}
        self.cpu: dict = {}  # nodeid -> (own CPU s, CPU s of the subprocesses it waited for)
        self.cpu_started: dict = {}
        self.current: str | None = None  # the test running now
        self.jax_by_test: dict = {}  # nodeid -> its trace + lower + compile seconds
        self.programs_by_test: dict = {}  # nodeid -> the programs XLA compiled for it (not from a cache)

    def now(self) -> float:
        return round(time.time() - self.t0, 2)

    def on_duration(self, event, duration, **_):
        if event in COMPILE_EVENTS:
            self.jax[COMPILE_EVENTS[event]] += duration
            if self.current is not None:
                self.jax_by_test[self.current] = self.jax_by_test.get(self.current, 0.0) + duration
                if COMPILE_EVENTS[event] == "compile_s":
                    self.programs_by_test[self.current] = self.programs_by_test.get(self.current, 0) + 1

    def on_event(self, event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    def summary(self, config) -> dict:
        runs = sorted(self.runs)
        wall = {nodeid: end - start for start, end, nodeid in runs}
        by_cost = sorted(self.cpu.items(), key=lambda item: -sum(item[1]))  # own + subprocesses' CPU
        by_file: dict = {}
        for nodeid, seconds in self.jax_by_test.items():
            by_file[nodeid.split("::")[0]] = by_file.get(nodeid.split("::")[0], 0.0) + seconds
        return {
            "worker": _worker(config),
            "collected_at_s": self.collected,
            "first_test_at_s": runs[0][0] if runs else None,
            "last_test_end_s": runs[-1][1] if runs else None,
            "tests": len(runs),
            "busy_s": round(sum(end - start for start, end, _ in runs), 1),
            **{k: round(v, 3) for k, v in self.jax.items()},
            "persistent_cache_hits": self.cache_hits,
            "last_tests": [{"start_s": s, "end_s": e, "test": n} for s, e, n in runs[-5:]],
            "cpu_s": round(sum(own for own, _ in self.cpu.values()), 1),
            "child_cpu_s": round(sum(child for _, child in self.cpu.values()), 1),
            "costliest": [
                {
                    "test": n,
                    "wall_s": round(wall.get(n, 0.0), 2),
                    "cpu_s": round(own, 2),
                    "child_cpu_s": round(child, 2),
                }
                for n, (own, child) in by_cost[:10]
            ],
            "jax_costliest": [
                {"test": n, "jax_s": round(v, 2)} for n, v in sorted(self.jax_by_test.items(), key=lambda i: -i[1])[:10]
            ],
            "jax_by_file": [
                {"file": f, "jax_s": round(v, 2)} for f, v in sorted(by_file.items(), key=lambda i: -i[1])[:15]
            ],
            # every test of the worker, costliest first:
            # [test, wall s, own CPU s, subprocesses' CPU s, JAX s, programs XLA compiled]
            "every_test": [
                [
                    n,
                    round(wall.get(n, 0.0), 2),
                    round(own, 2),
                    round(child, 2),
                    round(self.jax_by_test.get(n, 0.0), 2),
                    self.programs_by_test.get(n, 0),
                ]
                for n, (own, child) in by_cost
            ],
        }


def _cpu_now() -> tuple[float, float]:
    """``(this process's CPU seconds, the CPU seconds of its finished and waited-for children)``."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


_PROFILE: _Profile | None = None


def _has_workers(config) -> bool:
    """This process is the controller of pytest-xdist workers (it then sees their tests, not its own)."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config):
    global _PROFILE
    if not hasattr(config, "workerinput"):  # a new session: the files of an earlier one go
        for old in _directory().glob("*.json"):
            old.unlink()
    _PROFILE = _Profile()
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_PROFILE.on_duration)
    jax.monitoring.register_event_listener(_PROFILE.on_event)


def pytest_collection_finish(session):
    _PROFILE.collected = _PROFILE.now()


def pytest_runtest_logstart(nodeid, location):
    _PROFILE.started[nodeid] = _PROFILE.now()
    _PROFILE.cpu_started[nodeid] = _cpu_now()
    _PROFILE.current = nodeid


def pytest_runtest_logfinish(nodeid, location):
    _PROFILE.runs.append((_PROFILE.started.pop(nodeid, _PROFILE.now()), _PROFILE.now(), nodeid))
    (own0, child0), (own1, child1) = _PROFILE.cpu_started.pop(nodeid, _cpu_now()), _cpu_now()
    _PROFILE.cpu[nodeid] = (own1 - own0, child1 - child0)
    _PROFILE.current = None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if _has_workers(session.config):
        return
    out = _directory()
    out.mkdir(parents=True, exist_ok=True)
    summary = {**_PROFILE.summary(session.config), "session_end_s": _PROFILE.now()}
    (out / f"{_worker(session.config)}.json").write_text(json.dumps(summary, indent=1))


def pytest_terminal_summary(terminalreporter):
    if hasattr(terminalreporter.config, "workerinput"):
        return
    rows = [json.loads(path.read_text()) for path in sorted(_directory().glob("*.json"))]
    keys = (
        "worker",
        "collected_at_s",
        "last_test_end_s",
        "tests",
        "busy_s",
        "cpu_s",
        "child_cpu_s",
        *COMPILE_EVENTS.values(),
        "persistent_cache_hits",
    )
    tr = terminalreporter
    tr.section("suite profile (bench.suite.session_profile; seconds since the session started)")
    tr.write_line(" | ".join(keys))
    for row in rows:
        tr.write_line(" | ".join(str(row.get(k)) for k in keys))
    costliest = sorted(
        (t for row in rows for t in row.get("costliest", [])), key=lambda t: -(t["cpu_s"] + t["child_cpu_s"])
    )[:15]
    if costliest:
        tr.write_line("costliest tests: CPU s of the worker + of the subprocesses it waited for (wall s)")
        for t in costliest:
            tr.write_line(f"  {t['cpu_s']:8.1f} + {t['child_cpu_s']:8.1f} ({t['wall_s']:.1f})  {t['test']}")
    files: dict = {}
    for row in rows:
        for f in row.get("jax_by_file", []):
            files[f["file"]] = files.get(f["file"], 0.0) + f["jax_s"]
    if files:
        tr.write_line(
            "test files by JAX seconds in the workers (trace + lower + compile; each worker's fifteen costliest)"
        )
        for name, seconds in sorted(files.items(), key=lambda i: -i[1])[:15]:
            tr.write_line(f"  {seconds:8.1f}  {name}")
    tr.write_line(f"per worker, with its last five tests and its ten costliest: {_directory()}/*.json")
