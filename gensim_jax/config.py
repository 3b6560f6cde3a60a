"""Nested, typed configs: frozen dataclasses whose fields may be sections (frozen dataclasses themselves).

The one config system of the package (it imports nothing of ``gensim_jax``).  An experiment's
``Config`` (a :class:`~gensim_jax.training.experiment.TrainConfig`) keeps the run-level fields at its
top (``seed``, ``num_runs``, ``num_steps``, ``batch_size``, mesh, logging) and groups the rest in
sections: ``optim``, ``data``, ``model``, ``objectives.<arm>`` (one :class:`ArmConfig` per objective)
and ``eval``.  A field is named by its dotted path (``optim.learning_rate``,
``objectives.simclr.temperature``), on the command line (``--set objectives.simclr.temperature=0.2``)
as in code::

    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Head:
    ...     dims: tuple[int, ...] = (128, 64)
    ...     crop: tuple[float, float] = (0.08, 1.0)
    >>> @dataclasses.dataclass(frozen=True)
    ... class C:
    ...     seed: int = 0
    ...     head: Head = Head()
    >>> c = with_overrides(C(), {"seed": 3, "head.dims": [32, 8]})
    >>> c.head.dims, flatten(c)
    ((32, 8), {'seed': 3, 'head.dims': (32, 8), 'head.crop': (0.08, 1.0)})
    >>> from_dict(C, {"head": {"dims": [16]}}) == C(head=Head(dims=(16,)))
    True
    >>> with_overrides(C(), {"head.crop": [0.1, 0.5, 0.9]})
    Traceback (most recent call last):
    ...
    gensim_jax.config.ConfigError: head.crop: expected tuple[float, float] (2 entries), got [0.1, 0.5, 0.9] (3 entries)

Every value that enters a config is checked against the field's annotation (:func:`coerce`):
:func:`with_overrides` (``CONFIGS`` variants, ``--set``, ``Experiment.get_config``) and
:func:`from_dict` (a recorded ``config.json`` read back) apply the same rules, and
:func:`parse_value` reads a command-line text with them.  The rules:

* ``int`` (not a bool or a float), ``float`` (an int is accepted and becomes a float), ``str``,
  ``bool`` (only ``true``/``false``), ``Literal[...]``, ``dict``, other classes by ``isinstance``;
* ``Optional[X]``: null.  On the command line ``null``, ``None`` and ``~`` all mean null; a field that
  is not ``Optional`` refuses them with a hint (a ``str`` field takes the text ``None`` only quoted as
  JSON, ``'"None"'``), so ``--set model.name=None`` never stores the word "None" by accident;
* tuples from lists (written as JSON on the command line, ``[16,8]``): ``tuple[float, float]`` has a
  fixed length, checked when the value is parsed (the error names the field and the length);
  ``tuple[int, ...]`` any length, each element checked; a bare ``tuple`` any content, frozen.
  JSON lists become tuples (configs are frozen and hashable). On the command line one word for a
  ``tuple[str, ...]`` is a one-element tuple (``--set arms=simclr``).

Errors are :class:`ConfigError` (a ``ValueError``), one line naming the dotted field, the expected
type and the value; an unknown field gets a few close names (:func:`unknown_key_hint`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Optional

__all__ = [
    "ArmConfig",
    "ConfigError",
    "NULL_WORDS",
    "close_keys",
    "coerce",
    "config_differences",
    "describe_type",
    "field_paths",
    "flatten",
    "from_dict",
    "is_section",
    "parse_value",
    "section_of",
    "unknown_key_hint",
    "with_overrides",
]

#: Command-line texts that mean null (Python's ``None``) for every field.
NULL_WORDS = ("null", "None", "~")


class ConfigError(ValueError):
    """A config value that does not fit the annotation of its field (or names no field)."""


@dataclasses.dataclass(frozen=True)
class ArmConfig:
    """Settings of one trained objective (``objectives.<arm>``); experiments derive their arms' sections.

    Attributes:
      learning_rate: the arm's peak learning rate; ``None`` uses ``optim.learning_rate``.
    """

    learning_rate: Optional[float] = None


# --------------------------------------------------------------------------------------------
# Fields
# --------------------------------------------------------------------------------------------


def is_section(value) -> bool:
    """Whether ``value`` is a section: a dataclass instance (not a dataclass type)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation naming something the module does not define
        return {}


