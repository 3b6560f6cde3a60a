"""Typed ``--set`` overrides and run-directory checks of ``gensim-jax train`` (``python -m train``).

Everything here runs before an experiment builds a model, so a wrong command fails in seconds,
before any XLA compile:

* :func:`parse_overrides` turns ``KEY=VALUE`` items into typed values checked against the
  annotations of the experiment's ``Config`` dataclass, KEY a dotted name through its sections
  (``optim.learning_rate``, ``objectives.simclr.temperature``): ``int``, ``float`` (an int is accepted),
  ``str``, ``bool`` (JSON ``true``/``false``), ``Optional[...]`` (JSON ``null``), ``tuple`` /
  ``tuple[T, ...]`` / ``tuple[T1, T2]`` from JSON lists, ``list``, ``dict``, ``Literal[...]``.
  Errors (:class:`ConfigError`, a ``ValueError``) name the key, the expected type and the value.
* :func:`find_checkpoints` lists the checkpoints already in a run directory (for ``--resume``).
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "coerce",
    "config_differences",
    "describe_type",
    "field_types",
    "find_checkpoints",
    "parse_overrides",
    "parse_value",
]


class ConfigError(ValueError):
    """A command-line config value that does not fit the experiment's ``Config``."""


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


def field_types(config_cls) -> dict:
    """``{dotted field name: annotation}`` of a (nested) config dataclass, with string annotations resolved
    (:func:`gensim_jax.training.config.field_paths`: sections flattened, ``optim.learning_rate``).

    When an annotation cannot be resolved, the type of the field's default stands in for it.
    """
    from gensim_jax.training.config import field_paths

    return field_paths(config_cls)


def _is_union(tp) -> bool:
    return typing.get_origin(tp) is typing.Union or isinstance(tp, types.UnionType)


def describe_type(tp) -> str:
    """A short readable name of an annotation: ``int``, ``Optional[int]``, ``tuple[float, ...]``."""
    if tp is Any:
        return "any"
    if tp is type(None):
        return "None"
    if _is_union(tp):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        inner = " | ".join(describe_type(a) for a in rest)
        return f"Optional[{inner}]" if len(rest) < len(args) else inner
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin is not None:
        args = typing.get_args(tp)
        name = getattr(origin, "__name__", str(origin))
        if not args:
            return name
        return f"{name}[" + ", ".join("..." if a is Ellipsis else describe_type(a) for a in args) + "]"
    return getattr(tp, "__name__", str(tp))


def _fail(key: str, tp, value) -> ConfigError:
    shown = (
        json.dumps(value) if isinstance(value, (str, int, float, bool, list, dict)) or value is None else repr(value)
    )
    return ConfigError(f"--set {key}: expected {describe_type(tp)}, got {shown} ({type(value).__name__})")


