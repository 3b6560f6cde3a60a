"""gensim_jax.config: the one config system (typed values, null, tuple lengths, from_dict, flatten)."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Optional

import pytest

from gensim_jax import experiments as registry
from gensim_jax.config import (
    ConfigError,
    coerce,
    config_differences,
    field_paths,
    flatten,
    from_dict,
    parse_value,
    with_overrides,
)

EXPERIMENTS = list(registry.available())


def _is_optional(tp) -> bool:
    return typing.get_origin(tp) is typing.Union and type(None) in typing.get_args(tp)


def _fields(kind):
    """``[(experiment, dotted key, annotation)]`` of every field of the five experiments whose annotation passes ``kind``."""
    return [
        (name, key, tp)
        for name in EXPERIMENTS
        for key, tp in field_paths(registry.load(name).Config).items()
        if kind(tp)
    ]


OPTIONAL_FIELDS = _fields(_is_optional)


def _fixed_tuple(tp):
    """``tuple[float, float]`` -> 2 (also inside Optional); None for every other annotation."""
    if _is_optional(tp):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        return len(args)
    return None


FIXED_TUPLES = _fields(lambda tp: _fixed_tuple(tp) is not None)


def test_the_experiments_have_optional_and_fixed_length_fields_to_test():
    keys = {k for _, k, _ in OPTIONAL_FIELDS}
    assert {"model.pretrained", "model.stage_sizes", "model.cornet_times", "data.data_dir"} <= keys
    fixed = {(n, k): _fixed_tuple(tp) for n, k, tp in FIXED_TUPLES}
    assert fixed[("quadrilaterals", "data.rotation_range_deg")] == 2
    assert fixed[("quadrilaterals", "data.scale_range")] == 2
    assert fixed[("quadrilaterals", "objectives.simclr.crop_scale")] == 2
    assert fixed[("quadrilaterals", "model.cornet_times")] == 3


def test_no_experiment_field_is_a_bare_tuple():
    """Every tuple field says its element type and whether its length is fixed (tuple[float, float], tuple[int, ...])."""
    bare = [
        (n, k)
        for n, k, tp in _fields(lambda tp: True)
        if tp is tuple or (_is_optional(tp) and tuple in typing.get_args(tp))
    ]
    assert bare == []


@pytest.mark.parametrize("name, key, tp", OPTIONAL_FIELDS, ids=[f"{n}:{k}" for n, k, _ in OPTIONAL_FIELDS])
def test_null_none_and_tilde_are_the_same_null_for_every_optional_field(name, key, tp):
    experiment = registry.load(name)
    base = experiment.Config()
    want = with_overrides(base, {key: None})  # Python's None, the reference
    for text in ("null", "None", "~", " None "):
        value = parse_value(key, text, tp)
        assert value is None, (text, value)
        assert with_overrides(base, {key: value}) == want
    assert flatten(want)[key] is None


def test_a_str_field_that_is_not_optional_refuses_null_with_a_hint():
    for text in ("None", "null", "~"):
        with pytest.raises(ConfigError) as info:
            parse_value("model.name", text, str)
        msg = str(info.value)
        assert msg.startswith("model.name: expected str") and "not optional" in msg and "\n" not in msg
        assert f"'\"{text}\"'" in msg  # how to write the text itself
    assert parse_value("model.name", '"None"', str) == "None"  # quoted as JSON: the text
    with pytest.raises(ConfigError, match="data.image_size: expected int.*not optional"):
        parse_value("data.image_size", "None", int)


def test_optional_tuples_take_null_and_lists():
    tp = Optional[tuple[int, ...]]
    assert parse_value("model.stage_sizes", "null", tp) is None
    assert parse_value("model.stage_sizes", "None", tp) is None
    assert parse_value("model.stage_sizes", "[1,1]", tp) == (1, 1)
    with pytest.raises(
        ConfigError, match=r"model.cornet_times: expected tuple\[int, int, int\] \(3 entries\), got \[2, 4\]"
    ):
        parse_value("model.cornet_times", "[2,4]", Optional[tuple[int, int, int]])


@pytest.mark.parametrize("name, key, tp", FIXED_TUPLES, ids=[f"{n}:{k}" for n, k, _ in FIXED_TUPLES])
def test_fixed_length_tuples_are_checked_when_parsed(name, key, tp):
    n = _fixed_tuple(tp)
    default = flatten(registry.load(name).Config())[key]
    good = list(default) if default is not None else [1] * n
    assert parse_value(key, json.dumps(good), tp) == tuple(good)
    for wrong in (good + good[:1], good[:-1]):
        with pytest.raises(ConfigError) as info:
            parse_value(key, json.dumps(wrong), tp)
        msg = str(info.value)
        assert msg.startswith(f"{key}: expected") and f"({n} entries)" in msg and f"({len(wrong)} entries)" in msg


def test_variable_length_tuples_check_each_element():
    tp = tuple[int, ...]
    assert parse_value("data.branching", "[2,3,3,4]", tp) == (2, 3, 3, 4)
    assert parse_value("data.branching", "[]", tp) == ()
    with pytest.raises(ConfigError, match=r"data.branching\[1\]: expected int, got 2.5"):
        parse_value("data.branching", "[2,2.5]", tp)
    floats = parse_value("lambdas", "[0,1,10]", tuple[float, ...])
    assert floats == (0.0, 1.0, 10.0) and all(type(v) is float for v in floats)


def test_one_word_for_a_list_of_words_is_a_one_element_tuple():
    words = tuple[str, ...]
    assert parse_value("arms", "simclr", words) == ("simclr",)
    assert parse_value("arms", '"simclr"', words) == ("simclr",)  # the word quoted as JSON
    assert parse_value("arms", '["gensim","simclr"]', words) == ("gensim", "simclr")
    assert parse_value("arms", "simclr", Optional[words]) == ("simclr",)
    # not for a list of numbers, nor for a fixed length (two words would be needed)
    with pytest.raises(ConfigError, match="write a list as JSON"):
        parse_value("data.branching", "two", tuple[int, ...])
    with pytest.raises(ConfigError, match=r"expected tuple\[str, str\]"):
        parse_value("pair", "one", tuple[str, str])


@pytest.mark.parametrize("text", ["0.5,1.0", "(0.5, 1.0)", "0.5 1.0", "[0.5,", "0.5"])
def test_a_list_field_given_no_json_list_is_told_to_write_lists_as_json(text):
    with pytest.raises(ConfigError) as info:
        parse_value("data.scale_range", text, tuple[float, float])
    msg = str(info.value)
    assert msg.startswith("data.scale_range: expected tuple[float, float]") and "write a list as JSON" in msg
    assert "[1,2]" in msg and "\n" not in msg


def test_with_overrides_and_from_dict_apply_the_same_checks():
    config_cls = registry.load("quadrilaterals").Config
    with pytest.raises(ConfigError, match=r"data.rotation_range_deg: expected tuple\[float, float\] \(2 entries\)"):
        with_overrides(config_cls(), {"data.rotation_range_deg": (-10, 10, 5)})
    with pytest.raises(ConfigError, match=r"data.rotation_range_deg: expected tuple\[float, float\] \(2 entries\)"):
        from_dict(config_cls, {"data": {"rotation_range_deg": [-10, 10, 5]}})
    with pytest.raises(ConfigError, match="model.name: expected str.*not optional"):
        from_dict(config_cls, {"model": {"name": None}})
    with pytest.raises(ConfigError, match="unknown config field 'data.rotation'.*did you mean data.rotation_range_deg"):
        from_dict(config_cls, {"data": {"rotation": [1, 2]}})
    got = from_dict(config_cls, {"data": {"rotation_range_deg": [-10, 10]}, "model": {"pretrained": None}})
    assert got.data.rotation_range_deg == (-10.0, 10.0) and all(type(v) is float for v in got.data.rotation_range_deg)
    assert got.model.pretrained is None


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_config_reads_back_from_its_json_unchanged(name):
    experiment = registry.load(name)
    for config_name in experiment.CONFIGS:
        config = experiment.get_config(config_name)
        recorded = json.loads(json.dumps(dataclasses.asdict(config)))  # what config.json holds
        assert from_dict(experiment.Config, recorded) == config, config_name
        assert config_differences(recorded, dataclasses.asdict(config)) == []


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_flatten_gives_the_same_leaves_for_a_config_and_its_json(name):
    config = registry.load(name).Config()
    from_instance = flatten(config)
    from_json = flatten(json.loads(json.dumps(dataclasses.asdict(config))))
    assert list(from_instance) == list(from_json) == list(field_paths(type(config)))
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in from_instance.items()} == from_json


def test_flatten_of_nested_mappings_keeps_empty_mappings_and_lists():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": {}, "f": None}) == {
        "a.b": 1,
        "a.c.d": [1, 2],
        "e": {},
        "f": None,
    }
    assert flatten(None) == {} and flatten([1, 2]) == {}


@pytest.mark.parametrize(
    "value, tp, expected",
    [
        (3, float, 3.0),
        ([1, [2, 3]], tuple, (1, (2, 3))),
        ([1, 2], list[int], [1, 2]),
        ("a", typing.Literal["a", "b"], "a"),
        (None, Optional[int], None),
        (True, bool, True),
    ],
)
def test_coerce_converts_to_the_annotation(value, tp, expected):
    got = coerce("k", value, tp)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "value, tp, words",
    [
        (1, bool, ["k: expected bool", "1 (int)"]),
        (True, int, ["k: expected int", "true (bool)"]),
        ("c", typing.Literal["a", "b"], ["expected one of 'a', 'b'", '"c"']),
        (None, tuple[int, ...], ["expected tuple[int, ...]", "not optional"]),
        (2, tuple[int, ...], ["expected tuple[int, ...]", "write a list as JSON"]),
    ],
)
def test_coerce_refuses_with_one_line_naming_key_type_and_value(value, tp, words):
    with pytest.raises(ConfigError) as info:
        coerce("k", value, tp)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