def field_paths(config_cls, prefix: str = "") -> dict:
    """``{dotted name: annotation}`` of every leaf field of ``config_cls``, sections flattened in order.

    A field is a section when its default is a dataclass instance (the section's class is the
    default's, so a ``Config`` may narrow a section by its default) or its annotation is a dataclass.
    When an annotation cannot be resolved, the type of the field's default stands in for it.
    """
    if not dataclasses.is_dataclass(config_cls):
        raise TypeError(f"Config must be a dataclass, got {config_cls!r}")
    cls = config_cls if isinstance(config_cls, type) else type(config_cls)
    hints = _hints(cls)
    out: dict = {}
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        default = _default(f)
        tp = hints.get(f.name)
        if is_section(default):
            out.update(field_paths(type(default), name + "."))
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
            out.update(field_paths(tp, name + "."))
        elif tp is not None:
            out[name] = tp
        elif default is not dataclasses.MISSING and default is not None:
            out[name] = type(default)
        else:
            out[name] = Any
    return out


def flatten(config, prefix: str = "") -> dict:
    """``{dotted name: value}`` of a config's leaves: a dataclass instance (its sections flattened) or
    a nested mapping such as ``config.json``'s (every non-empty mapping flattened; an empty one stays a
    value).  Anything else has no leaves: ``{}``.

    The one flattening of configs in the package (``gensim-jax runs compare --config-fields``, the
    records' hyperparameters, ``--help`` and ``plan``'s listings).

    Example:
      >>> flatten({"seed": 0, "optim": {"learning_rate": 0.1}, "kw": {}})
      {'seed': 0, 'optim.learning_rate': 0.1, 'kw': {}}
    """
    out: dict = {}
    if is_section(config):
        for f in dataclasses.fields(config):
            v = getattr(config, f.name)
            if is_section(v):
                out.update(flatten(v, f"{prefix}{f.name}."))
            else:
                out[prefix + f.name] = v
        return out
    if isinstance(config, Mapping):
        for k, v in config.items():
            if is_section(v) or (isinstance(v, Mapping) and v):
                out.update(flatten(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
    return out


def section_of(config, path: str):
    """The section (or value) at dotted ``path`` of ``config`` (``section_of(c, "objectives.simclr")``)."""
    value = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _sections(config, prefix: str = "") -> list:
    out = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if is_section(value):
            out.append(prefix + f.name)
            out.extend(_sections(value, f"{prefix}{f.name}."))
    return out


# --------------------------------------------------------------------------------------------
# Unknown keys
# --------------------------------------------------------------------------------------------


def _initials(name: str) -> str:
    return "".join(w[:1] for w in name.split("_") if w)


def close_keys(key: str, known, n: int = 3) -> list:
    """Up to ``n`` dotted names of ``known`` close to ``key``: the same last name in another section
    (``image_size`` -> ``data.image_size``), in the same section a close last name, one it begins or
    whose initials it is (``optim.lr`` -> ``optim.learning_rate``), or close as a whole.

    Example:
      >>> close_keys("optim.lr", ["seed", "optim.learning_rate", "optim.momentum", "data.image_size"])
      ['optim.learning_rate']
      >>> close_keys("image_size", ["seed", "batch_size", "data.image_size"])
      ['data.image_size', 'batch_size']
    """
    known = list(known)
    section, _, leaf = key.rpartition(".")
    same = [k for k in known if k.rpartition(".")[0] == section]
    by_leaf = {k.rpartition(".")[2]: k for k in same}
    out = [k for k in known if k.rpartition(".")[2] == leaf]  # the name in another section
    out += [by_leaf[m] for m in difflib.get_close_matches(leaf, list(by_leaf), n=n)]
    out += [k for name, k in by_leaf.items() if leaf and (name.startswith(leaf) or _initials(name) == leaf)]
    out += difflib.get_close_matches(key, known, n=n)
    return list(dict.fromkeys(out))[:n]


def unknown_key_hint(key: str, known) -> str:
    """What an error about the unknown field ``key`` adds: the first fields of a section given as a field,
    else `` (did you mean A, B?)`` with at most three :func:`close_keys`, else the top-level names (a section
    as ``name.*``); never every field.

    Example:
      >>> unknown_key_hint("optim.lr", ["seed", "optim.learning_rate", "data.image_size"])
      ' (did you mean optim.learning_rate?)'
      >>> unknown_key_hint("zzz", ["seed", "optim.learning_rate", "optim.momentum", "data.image_size"])
      ' (no field is close; the top-level names: seed, optim.*, data.*)'
      >>> unknown_key_hint("optim", ["seed", "optim.learning_rate", "optim.momentum"])
      ' (optim is a section; set its fields: optim.learning_rate, optim.momentum)'
    """
    known = list(known)
    inside = [k for k in known if k.startswith(key + ".")]
    if inside:
        more = ", ..." if len(inside) > 3 else ""
        return f" ({key} is a section; set its fields: {', '.join(inside[:3])}{more})"
    close = close_keys(key, known)
    if close:
        return f" (did you mean {', '.join(close)}?)"
    top = dict.fromkeys(k.split(".")[0] + (".*" if "." in k else "") for k in known)
    return f" (no field is close; the top-level names: {', '.join(top)})"


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


def _is_union(tp) -> bool:
    return typing.get_origin(tp) is typing.Union or isinstance(tp, types.UnionType)


def _is_sequence_type(tp) -> bool:
    """Whether ``tp`` (or a member of its union) takes a list: ``tuple``, ``tuple[...]``, ``list``, ``list[...]``."""
    if _is_union(tp):
        return any(_is_sequence_type(a) for a in typing.get_args(tp))
    return tp in (tuple, list) or typing.get_origin(tp) in (tuple, list)


def _fixed_length(tp) -> Optional[int]:
    """The length of a fixed-length tuple annotation (``tuple[float, float]`` -> 2), else None."""
    if typing.get_origin(tp) is not tuple:
        return None
    args = typing.get_args(tp)
    if not args or (len(args) == 2 and args[1] is Ellipsis) or args == ((),):
        return None
    return len(args)


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


def _shown(value) -> str:
    if isinstance(value, (str, int, float, bool, list, dict)) or value is None:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return repr(value)
    if isinstance(value, tuple):
        return _shown(list(value))
    return repr(value)


def _fail(key: str, tp, value) -> ConfigError:
    hint = ""
    if value is None and not _optional(tp):
        hint = f"; {key} is not optional (it cannot be null)"
    elif _is_sequence_type(tp) and not isinstance(value, (list, tuple)):
        hint = "; write a list as JSON, e.g. [1,2]"
    n = _fixed_length(tp)
    size = f" ({n} entries)" if n is not None else ""
    return ConfigError(f"{key}: expected {describe_type(tp)}{size}, got {_shown(value)} ({type(value).__name__}){hint}")


def _optional(tp) -> bool:
    return tp is Any or tp is object or tp is type(None) or (_is_union(tp) and type(None) in typing.get_args(tp))


def _freeze(value):
    """Lists inside a bare ``tuple`` field become tuples too (configs are frozen, hashable)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def coerce(key: str, value, tp):
    """``value`` checked against and converted to annotation ``tp`` (the rules of the module docstring).

    ``key`` names the value in errors (a dotted field; elements as ``key[i]``).

    Raises:
      ConfigError: naming ``key``, the expected type (and length) and the value.
    """
    if tp is Any or tp is object:
        return _freeze(value) if isinstance(value, list) else value
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
        rest = [a for a in args if a is not type(None)]
        errors = []
        for arg in rest:
            try:
                return coerce(key, value, arg)
            except ConfigError as err:
                errors.append(err)
        if len(errors) == 1 and _fixed_length(rest[0]) is not None and isinstance(value, (list, tuple)):
            raise errors[0]  # the length of the one tuple type says more than the union
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
        if args == ((),):  # tuple[()]: the empty tuple
            args = ()
        if len(args) != len(value):
            raise ConfigError(
                f"{key}: expected {describe_type(tp)} ({len(args)} entries), got "
                f"{_shown(list(value))} ({len(value)} entries)"
            )
        return tuple(coerce(f"{key}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args)))
    if tp is list or origin is list:
        if not isinstance(value, (list, tuple)):
            raise _fail(key, tp, value)
        args = typing.get_args(tp)
        return [coerce(f"{key}[{i}]", v, args[0]) for i, v in enumerate(value)] if args else list(value)
    if tp is dict or origin is dict:
        if isinstance(value, Mapping):
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
    """The command-line text of field ``key`` as a value of annotation ``tp``.

    The text is read as JSON (``3``, ``1e-4``, ``true``, ``[16,8]``, ``"x"``); ``null``, ``None`` and
    ``~`` are null (:data:`NULL_WORDS`), refused with a hint by a field that is not ``Optional``.
    When the text is not JSON, or is JSON of the wrong type where a string fits, the text itself is
    the value, so ``--set model.name=resnet18`` needs no quotes; a field of any number of strings
    (``tuple[str, ...]``) given one word takes it as a one-element list (``--set arms=simclr`` is
    ``arms=["simclr"]``); another list field given a text that is not a JSON list is told to write lists
    as JSON.

    Raises:
      ConfigError: naming ``key``, the expected type (and length) and the value.
    """
    if text.strip() in NULL_WORDS:
        if _optional(tp):
            return None
        quote = f" (the text {text.strip()} is written '\"{text.strip()}\"')" if _takes_str(tp) else ""
        raise ConfigError(
            f"{key}: expected {describe_type(tp)}, got {text.strip()} (null); {key} is not optional, "
            f"so it cannot be null{quote}"
        )
    try:
        parsed, is_json = json.loads(text), True
    except json.JSONDecodeError:
        parsed, is_json = text, False
    if isinstance(parsed, str) and _word_list(tp) and not _takes_str(tp):
        return coerce(key, [parsed], tp)
    if not is_json:
        if _is_sequence_type(tp) and not _takes_str(tp):
            raise ConfigError(
                f"{key}: expected {describe_type(tp)}, got {text!r}, which is not JSON; write a list as JSON, "
                "e.g. [1,2] (no spaces, or quote the whole KEY=VALUE)"
            )
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


def _word_list(tp) -> bool:
    """Whether ``tp`` (or a member of its union) is a list of any length whose entries take a string."""
    if _is_union(tp):
        return any(_word_list(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) not in (tuple, list) or _fixed_length(tp) is not None:
        return False
    args = typing.get_args(tp)
    return bool(args) and _takes_str(args[0])


def _takes_str(tp) -> bool:
    if _is_union(tp):
        return any(_takes_str(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) is typing.Literal:
        return any(isinstance(a, str) for a in typing.get_args(tp))
    return tp is str or (isinstance(tp, type) and issubclass(tp, (str, Path)))


# --------------------------------------------------------------------------------------------
# Deriving configs
# --------------------------------------------------------------------------------------------


def _expand(config, overrides: Mapping[str, Any], prefix: str = "") -> dict:
    """Mapping values given for sections become dotted keys (``{"optim": {"lr": 1}}`` -> ``{"optim.lr": 1}``)."""
    sections = set(_sections(config))
    out: dict = {}
    for key, value in overrides.items():
        key = prefix + key
        if key in sections and isinstance(value, Mapping):
            out.update(_expand(config, value, key + "."))
        else:
            out[key] = value
    return out


def _replace(config, overrides: Mapping[str, Any]):
    direct: dict = {}
    nested: dict = {}
    for key, value in overrides.items():
        head, dot, rest = key.partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, sub in nested.items():
        direct[head] = _replace(direct.get(head, getattr(config, head)), sub)
    return dataclasses.replace(config, **direct) if direct else config


def with_overrides(config, overrides: Mapping[str, Any]):
    """A copy of ``config`` with ``overrides`` (``{dotted name: value}``) replaced, sections rebuilt.

    A key may name a leaf (``"optim.learning_rate"``) or a section, with a section instance or a
    mapping of its fields (applied like the keys of this function).  Every leaf value is checked
    and converted by :func:`coerce` against its field's annotation (lists become tuples).

    Raises:
      ConfigError: a key that names no field (with close matches), or a value that does not fit its field.
    """
    if not is_section(config):
        raise TypeError(f"with_overrides needs a config dataclass instance, got {config!r}")
    overrides = _expand(config, overrides)
    types_ = field_paths(config)
    known = set(types_) | set(_sections(config))
    checked: dict = {}
    for key, value in overrides.items():
        if key not in known:
            raise ConfigError(f"unknown config field {key!r}{unknown_key_hint(key, list(types_))}")
        checked[key] = coerce(key, value, types_[key]) if key in types_ else value
    return _replace(config, checked)


def from_dict(config_cls, fields: Mapping[str, Any]):
    """The config of a recorded one: ``fields`` nested like ``dataclasses.asdict`` (or dotted), missing fields at
    ``config_cls()``'s defaults, every value checked as :func:`with_overrides` checks it (lists become tuples).

    Raises:
      ConfigError: naming a field ``config_cls`` lacks, or a recorded value that does not fit its field.
    """
    return with_overrides(config_cls(), fields)


def config_differences(saved: Mapping, current: Mapping) -> list:
    """``[(dotted key, saved value, current value)]`` for the fields whose JSON values differ (missing = None).

    Both configs are nested dicts (``dataclasses.asdict``, ``config.json``); sections are compared
    field by field, so a difference is named ``optim.learning_rate``, not ``optim``.
    """
    norm = lambda d: flatten(json.loads(json.dumps(d, default=str)))  # noqa: E731  tuples -> lists, like the saved file
    a, b = norm(saved), norm(current)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