def _freeze(value):
    """JSON lists inside a bare ``tuple`` field become tuples too (configs are frozen, hashable)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def coerce(key: str, value, tp):
    """``value`` (as parsed from JSON) checked against and converted to annotation ``tp``.

    Rules: ``bool`` only from ``true``/``false``; ``int`` not from a bool or a float; ``float`` from
    an int or a float; ``str`` only from a string; ``Optional[X]`` also from ``null``; tuples from
    JSON lists (element types and length checked when the annotation gives them); other classes by
    ``isinstance``.

    Raises:
      ConfigError: naming ``key``, the expected type and the value.
    """
    if tp is Any or tp is object:
        return value
    if tp is type(None):
        if value is None:
            return None
        raise _fail(key, tp, value)
    if _is_union(tp):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise _fail(key, tp, value)
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(key, value, arg)
            except ConfigError:
                continue
        raise _fail(key, tp, value)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        if any(value == a and type(value) is type(a) for a in typing.get_args(tp)):
            return value
        raise _fail(key, tp, value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _fail(key, tp, value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _fail(key, tp, value)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _fail(key, tp, value)
    if tp is str:
        if isinstance(value, str):
            return value
        raise _fail(key, tp, value)
    if tp is tuple or origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise _fail(key, tp, value)
        args = typing.get_args(tp)
        if not args:
            return _freeze(value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(f"{key}[{i}]", v, args[0]) for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(
                f"--set {key}: expected {describe_type(tp)} ({len(args)} entries), got "
                f"{json.dumps(list(value))} ({len(value)} entries)"
            )
        return tuple(coerce(f"{key}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args)))
    if tp is list or origin is list:
        if not isinstance(value, (list, tuple)):
            raise _fail(key, tp, value)
        args = typing.get_args(tp)
        return [coerce(f"{key}[{i}]", v, args[0]) for i, v in enumerate(value)] if args else list(value)
    if tp is dict or origin is dict:
        if isinstance(value, dict):
            return value
        raise _fail(key, tp, value)
    if isinstance(tp, type):
        if isinstance(value, tp):
            return value
        if isinstance(value, str) and issubclass(tp, Path):
            return tp(value)
        raise _fail(key, tp, value)
    return value  # an annotation we do not interpret (e.g. a Protocol): passed through


def parse_value(key: str, text: str, tp):
    """The command-line text of ``key`` as a value of annotation ``tp``.

    The text is read as JSON (``3``, ``1e-4``, ``true``, ``null``, ``[16, 8]``, ``"x"``); when that
    fails, or gives a value of the wrong type where a string fits, the text itself is the value, so
    ``--set model=resnet18`` needs no quotes.
    """
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return coerce(key, text, tp)
    try:
        return coerce(key, parsed, tp)
    except ConfigError:
        if isinstance(parsed, str):
            raise
        try:
            return coerce(key, text, tp)
        except ConfigError:
            pass
        raise


def parse_overrides(config_cls, items, *, experiment: str = "the experiment") -> dict:
    """``["key=value", ...]`` -> ``{dotted key: typed value}`` for the (nested) dataclass ``config_cls``.

    Raises:
      ConfigError: an item without ``=``, a key that is not a field (with close matches), a key
        given twice, or a value of the wrong type.
    """
    from gensim_jax.training.config import unknown_key_hint

    types_ = field_types(config_cls)
    out: dict = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        if key not in types_:
            raise ConfigError(
                f"--set expects KEY=VALUE with KEY a (dotted) field of {experiment}'s Config: unknown key "
                f"{key!r}{unknown_key_hint(key, types_)}; the experiment's --help lists every field"
            )
        if key in out:
            raise ConfigError(f"--set {key} given twice")
        out[key] = parse_value(key, text, types_[key])
    return out


# --------------------------------------------------------------------------------------------
# Run directories
# --------------------------------------------------------------------------------------------


def find_checkpoints(workdir) -> list:
    """``[(checkpoint directory, [steps])]`` of every ``checkpoints/`` folder under ``workdir`` that holds a step.

    A step is a sub-directory named by an integer (orbax's finished checkpoints; a save that a killed
    process left unfinished is a ``<step>.orbax-checkpoint-tmp`` directory and does not count).
    """
    root = Path(workdir)
    if not root.is_dir():
        return []
    found = []
    for ck in sorted(p for p in root.rglob("checkpoints") if p.is_dir()):
        steps = sorted(int(c.name) for c in ck.iterdir() if c.is_dir() and c.name.isdigit())
        if steps:
            found.append((ck, steps))
    return found


def config_differences(saved: dict, current: dict) -> list:
    """``[(dotted key, saved value, current value)]`` for the fields whose JSON values differ (missing = None).

    Both configs are nested dicts (``dataclasses.asdict``, ``config.json``); sections are compared
    field by field, so a difference is named ``optim.learning_rate``, not ``optim``.
    """
    from gensim_jax.training.config import flatten

    norm = lambda d: flatten(json.loads(json.dumps(d, default=str)))  # noqa: E731  tuples -> lists, like the saved file
    a, b = norm(saved), norm(current)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
