"""``python -m train``: experiment discovery, typed config overrides, --objective/--model/--resume, and a run
killed with SIGKILL that resumes to exactly the uninterrupted run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import pytest

from gensim_jax import experiments as registry
from gensim_jax.commands.overrides import parse_overrides
from gensim_jax.commands.train import find_checkpoints, main
from gensim_jax.config import ConfigError, field_paths, with_overrides

REPO = Path(__file__).resolve().parents[2]


# -- discovery ------------------------------------------------------------------------------------


def test_discovery_lists_the_modules_that_declare_an_experiment(tmp_path):
    body = "from gensim_jax.training.experiment import Experiment\nEXPERIMENT = Experiment()\n"
    (tmp_path / "alpha.py").write_text('"""Experiment: the alpha one.\n\nMore text."""\n' + body)
    (tmp_path / "beta.py").write_text(body.replace("EXPERIMENT =", "OTHER ="))  # declares nothing
    (tmp_path / "_helper.py").write_text(body)  # private
    (tmp_path / "gamma.py").write_text(body + "def broken(:\n")  # does not parse (being edited)
    found = registry.available(tmp_path)
    assert list(found) == ["alpha"] and registry.summary(found["alpha"]) == "the alpha one."

    # the package itself: every module that assigns EXPERIMENT, and nothing else
    real = registry.available()
    expected = sorted(
        p.stem
        for p in (REPO / "gensim_jax" / "experiments").glob("*.py")
        if not p.name.startswith("_") and "\nEXPERIMENT = " in p.read_text()
    )
    assert sorted(real) == expected
    assert set(real) == {
        "folder",
        "gaussian_mixture",
        "geoclidean",
        "imagenet_hierarchy",
        "quadrilaterals",
        "spurious_digits",
    }


def test_an_experiment_file_outside_the_package_runs_by_path(tmp_path, capsys):
    path = tmp_path / "my_exp.py"
    path.write_text(
        '"""Experiment: a fork\'s own."""\nfrom gensim_jax.training.experiment import Experiment\n'
        "class Mine(Experiment):\n    CONFIGS = {'tiny': Experiment.Config(num_steps=1)}\n"
        "EXPERIMENT = Mine()\n"
    )
    experiment = registry.load(str(path))
    assert experiment.name == "my_exp" and experiment.summary == "a fork's own."
    assert experiment.default_config() == "tiny" and experiment.get_config().num_steps == 1
    with pytest.raises(ValueError, match="does not exist"):
        registry.load(str(tmp_path / "missing.py"))
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="does not define EXPERIMENT"):
        registry.load(str(tmp_path / "empty.py"))


