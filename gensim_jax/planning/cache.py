"""A cache of plan compiles: the compiler's analyses of a step, keyed by the program and the target.

JAX's persistent compilation cache does not serve ``gensim-jax plan``: a program compiled for
compile-only devices (a libtpu topology or a CUDA target config, no client) is written to it but
not read back: with jax 0.10.2 and libtpu the second identical compile finds its entry (the same key
in a fresh process) and warns ``Error reading persistent compilation cache entry ...: PjRtCompiler
must be constructed with a Client to call DeserializeLoadedExecutable``, then compiles again (a
plan's compile cannot be loaded as an executable where there is no device to load it on).  What a plan reports is
what :func:`gensim_jax.planning.compile.compile_step` reads off the compiled program (its memory and
cost analyses and the figures taken from its HLO text), so this cache stores exactly that, keyed by

* the lowered program: the StableHLO text of ``jax.jit(step, shardings, donation).lower(*args)``
  (shapes, dtypes, shardings, donated buffers, the whole computation; no source locations), and
* the target and the compiler: the topology's name, chip and platform, every compile-only device
  (kind and coordinates), the GPU target config, the versions of jax, jaxlib, libtpu and the CUDA
  plug-in, ``XLA_FLAGS`` and ``LIBTPU_INIT_ARGS``, and the source of the code that reads the compiled
  program (so a changed analysis never reuses an old entry).

Any difference in these is a different key: a changed config, batch, FSDP axis or topology compiles
again.  An entry records when its compile ran and how long it took, so a report can say "reused a
compile from <date>" instead of "compiled in X s".  Entries are JSON (plus the compressed HLO
text), written atomically; an unreadable entry is a miss and is overwritten.

The default directory is ``$XDG_CACHE_HOME/gensim-jax/plans`` (``~/.cache/gensim-jax/plans``);
``GENSIM_JAX_PLAN_CACHE`` names another, and ``GENSIM_JAX_PLAN_CACHE=off`` (or ``gensim-jax plan
--no-cache``) turns it off.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

__all__ = ["PlanCache", "default_cache_dir", "plan_cache_from_env", "target_description"]

#: Bumped when the entry's layout changes (old entries then miss).
FORMAT = 1
ENV = "GENSIM_JAX_PLAN_CACHE"
_OFF = ("off", "0", "none", "false", "no")
#: Distributions whose versions enter the key (those installed).
_VERSIONED = (
    "jax",
    "jaxlib",
    "libtpu",
    "libtpu-nightly",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/gensim-jax/plans``, else ``~/.cache/gensim-jax/plans``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gensim-jax" / "plans"


def plan_cache_from_env(directory: Optional[str | os.PathLike] = None, enabled: bool = True) -> Optional["PlanCache"]:
    """The cache a plan uses: ``None`` when ``enabled`` is false or ``GENSIM_JAX_PLAN_CACHE`` is ``off``;
    else ``directory``, else the variable's directory, else :func:`default_cache_dir`."""
    env = os.environ.get(ENV, "").strip()
    if not enabled or env.lower() in _OFF:
        return None
    return PlanCache(directory or env or default_cache_dir())


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _analysis_source_hash() -> str:
    """sha256 of the modules that turn a compiled program into the report's figures."""
    from gensim_jax.planning import compile as compile_module
    from gensim_jax.training import hlo

    h = hashlib.sha256()
    for mod in (compile_module, hlo):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()


def target_description(topo, devices: Sequence[Any]) -> dict:
    """What the compile targets and with which compiler (part of the key; JSON-able)."""
    desc = {
        "topology": topo.name,
        "chip": topo.chip.name,
        "platform": topo.platform,
        "num_devices": len(devices),
        "devices": [
            [getattr(d, "platform", ""), getattr(d, "device_kind", ""), list(getattr(d, "coords", ()) or ())]
            for d in devices
        ],
        "versions": _versions(),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
        "LIBTPU_INIT_ARGS": os.environ.get("LIBTPU_INIT_ARGS", ""),
        "analysis_source": _analysis_source_hash(),
    }
    if topo.platform == "cuda":
        from gensim_jax.planning.topology import gpu_target_config

        desc["gpu_target_config"] = gpu_target_config(topo.chip.name)
    return desc


class PlanCache:
    """Compiled-step analyses on disk, one entry per (program, target) key.

    Example:
      >>> import tempfile
      >>> from gensim_jax.planning.compile import CompiledStep
      >>> cache = PlanCache(tempfile.mkdtemp())
      >>> key = cache.key("module @m {}", {"topology": "v5e:2x2"})
      >>> cache.load(key) is None
      True
      >>> cache.store(key, CompiledStep(platform="tpu", num_devices=4, compile_seconds=12.5))
      >>> entry = cache.load(key)
      >>> entry.compile_seconds, entry.reused
      (12.5, True)
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory).expanduser()

    def key(self, program_text: str, target: dict, extra: Any = None) -> str:
        """sha256 of the entry format, the program text, the target description and ``extra`` (JSON-able)."""
        h = hashlib.sha256()
        h.update(json.dumps({"format": FORMAT, "target": target, "extra": extra}, sort_keys=True).encode())
        h.update(b"\0")
        h.update(program_text.encode())
        return h.hexdigest()

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.directory / f"{key}.json", self.directory / f"{key}.hlo.gz"

    def load(self, key: str, need_hlo: bool = False):
        """The cached :class:`~gensim_jax.planning.compile.CompiledStep` (``reused`` set), or ``None``."""
        from gensim_jax.planning.compile import CompiledStep
        from gensim_jax.training.hlo import Collective

        meta_path, hlo_path = self._paths(key)
        try:
            entry = json.loads(meta_path.read_text())
            if entry.get("format") != FORMAT or entry.get("key") != key:
                return None
            fields = dict(entry["compiled"])
            fields["collectives"] = [Collective(**c) for c in fields.get("collectives", [])]
            hlo_text = ""
            if need_hlo:
                hlo_text = gzip.decompress(hlo_path.read_bytes()).decode()
            step = CompiledStep(**fields, hlo_text=hlo_text)
        except (OSError, ValueError, KeyError, TypeError, EOFError, gzip.BadGzipFile):
            return None
        step.reused = True
        step.compiled_at = entry.get("compiled_at")
        step.cache_key = key
        return step

    def store(self, key: str, step, hlo_text: str = "") -> None:
        """Write ``step`` (a :class:`~gensim_jax.planning.compile.CompiledStep`) under ``key``, atomically.

        An unwritable directory is not an error (the plan stands; the next one compiles again)."""
        fields = dataclasses.asdict(step)
        for k in ("hlo_text", "reused", "compiled_at", "cache_key"):
            fields.pop(k, None)
        entry = {
            "format": FORMAT,
            "key": key,
            "compiled_at": step.compiled_at
            or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "compiled": fields,
        }
        meta_path, hlo_path = self._paths(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            _atomic_write(hlo_path, gzip.compress((hlo_text or step.hlo_text or "").encode(), compresslevel=6))
            _atomic_write(meta_path, json.dumps(entry, default=float).encode())
        except OSError:
            return
        step.compiled_at = entry["compiled_at"]
        step.cache_key = key


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
