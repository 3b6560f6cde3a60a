"""The ``--set KEY=VALUE`` parser of ``gensim-jax train`` and ``gensim-jax plan``.

KEY is a dotted field of the experiment's ``Config`` (``optim.learning_rate``,
``objectives.simclr.temperature``); VALUE is read by :func:`gensim_jax.config.parse_value` against
the field's annotation (JSON values; ``null``, ``None`` and ``~`` mean null; lists as JSON,
``[16,8]``; fixed-length tuples checked for their length).  Everything here runs before an
experiment builds anything, so a wrong command fails in seconds with one line naming the field.
"""

from __future__ import annotations

from gensim_jax.config import ConfigError, field_paths, parse_value, unknown_key_hint

__all__ = ["ConfigError", "parse_overrides"]


def parse_overrides(config_cls, items, *, experiment: str = "the experiment") -> dict:
    """``["key=value", ...]`` -> ``{dotted key: typed value}`` for the (nested) dataclass ``config_cls``.

    Raises:
      ConfigError: an item without ``=``, a key that is not a field (with close matches), a key
        given twice, or a value of the wrong type (``--set KEY: expected TYPE, got VALUE``).
    """
    types_ = field_paths(config_cls)
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
        try:
            out[key] = parse_value(key, text, types_[key])
        except ConfigError as err:
            raise ConfigError(f"--set {err}") from None
    return out