@pytest.mark.slow
def test_help_lists_the_experiments_and_the_fields(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for name, path in registry.available().items():
        assert f"  {name}" in out and registry.summary(path) in out
        lines = out.splitlines()
        for config in registry.load(name).CONFIGS:  # every config, demo included, on a line of its own
            assert any(line.split()[:1] == [config] for line in lines), (name, config)
    assert "demo" in out
    with pytest.raises(SystemExit):
        main(["geoclidean", "--help"])
    out = capsys.readouterr().out
    assert "geoclidean config fields" in out
    assert "num_steps" in out and "Optional[int]" in out and "cpu_small" in out


@pytest.mark.slow
def test_gensim_jax_train_help_lists_the_experiments():
    out = subprocess.run(
        [sys.executable, "-m", "gensim_jax.commands", "train", "--help"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    shim = subprocess.run(
        [sys.executable, "-m", "train", "--help"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    assert out.startswith("usage: gensim-jax train") and shim.startswith("usage: python -m train")  # as typed
    assert " ".join(out.split()) == " ".join(shim.replace("python -m train", "gensim-jax train").split())
    assert "experiments (" in out
    for name in registry.available():
        assert name in out


# -- typed overrides ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Demo:
    steps: int = 3
    rate: float = 0.1
    name: str = "resnet18"
    flag: bool = False
    limit: Optional[int] = None
    path: Optional[str] = None
    sizes: tuple[int, ...] = (1, 2)
    pair: tuple[float, float] = (0.0, 1.0)
    anything: tuple = ("a",)
    mode: Literal["fast", "slow"] = "fast"
    table: dict = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize(
    "key, text, expected",
    [
        ("steps", "7", 7),
        ("rate", "1e-3", 0.001),
        ("rate", "2", 2.0),  # an int is a float
        ("name", "lenet5", "lenet5"),
        ("name", '"quoted"', "quoted"),
        ("name", "123", "123"),  # text where a string is expected
        ("flag", "true", True),
        ("limit", "null", None),
        ("limit", "5", 5),
        ("path", "null", None),
        ("path", "/data/x", "/data/x"),
        ("sizes", "[4, 5, 6]", (4, 5, 6)),
        ("pair", "[1, 2.5]", (1.0, 2.5)),
        ("anything", '[[1, 2], "b"]', ((1, 2), "b")),
        ("mode", "slow", "slow"),
        ("table", '{"a": 1}', {"a": 1}),
    ],
)
def test_override_values_are_parsed_to_the_annotated_type(key, text, expected):
    got = parse_overrides(Demo, [f"{key}={text}"])[key]
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, tuple):
        assert all(type(a) is type(b) for a, b in zip(got, expected))


@pytest.mark.parametrize(
    "item, words",
    [
        ("steps=2.5", ["steps", "expected int", "2.5", "float"]),
        ("steps=abc", ["steps", "expected int", '"abc"']),
        ("steps=true", ["steps", "expected int", "true", "bool"]),
        ("rate=fast", ["rate", "expected float", '"fast"']),
        ("flag=1", ["flag", "expected bool", "1"]),
        ("flag=yes", ["flag", "expected bool", '"yes"']),
        ("limit=1.5", ["limit", "expected Optional[int]", "1.5"]),
        ("sizes=3", ["sizes", "expected tuple[int, ...]", "3"]),
        ('sizes=[1, "x"]', ["sizes[1]", "expected int", '"x"']),
        ("pair=[1]", ["pair", "tuple[float, float]", "2 entries", "1 entries"]),
        ("mode=medium", ["mode", "'fast', 'slow'", '"medium"']),
        ("table=[1]", ["table", "expected dict", "[1]"]),
        ("stesp=3", ["unknown key 'stesp'", "did you mean steps", "KEY=VALUE"]),
        ("steps", ["KEY=VALUE", "'steps'"]),
    ],
)
def test_bad_overrides_name_the_key_the_type_and_the_value(item, words):
    with pytest.raises(ConfigError) as info:
        parse_overrides(Demo, [item])
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_a_key_given_twice_is_an_error():
    with pytest.raises(ConfigError, match="steps given twice"):
        parse_overrides(Demo, ["steps=1", "steps=2"])


@dataclasses.dataclass(frozen=True)
class Head:
    dims: tuple[int, ...] = (128, 64)
    temperature: float = 0.5


@dataclasses.dataclass(frozen=True)
class Arms:
    simclr: Head = Head()
    other: Head = Head(temperature=0.1)


@dataclasses.dataclass(frozen=True)
class Nested:
    steps: int = 3
    objectives: Arms = Arms()


def test_dotted_keys_are_typed_through_the_sections():
    assert list(field_paths(Nested)) == [
        "steps",
        "objectives.simclr.dims",
        "objectives.simclr.temperature",
        "objectives.other.dims",
        "objectives.other.temperature",
    ]
    got = parse_overrides(Nested, ["objectives.simclr.temperature=1", "objectives.other.dims=[4]"])
    assert got == {"objectives.simclr.temperature": 1.0, "objectives.other.dims": (4,)}
    assert type(got["objectives.simclr.temperature"]) is float
    config = with_overrides(Nested(), got)
    assert config == Nested(objectives=Arms(simclr=Head(temperature=1.0), other=Head(dims=(4,), temperature=0.1)))


@pytest.mark.parametrize(
    "item, words",
    [
        ("objectives.simclr.temperature=hot", ["--set objectives.simclr.temperature", "expected float", '"hot"']),
        ('objectives.other.dims=[1, "x"]', ["objectives.other.dims[1]", "expected int", '"x"']),
        ("objectives.simclr.temprature=1", ["unknown key", "did you mean objectives.simclr.temperature"]),
        ("objectives.simclr=1", ["unknown key 'objectives.simclr'"]),
        ("simclr.temperature=1", ["unknown key", "objectives.simclr.temperature"]),
    ],
)
def test_bad_dotted_overrides_name_the_dotted_key(item, words):
    with pytest.raises(ConfigError) as info:
        parse_overrides(Nested, [item])
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_with_overrides_replaces_nested_fields_and_names_unknown_ones():
    base = Nested()
    changed = with_overrides(base, {"objectives.other.temperature": 0.3, "steps": 5})
    assert changed.objectives.other == Head(temperature=0.3) and changed.objectives.simclr is base.objectives.simclr
    assert changed.steps == 5 and base.objectives.other.temperature == 0.1  # the base is untouched
    assert with_overrides(base, {"objectives": {"simclr": {"dims": [8]}}}).objectives.simclr.dims == (8,)
    with pytest.raises(ValueError, match=r"'objectives\.other\.dim'.*did you mean objectives\.other\.dims"):
        with_overrides(base, {"objectives.other.dim": 1})
    with pytest.raises(ValueError, match=r"'objectives\.simclr\.x'"):
        with_overrides(base, {"objectives": {"simclr": {"x": 1}}})


@pytest.mark.parametrize(
    "name", ["quadrilaterals", "geoclidean", "imagenet_hierarchy", "spurious_digits", "gaussian_mixture"]
)
def test_config_json_round_trips_through_config_from_dict(name):
    """What a run writes (``dataclasses.asdict`` of the validated config, through JSON) reads back as the same
    nested config (validation resolves ``data.augment="auto"``, so a run records which augmentation ran)."""
    experiment = registry.load(name)
    for config_name, config in experiment.CONFIGS.items():
        config = experiment.validate(config)
        recorded = json.loads(json.dumps(dataclasses.asdict(config)))
        assert isinstance(recorded["optim"], dict)  # nested, not flat
        assert experiment.config_from_dict(recorded) == config, config_name
    with pytest.raises(ValueError, match=r"optim\.lr"):
        experiment.config_from_dict({"optim": {"lr": 1.0}})


def test_find_checkpoints_counts_finished_steps_only(tmp_path):
    (tmp_path / "a" / "run0" / "checkpoints" / "4").mkdir(parents=True)
    (tmp_path / "a" / "run0" / "checkpoints" / "12").mkdir()
    (tmp_path / "a" / "run0" / "checkpoints" / "14.orbax-checkpoint-tmp").mkdir()
    (tmp_path / "b" / "run0" / "checkpoints" / "6.orbax-checkpoint-tmp").mkdir(parents=True)
    assert find_checkpoints(tmp_path) == [(tmp_path / "a" / "run0" / "checkpoints", [4, 12])]
    assert find_checkpoints(tmp_path / "b") == [] and find_checkpoints(tmp_path / "none") == []


# -- the CLI: every error before anything is built -------------------------------------------------


@pytest.fixture
def no_training(monkeypatch):
    """The runner records its arguments instead of training."""
    from gensim_jax.training import runner

    calls = []

    def fake(experiment, config, workdir, *args, **kwargs):
        calls.append((config, Path(workdir)))
        monkeypatch.setattr(experiment, "format_table", lambda results: "table")
        return {"train_seconds": 0.0}

    monkeypatch.setattr(runner, "train_and_evaluate", fake)
    return calls


@pytest.mark.parametrize(
    "argv, words",
    [
        (["geoclidean", "--config", "huge"], ["unknown config 'huge'", "cpu_small", "paper"]),
        (["geoclidean", "--set", "data.image_size=64.5"], ["--set data.image_size", "expected int", "64.5"]),
        (["geoclidean", "--set", "optim.learning_rate=fast"], ["optim.learning_rate", "expected float", '"fast"']),
        (
            ["geoclidean", "--set", "model.stage_sizes=2"],
            ["model.stage_sizes", "Optional[tuple[int, ...]]", "2", "write a list as JSON"],
        ),
        (["geoclidean", "--set", "data.imag_size=64"], ["unknown key 'data.imag_size'", "data.image_size"]),
        (["geoclidean", "--set", "image_size=64"], ["unknown key 'image_size'", "did you mean data.image_size"]),
        (
            ["geoclidean", "--set", "objectives.simclr.temprature=0.2"],
            ["unknown key 'objectives.simclr.temprature'", "objectives.simclr.temperature"],
        ),
        (
            ["geoclidean", "--set", "objectives.simclr.temperature=hot"],
            ["--set objectives.simclr.temperature", "expected float", '"hot"'],
        ),
        (["geoclidean", "--set", "optim=adam"], ["unknown key 'optim'"]),  # a section is not a value
        (["geoclidean", "--objective", "gensim,nonsense"], ["unknown objective", "'nonsense'", "simclr"]),
        (["geoclidean", "--objective", "gensim", "--set", 'arms=["simclr"]'], ["both --objective and --set"]),
        (["geoclidean", "--model", "lenet5", "--set", "model.name=resnet18"], ["both --model and --set"]),
        (["geoclidean", "--model", "resnet9000"], ["unknown model 'resnet9000'", "lenet5"]),
        (["gaussian_mixture", "--model", "lenet5"], ["--model does not apply", "`model.name`"]),
        (["gaussian_mixture", "--objective", "gensim"], ["--objective does not apply", "`arms`"]),
        (["geoclidean", "--config", "cpu_small", "--set", "data.image_size=16"], ["data.image_size must be >= 32"]),
        (
            ["geoclidean", "--set", "objectives.simclr.learning_rate=-1"],
            ["objectives.simclr.learning_rate must be positive"],
        ),
        (["nonexistent_experiment"], ["unknown experiment 'nonexistent_experiment'", "geoclidean"]),
        (["geoclidean", "--set", "batch_size=7", "mesh_data=2"], ["mesh_data"]),
        (["geoclidean", "--set", "optim.optimizer=adagrad"], ["optim.optimizer must be one of", "lars"]),
        (["geoclidean", "--benchmark-dir", "/tmp"], ["unrecognized arguments: --benchmark-dir"]),
        (["geoclidean", "--coordinator", "127.0.0.1:1234"], ["go together"]),
        (["geoclidean", "--profile-steps", "5:2"], ["--profile-steps", "START:END"]),
        (["geoclidean", "--peak-tflops", "-1"], ["--peak-tflops must be positive"]),
    ],
)
def test_config_errors_stop_before_training(argv, words, no_training, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        main([*argv, "--workdir", str(tmp_path / "run")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, (w, err)
    assert no_training == [] and not (tmp_path / "run").exists()


def test_flags_reach_the_config(no_training, tmp_path):
    assert (
        main(
            [
                "geoclidean",
                "--config",
                "cpu_small",
                "--workdir",
                str(tmp_path / "a"),
                "--objective",
                "gensim",
                "--objective",
                "simclr,class_triplet",
                "--model",
                "lenet5",
                "--set",
                "data.image_size=32",
                "optim.learning_rate=1",
                "model.stage_sizes=null",
                "--set",
                "objectives.simclr.projection_dims=[16, 8]",
                "objectives.simclr.temperature=0.2",
                "objectives.class_triplet.learning_rate=3e-4",
            ]
        )
        == 0
    )
    ((config, workdir),) = no_training
    assert workdir == tmp_path / "a"
    assert config.arms == ("gensim", "simclr", "class_triplet") and config.model.name == "lenet5"
    lr = config.optim.learning_rate
    assert config.data.image_size == 32 and lr == 1.0 and type(lr) is float
    assert config.model.stage_sizes is None and config.objectives.simclr.projection_dims == (16, 8)
    assert config.objectives.simclr.temperature == 0.2 and config.objectives.class_triplet.learning_rate == 3e-4
    # untouched fields keep the cpu_small values, in the sections set and in the others
    from gensim_jax.experiments import geoclidean

    small = geoclidean.CONFIGS["cpu_small"]
    assert config.batch_size == small.batch_size and config.eval == small.eval
    assert config.objectives.simclr.variant == small.objectives.simclr.variant
    assert config.optim.optimizer == small.optim.optimizer
    # the per-arm rate: its own where set, optim.learning_rate elsewhere
    from gensim_jax.training.experiment import learning_rate

    assert [learning_rate(config, a) for a in config.arms] == [1.0, 1.0, 3e-4]


def test_print_config_prints_the_resolved_nested_config_and_trains_nothing(no_training, capsys, tmp_path):
    argv = ["quadrilaterals", "--config", "cpu_small", "--workdir", str(tmp_path / "run"), "--print-config"]
    sets = ["--set", "objectives.simclr.temperature=0.2", "optim.learning_rate=3e-4", "--objective", "gensim,simclr"]
    assert main([*argv, *sets]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["experiment"], out["config"]) == ("quadrilaterals", "cpu_small")
    assert out["objectives"]["simclr"]["temperature"] == 0.2 and out["optim"]["learning_rate"] == 3e-4
    assert (
        out["arms"] == ["gensim", "simclr"] and out["data"]["image_size"] == 64 and out["model"]["name"] == "cornet_z"
    )
    assert out["objectives"]["supervised"]["learning_rate"] is None  # cpu_small's: every arm at optim.learning_rate
    assert no_training == [] and not (tmp_path / "run").exists()


def test_help_for_a_config_shows_its_values_by_dotted_name(capsys):
    with pytest.raises(SystemExit) as info:
        main(["quadrilaterals", "--config", "cpu_small", "--help"])
    assert info.value.code == 0
    lines = {line.split()[0].lstrip("*"): line for line in capsys.readouterr().out.splitlines() if "  " in line.strip()}
    assert lines["data.image_size"].startswith(" *") and lines["data.image_size"].endswith("int = 64")
    assert lines["objectives.supervised.learning_rate"].startswith(" *")  # paper: 5e-6, cpu_small: None
    assert lines["objectives.supervised.learning_rate"].endswith("= None")
    assert lines["optim.learning_rate"].endswith("float = 0.001")
    assert lines["optim.optimizer"].startswith("  ") and lines["optim.optimizer"].endswith("= 'adam'")  # as the base


def test_existing_checkpoints_need_resume(no_training, capsys, tmp_path):
    workdir = tmp_path / "run"
    (workdir / "gensim" / "run0" / "checkpoints" / "8").mkdir(parents=True)
    saved = {"num_steps": 8, "model": {"name": "lenet5", "stage_sizes": [1, 1, 1, 1]}, "optim": {"learning_rate": 3e-4}}
    (workdir / "config.json").write_text(json.dumps({"seed": 0, "config": saved}))
    argv = [
        "geoclidean",
        "--config",
        "cpu_small",
        "--workdir",
        str(workdir),
        "--set",
        "num_steps=12",
        "optim.learning_rate=1e-3",
        "--model",
        "lenet5",
    ]
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "already holds checkpoints" in err and "--resume" in err and "step 8" in err
    assert no_training == []
    assert main([*argv, "--resume"]) == 0
    assert len(no_training) == 1 and no_training[0][0].num_steps == 12
    err = capsys.readouterr().err
    assert "resuming" in err and "num_steps: 8 -> 12" in err  # a changed config is pointed out
    assert "optim.learning_rate: 0.0003 -> 0.001" in err  # by the dotted name of the field that changed
    assert "model.name" not in err and "model.stage_sizes" not in err  # equal fields of a section are not
    # a workdir without checkpoints needs no flag
    assert main(["geoclidean", "--config", "cpu_small", "--workdir", str(tmp_path / "fresh")]) == 0


@pytest.mark.parametrize(
    "item, words",
    [
        ("data.imag_size=64", ["(did you mean data.image_size"]),
        ("optim=adam", ["optim is a section; set its fields: optim."]),
        ("zzzz=1", ["no field is close; the top-level names: seed", "data.*", "optim.*"]),
    ],
)
def test_an_unknown_key_names_a_few_close_keys_not_every_field(item, words, no_training, capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["geoclidean", "--config", "cpu_small", "--set", item, "--workdir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    for w in words:
        assert w in err, (w, err)
    fields = list(field_paths(registry.load("geoclidean").Config))
    named = [f for f in fields if "." in f and f in err]  # fields inside sections
    assert len(fields) > 40 and len(named) <= 3, named  # issue 32: every field on one 1 kB line
    assert len(err) < 400, len(err)


def test_resume_of_a_workdir_without_checkpoints_starts_fresh_saying_so_in_one_line(no_training, capsys, tmp_path):
    # make demo passes --resume on a fresh clone (to continue an interrupted demo), so it starts a new run
    argv = ["geoclidean", "--config", "cpu_small", "--resume", "--workdir"]
    assert main([*argv, str(tmp_path / "new")]) == 0
    (tmp_path / "empty").mkdir()
    assert main([*argv, str(tmp_path / "empty")]) == 0
    assert [w.name for _, w in no_training] == ["new", "empty"]
    assert capsys.readouterr().err.splitlines() == [
        f"--resume: nothing to resume in {tmp_path / 'new'} (no such directory); starting a new run there",
        f"--resume: nothing to resume in {tmp_path / 'empty'} (no checkpoint in it); starting a new run there",
    ]


# -- the default config on a machine without an accelerator ---------------------------------------------


def test_the_paper_default_on_a_cpu_is_refused_in_one_line_naming_size_and_small_configs(no_training, capsys, tmp_path):
    import jax

    from gensim_jax.commands import main as cli

    assert jax.default_backend() == "cpu"
    with pytest.raises(SystemExit) as info:  # as typed: gensim-jax train quadrilaterals
        cli.main(["train", "quadrilaterals", "--workdir", str(tmp_path / "run")])
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    quads = registry.load("quadrilaterals")
    paper = quads.CONFIGS["paper"]
    steps = quads.num_steps(paper, None)
    size = f"{paper.num_runs} runs x {len(paper.arms)} arms x {steps:,} steps of {paper.batch_size} examples"
    for words in ("gensim-jax train: error:", "--config paper", size, "--config cpu_small", "--config demo", "cpu"):
        assert words in lines[0], (words, lines[0])
    assert no_training == [] and not (tmp_path / "run").exists()
    # named, it runs; a small config runs without a word
    assert main(["quadrilaterals", "--config", "paper", "--workdir", str(tmp_path / "p")]) == 0
    assert main(["quadrilaterals", "--config", "cpu_small", "--workdir", str(tmp_path / "s")]) == 0
    small = quads.CONFIGS["cpu_small"]
    assert [(c.num_runs, w.name) for c, w in no_training] == [(paper.num_runs, "p"), (small.num_runs, "s")]


def test_the_paper_default_runs_on_an_accelerator_and_when_it_is_the_only_config(no_training, monkeypatch, tmp_path):
    import jax

    from gensim_jax.commands import train as train_cli

    assert main(["gaussian_mixture", "--workdir", str(tmp_path / "g")]) == 0  # paper is its only config
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert main(["quadrilaterals", "--workdir", str(tmp_path / "q")]) == 0
    assert [w.name for _, w in no_training] == ["g", "q"]
    quads = registry.load("quadrilaterals")
    paper = quads.CONFIGS["paper"]
    train_cli.check_default_on_cpu(quads, "paper", True, paper, "cpu")  # named: no error
    train_cli.check_default_on_cpu(quads, "paper", False, paper, "tpu")
    with pytest.raises(ConfigError, match="--config cpu_small or --config demo"):
        train_cli.check_default_on_cpu(quads, "paper", False, paper, "cpu")


# -- SIGKILL and --resume, through the experiment CLI ------------------------------------------------

STEPS, EVERY, KILL_AT = 8, 2, 4
RUN = [
    "geoclidean",
    "--config",
    "cpu_small",
    "--model",
    "lenet5",
    "--objective",
    "gensim",
    "--set",
    "model.stage_sizes=null",
    "data.image_size=32",
    "data.num_train_images=16",
    "batch_size=8",
    f"num_steps={STEPS}",
    f"checkpoint_every={EVERY}",
    "objectives.simclr.projection_dims=[16,8]",
    "eval.batch_size=35",
    "log_every=1",
]


def _losses(run_dir: Path) -> list:
    return [
        (r["step"], r["loss"])
        for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
        if "loss" in r
    ]


def _final_state(run_dir: Path) -> dict:
    import orbax.checkpoint as ocp

    with ocp.StandardCheckpointer() as ck:
        return ck.restore(run_dir / "checkpoints" / str(STEPS) / "state")


@pytest.mark.slow
def test_sigkilled_run_resumes_to_the_uninterrupted_run(tmp_path, capsys):
    # the two subprocesses inherit this process's JAX and XLA settings (tests/conftest.py's flags
    # included), so that all three runs compute the same numbers
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    ref_dir, run_dir = tmp_path / "reference", tmp_path / "killed"
    killed = subprocess.Popen(
        [sys.executable, "-m", "tests.experiments._sigkill", str(KILL_AT), *RUN, "--workdir", str(run_dir)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # meanwhile, the uninterrupted run, through the same CLI in this process
        assert main([*RUN, "--workdir", str(ref_dir)]) == 0
        _, err = killed.communicate(timeout=300)
        assert killed.returncode == -signal.SIGKILL, err[-3000:]
    finally:
        if killed.poll() is None:
            killed.kill()
    run0 = run_dir / "gensim" / "run0"
    finished = find_checkpoints(run_dir)
    assert len(finished) == 1 and finished[0][0] == run0 / "checkpoints"
    restore_point = finished[0][1][-1]
    assert EVERY <= restore_point <= KILL_AT and not (run_dir / "results.json").exists()
    kept_lines = [
        line for line in (run0 / "metrics.jsonl").read_text().splitlines() if json.loads(line)["step"] <= restore_point
    ]

    # without --resume the CLI refuses the directory; with it the run continues from its last checkpoint
    with pytest.raises(SystemExit) as refused:
        main([*RUN, "--workdir", str(run_dir)])
    assert refused.value.code == 2 and "--resume" in capsys.readouterr().err
    resumed = subprocess.run(
        [sys.executable, "-m", "train", *RUN, "--workdir", str(run_dir), "--resume"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from step {restore_point} of {STEPS}" in resumed.stderr

    # the losses after the restore point, and every loss, are the uninterrupted run's, each step once
    reference = _losses(ref_dir / "gensim" / "run0")
    assert [s for s, _ in reference] == list(range(1, STEPS + 1))
    assert _losses(run0) == reference
    # the lines up to the restore point are the killed run's own (kept, not recomputed)
    assert (run0 / "metrics.jsonl").read_text().splitlines()[: len(kept_lines)] == kept_lines
    got, want = _final_state(run0), _final_state(ref_dir / "gensim" / "run0")
    assert int(got["step"]) == int(want["step"]) == STEPS
    flat_got, flat_want = _flatten(got), _flatten(want)
    assert flat_got.keys() == flat_want.keys()
    for key in flat_want:
        np.testing.assert_array_equal(flat_got[key], flat_want[key], err_msg=key)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["training"]["gensim"][0]["losses"] == [loss for _, loss in reference]


def _flatten(tree, prefix="") -> dict:
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(_flatten(v, f"{prefix}/{k}"))
        return out
    if isinstance(tree, (list, tuple)):
        out = {}
        for i, v in enumerate(tree):
            out.update(_flatten(v, f"{prefix}/{i}"))
        return out
    return {prefix: np.asarray(tree)}


@pytest.mark.slow
def test_a_cli_run_leaves_events_a_profile_and_compares(tmp_path, capsys):
    """gensim-jax train with --profile-steps on a one-file experiment, then gensim-jax runs compare on its runs."""
    from gensim_jax.commands.main import main as gensim_jax

    tiny = str(REPO / "tests" / "training" / "tiny_experiment.py")
    assert (
        main(
            [
                tiny,
                "--config",
                "tiny",
                "--workdir",
                str(tmp_path / "w"),
                "--set",
                "num_steps=6",
                "--profile-steps",
                "2:4",
                "--peak-tflops",
                "0.001",
            ]
        )
        == 0
    )
    run0 = tmp_path / "w" / "gensim" / "run0"
    assert len(list((run0 / "plugins" / "profile").glob("*/*.xplane.pb"))) == 1
    events = list(run0.glob("events.out.tfevents.*"))  # the loop's and the final evaluation's, this process's
    assert events and len({p.name.rsplit(".", 1)[-1] for p in events}) == 1
    lines = [json.loads(x) for x in (run0 / "metrics.jsonl").read_text().splitlines()]
    assert all("perf/mfu" in r for r in lines if "loss" in r and "perf/step_time_s" in r)
    capsys.readouterr()
    assert gensim_jax(["runs", "compare", str(run0), str(tmp_path / "w" / "simclr" / "run0")]) == 0
    out = capsys.readouterr().out
    assert "gensim/run0" in out.replace("\\", "/") and "simclr/run0" in out.replace("\\", "/")


def test_none_null_and_tilde_give_the_same_printed_config(no_training, capsys, tmp_path):
    """--set model.pretrained=None, =null and =~ resolve to the same config; --print-config shows null."""
    from gensim_jax.commands.main import main as gensim_jax

    printed = []
    for text in ("None", "null", "~"):
        argv = ["train", "quadrilaterals", "--config", "cpu_small", "--workdir", str(tmp_path / "run")]
        assert (
            gensim_jax([*argv, "--set", f"model.pretrained={text}", "model.cornet_times=" + text, "--print-config"])
            == 0
        )
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] == printed[2]
    out = json.loads(printed[0])
    assert out["model"]["pretrained"] is None and out["model"]["cornet_times"] is None
    assert '"pretrained": null' in printed[0]
    assert no_training == []


def test_one_arm_is_given_as_one_word(no_training, capsys, tmp_path):
    """--set arms=simclr (no JSON list) trains the one arm, as arms='["simclr"]' does."""
    from gensim_jax.commands.main import main as gensim_jax

    printed = []
    for text in ("simclr", '["simclr"]'):
        argv = ["train", "quadrilaterals", "--config", "cpu_small", "--workdir", str(tmp_path / "run")]
        assert gensim_jax([*argv, "--set", f"arms={text}", "--print-config"]) == 0
        printed.append(json.loads(capsys.readouterr().out))
    assert printed[0] == printed[1] and printed[0]["arms"] == ["simclr"]


def test_a_wrong_tuple_length_stops_in_one_line_before_any_data(no_training, capsys, tmp_path):
    from gensim_jax.commands.main import main as gensim_jax

    argv = ["train", "quadrilaterals", "--config", "cpu_small", "--workdir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as info:  # argparse's exit, its message shortened to one line
        gensim_jax([*argv, "--set", "data.rotation_range_deg=[-10,10,5]"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(
        "gensim-jax train: error: --set data.rotation_range_deg: expected tuple[float, float] (2 entries)"
    )
    assert "(3 entries)" in err
    assert no_training == [] and not (tmp_path / "run").exists()  # the runner (data, model) was never reached


def test_train_help_names_every_config_with_what_it_is_and_how_long_it_takes(capsys):
    """Each shipped config has one line in ``gensim-jax train --help``: what it is, and its time on 2 CPU
    cores or that it is meant for accelerators."""
    from gensim_jax import experiments as registry
    from gensim_jax.commands import main as cli

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = capsys.readouterr().out
    for name in registry.available():
        experiment = registry.load(name)
        assert set(experiment.NOTES) == set(experiment.CONFIGS), name
        for config, note in experiment.NOTES.items():
            assert re.search(r"(\d+(-\d+)? (s|min|h) on 2 .*CPU cores|for accelerators|for a GPU)$", note), (name, note)
            assert any(line.split()[:1] == [config] and note in line for line in text.splitlines()), (name, config)


def test_the_closing_summary_is_the_headline_table_and_the_whole_table_goes_to_a_file(tmp_path, capsys):
    from gensim_jax.commands.train import SUMMARY_LINES, print_summary

    first = ["| model | r human |", "|---|---|", "| gensim | 0.80 |", "| supervised | 0.03 |"]
    rest = ["", "Argmax read-out:", "| gensim | 0.39 |", *[f"| group {i} | 0.{i} |" for i in range(60)]]
    table = "\n".join(first + rest)
    print_summary(table, {"train_seconds": 12.0}, tmp_path)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[: len(first)] == first and len(out) <= SUMMARY_LINES + 4
    assert (tmp_path / "results.md").read_text() == table + "\n"
    assert f"the whole table ({len(first) + len(rest)} lines): {tmp_path / 'results.md'}" in out[len(first)]
    assert out[-1].startswith("trained in 12.0 s; wrote ") and str(tmp_path / "results.md") in out[-1]
    print_summary("\n".join(first), {}, tmp_path / "short")  # a short table is printed whole, no file
    assert capsys.readouterr().out.strip().splitlines()[: len(first)] == first
    assert not (tmp_path / "short" / "results.md").exists()


@pytest.mark.slow
def test_quiet_prints_only_the_summary(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gensim_jax.commands",
            "train",
            "gaussian_mixture",
            "--quiet",
            "--workdir",
            str(tmp_path),
        ]
        + ["--set", "num_steps=30", "log_every=10"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "train:" not in done.stderr and "[gaussian_mixture]" not in done.stdout, (done.stdout, done.stderr)
    assert "| test accuracy" in done.stdout and "trained in" in done.stdout
    records = [json.loads(x) for x in (tmp_path / "gensim" / "run0" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "loss" in r] == [1, 10, 20, 30]
