"""The text of the files ``gensim-jax new-experiment`` writes (:mod:`gensim_jax.commands.new_experiment`).

``HEAD`` + one generative model per kernel + ``TAIL`` make one experiment file; ``__NAME__``,
``__TITLE__``, ``__CLASS__`` and ``__IMPORTS__`` are filled in by the command. Each model is written
out whole, though the kernels' models share lines, because the file it goes into stands alone: a
fork reads and edits it without this package's help.
"""

HEAD = '''"""Experiment: __NAME__, GenSim on a generative model of your own (__TITLE__).

Written by `gensim-jax new-experiment __NAME__ --kernel __KERNEL__`; train it with
`gensim-jax train __NAME__.py --config cpu_small` (docs/EXPERIMENTS.md). Four parts:

1. the generative model: its fixed parts (`world`), stimuli with the generative metadata of each
   (`sample`) and the closed-form log similarity of two stimuli (`log_s`); replace them with yours;
2. the configs: `paper` (the full run) and `cpu_small` (about half a minute on 2 CPU cores);
3. the arms: `gensim` regresses the cosine of two embeddings onto log s, computed in the step from
   the metadata (paper Eq. 2); `supervised`, a non-GenSim baseline, learns the generating class;
4. the evaluation, the held-out Spearman correlation of the cosine with log s (with the stimuli
   themselves and the untrained encoder as references), and its figure.

It imports gensim-jax only through `gensim_jax.fork`, the surface that stays stable.
"""

import dataclasses

import numpy as np
from scipy import stats

from gensim_jax.fork import (
__IMPORTS__
)

ARMS = ("gensim", "supervised")
WORLD_SEED = 1234  # the model's fixed parts (renderer, prototypes) are the same for every run
SPLITS = ("train", "heldout", "reference")  # reference: the sample that fixes the target's scale


# ---- 1. the generative model (replace it with yours) -----------------------------------------


def rng_of(config, split):
    """The generator of one split of the data: the same for every run of a call (`config.seed`)."""
    return np.random.default_rng([config.seed, SPLITS.index(split)])


def render(latent, config, rng):
    """`(N, stimulus_dim)` float32 stimuli: a fixed random nonlinear map of the latents plus noise
    (it stands in for your renderer of images, sounds or texts)."""
    d = config.data
    w = np.random.default_rng(WORLD_SEED).normal(size=(latent.shape[1], d.stimulus_dim)) / np.sqrt(latent.shape[1])
    return (np.tanh(latent @ w) + d.noise * rng.normal(size=(len(latent), d.stimulus_dim))).astype(np.float32)

'''

TAIL = '''

# ---- 2. configs ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Model:  # the encoder: a two-layer perceptron over stimulus vectors
    hidden: int = 128
    embed_dim: int = 16


@dataclasses.dataclass(frozen=True)
class Objectives:  # one section per arm (--set objectives.supervised.learning_rate=3e-3)
    gensim: ArmConfig = ArmConfig()
    supervised: ArmConfig = ArmConfig()


@dataclasses.dataclass(frozen=True)
class Config(TrainConfig):
    arms: tuple[str, ...] = ARMS
    num_steps: int = 2000
    batch_size: int = 64
    optim: OptimConfig = OptimConfig(learning_rate=1e-3)
    log_every: int = 100
    data: Data = Data()
    model: Model = Model()
    objectives: Objectives = Objectives()


CONFIGS = {
    "paper": Config(num_runs=5),
    "cpu_small": with_overrides(Config(), {"num_steps": 300, "log_every": 50, "optim.learning_rate": 3e-3}),
}


# ---- 3. the arms -----------------------------------------------------------------------------


class __CLASS__(Experiment):
    Config = Config
    CONFIGS = CONFIGS
    OBJECTIVES = ARMS
    NOTES = {
        "paper": "5 runs x 2,000 steps of each arm: about 4 minutes on 2 CPU cores",
        "cpu_small": "1 run x 300 steps of each arm: about half a minute on 2 CPU cores",
    }

    def validate(self, config):  # range checks naming the field, before anything is built
        config = super().validate(config)
        if not 2 <= config.batch_size <= num_train(config):
            raise ValueError(f"batch_size must lie in [2, {num_train(config)}] (the training stimuli)")
        if config.data.noise < 0:
            raise ValueError(f"data.noise must be >= 0, got {config.data.noise}")
        return config

    def prepare(self, config, training=True):  # the stimuli every run shares
        w = world(config)
        train = sample(config, w, "train") if training else None
        return {"world": w, "train": train, "heldout": sample(config, w, "heldout")}

    def arm(self, name, config, data):  # everything the runner needs for one arm
        d, m = config.data, config.model
        kw = {"in_features": d.stimulus_dim, "hidden": m.hidden, "embed_dim": m.embed_dim}
        if name == "gensim":
            # log s is unbounded and its range depends on the model, the cosine lies in [-1, 1]: the target's
            # with_transform("affine", reference) maps log s over a reference sample onto [-1, 1], so the
            # regression can reach its target (make_target)
            objective, keys = GenSimRegression(target=make_target(config, world(config)), input_key="x"), ("x", KEY)
        else:  # the baseline: a classifier head on the embedding, trained on the generating class
            kw["num_classes"] = num_classes(config)
            objective, keys = CrossEntropy(input_key="x", label_key="label"), ("x", "label")

        def batches(seed, shard):  # position -> this process's rows of every global batch
            def stream(position):
                train, step = data["train"], position
                while True:  # global batch `step` is one seeded draw; this process keeps its rows
                    rows = np.random.default_rng((seed, step)).permutation(len(train["x"]))[: config.batch_size]
                    yield {k: train[k][rows[shard.rows]] for k in dict.fromkeys(keys)}
                    step += 1

            return stream

        return Arm(
            model=get_model("mlp", **kw),
            model_name="mlp",  # the registry name and arguments rebuild the model from its export
            model_kwargs=kw,
            objective=objective,
            example_input=np.zeros((1, d.stimulus_dim), np.float32),
            metadata=metadata(config) if name == "gensim" else {},  # what the target reads besides ids
            batches=batches,
            evaluate=lambda model, variables, seed: heldout_spearman(config, data, embed(model, variables, data)),
        )

    # ---- 4. evaluation and figure ----------------------------------------------------------------

    def baselines(self, config, data):  # references: the stimuli themselves and the untrained encoder
        untrained = self.arm("gensim", config, data)
        z = embed(untrained.model, untrained.init_variables(config.seed), data)
        stimuli = heldout_spearman(config, data, data["heldout"]["x"])
        return {"stimuli": [stimuli], "untrained": [heldout_spearman(config, data, z)]}

    def plot(self, results, path):  # held-out Spearman of each encoder: mean bar and one dot per run
        names = list(results["evaluations"])
        rho = [[e["heldout_spearman"] for e in results["evaluations"][n]] for n in names]
        fig, (ax,) = figure(4.5, 3.0)
        ax.bar(names, [np.mean(r) for r in rho], color="#4C72B0")
        for i, r in enumerate(rho):
            ax.plot([i] * len(r), r, "k.")
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.set_ylabel("held-out Spearman(cosine, log s)")
        save_figure(fig, path)

    def format_table(self, results):
        rho = {n: [e["heldout_spearman"] for e in ev] for n, ev in results["evaluations"].items()}
        rows = [f"| {n} | {np.mean(r):.3f} | {len(r)} |" for n, r in rho.items()]
        return "\\n".join(["| encoder | held-out Spearman(cosine, log s) | runs |", "|---|---|---|", *rows])


def embed(model, variables, data):
    """`(N, embed_dim)` embeddings of the held-out stimuli."""
    return np.asarray(model.apply(variables, data["heldout"]["x"])["embedding"])


def heldout_spearman(config, data, z):
    """Spearman correlation, over held-out pairs, of the cosine of `z` with log s (the evaluation)."""
    z = z / (np.linalg.norm(z, axis=1, keepdims=True) + 1e-12)
    meta, upper = data["heldout"][KEY], np.triu_indices(len(z), 1)
    rho = stats.spearmanr((z @ z.T)[upper], log_s(config, data["world"], meta, meta)[upper])[0]
    return {"heldout_spearman": float(rho)}


EXPERIMENT = __CLASS__()
'''

BETA_BERNOULLI = """
# Beta-Bernoulli features (paper Eq. I3).
# A source draws a probability theta ~ Beta(alpha, beta) for each binary feature; each of its stimuli
# has features f ~ Bernoulli(theta), rendered. Two stimuli are similar when their features likely came
# from one source (Eq. I3); the supervised baseline learns which training source made a stimulus.

KEY = "features"  # the batch entry the gensim target reads: each stimulus's binary features


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model and the sizes of the training and held-out sets
    num_features: int = 12
    alpha: float = 0.5  # the Beta prior of each feature's probability
    beta: float = 0.5
    num_sources: int = 64  # training sources (the supervised arm's classes)
    per_source: int = 8  # stimuli per source
    heldout_sources: int = 24  # fresh sources of the held-out evaluation
    stimulus_dim: int = 32
    noise: float = 0.2  # rendering noise


def world(config):  # nothing is fixed but the renderer
    return {}


def num_classes(config):
    return config.data.num_sources


def num_train(config):
    return config.data.num_sources * config.data.per_source


def sample(config, world, split):
    d, rng = config.data, rng_of(config, split)
    n = d.num_sources if split == "train" else d.heldout_sources
    theta = rng.beta(d.alpha, d.beta, size=(n, 1, d.num_features))
    f = (rng.random((n, d.per_source, d.num_features)) < theta).astype(np.float32).reshape(-1, d.num_features)
    label = np.repeat(np.arange(n, dtype=np.int32), d.per_source)  # the source of each stimulus
    return {"x": render(2.0 * f - 1.0, config, rng), KEY: f, "label": label}


def log_s(config, world, a, b):  # (Na, Nb) log generative similarity of two sets of feature rows
    return np.asarray(beta_bernoulli.pairwise_log_similarity(a, b, config.data.alpha, config.data.beta))


def make_target(config, world):  # Eq. I3 in the step, scaled by its range over a reference sample
    ref = sample(config, world, "reference")[KEY]
    target = BetaBernoulliTarget(key=KEY, alpha=config.data.alpha, beta=config.data.beta)
    return target.with_transform("affine", log_s(config, world, ref, ref))


def metadata(config):  # the per-example shape of what the target reads
    return {KEY: ((config.data.num_features,), np.float32)}
"""

HIERARCHY = """
# A class hierarchy (paper Eq. 4).
# The classes are the leaves of a tree (`branching` children per node at each depth); a node's
# prototype is its parent's plus a random step; a stimulus is its class's prototype plus a random
# offset, rendered. Two stimuli are the more similar the deeper their classes' common ancestor (Eq. 4).

KEY = "label"  # the batch entry the gensim target reads: the class id, a row of the Eq. 4 table


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model and the sizes of the training and held-out sets
    branching: tuple[int, ...] = (3, 3, 2)  # children per node at each depth: 18 leaf classes
    step: float = 1.0  # how far a child's prototype lies from its parent's
    spread: float = 0.5  # how far a stimulus lies from its class's prototype
    per_class: int = 32  # training stimuli per class
    heldout_per_class: int = 8
    latent_dim: int = 8
    stimulus_dim: int = 32
    noise: float = 0.2  # rendering noise


def world(config):  # the class tree, its Eq. 4 table over the leaves and each leaf's prototype
    d, rng = config.data, np.random.default_rng(WORLD_SEED)
    parents, protos, level = [-1], [np.zeros(d.latent_dim)], [0]
    for width in d.branching:
        children = []
        for node in level:
            for _ in range(width):
                parents.append(node)
                protos.append(protos[node] + d.step * rng.normal(size=d.latent_dim))
                children.append(len(parents) - 1)
        level = children
    tree = hierarchy.Tree.from_parents(parents)
    return {"table": hierarchy.log_similarity_table(tree, level), "prototypes": np.stack(protos)[level]}


def num_classes(config):
    return int(np.prod(config.data.branching))


def num_train(config):
    return num_classes(config) * config.data.per_class


def sample(config, world, split):
    d, rng = config.data, rng_of(config, split)
    per = d.per_class if split == "train" else d.heldout_per_class
    label = np.repeat(np.arange(num_classes(config), dtype=np.int32), per)
    latent = world["prototypes"][label] + d.spread * rng.normal(size=(len(label), d.latent_dim))
    return {"x": render(latent, config, rng), KEY: label}


def log_s(config, world, a, b):  # (Na, Nb) log generative similarity of two sets of class ids
    return world["table"][np.ix_(a, b)]


def make_target(config, world):  # the table gathered in the step, scaled by its own range
    return TableTarget.create(world["table"], key=KEY, method="affine")


def metadata(config):  # the class ids the table target reads are known to the runner
    return {}
"""

CATEGORICAL = """
# Classes (the class-identity kernel, paper App. A).
# Each stimulus belongs to one of `num_classes` equally likely classes; a class has a random
# prototype, a stimulus is its class's prototype plus a random offset, rendered. Two stimuli are
# similar when they share their class: log s = -log p(class) for one class, -inf for two (floored here).

KEY = "label"  # the batch entry the gensim target reads: the class id, a row of the table
LOG_FLOOR = -10.0  # log s of two classes (exactly -inf): any finite value below it keeps the target finite


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model and the sizes of the training and held-out sets
    num_classes: int = 12
    spread: float = 0.7  # how far a stimulus lies from its class's prototype
    per_class: int = 32  # training stimuli per class
    heldout_per_class: int = 8
    latent_dim: int = 8
    stimulus_dim: int = 32
    noise: float = 0.2  # rendering noise


def world(config):  # the class table and each class's prototype
    d = config.data
    table = categorical.log_similarity_table(categorical.uniform_class_probs(d.num_classes), log_floor=LOG_FLOOR)
    prototypes = np.random.default_rng(WORLD_SEED).normal(size=(d.num_classes, d.latent_dim))
    return {"table": np.asarray(table), "prototypes": prototypes}


def num_classes(config):
    return config.data.num_classes


def num_train(config):
    return config.data.num_classes * config.data.per_class


def sample(config, world, split):
    d, rng = config.data, rng_of(config, split)
    per = d.per_class if split == "train" else d.heldout_per_class
    label = np.repeat(np.arange(d.num_classes, dtype=np.int32), per)
    latent = world["prototypes"][label] + d.spread * rng.normal(size=(len(label), d.latent_dim))
    return {"x": render(latent, config, rng), KEY: label}


def log_s(config, world, a, b):  # (Na, Nb) log generative similarity of two sets of class ids
    return world["table"][np.ix_(a, b)]


def make_target(config, world):  # the table gathered in the step, scaled by its own range
    return TableTarget.create(world["table"], key=KEY, method="affine")


def metadata(config):  # the class ids the table target reads are known to the runner
    return {}
"""

TREE = '''
# Programs as parse trees (the tree kernel, paper App. M).
# Each class is a program of a small grammar (a shape, or a relation between two programs), drawn
# once; a stimulus renders its program's productions (the sum of one fixed vector per production)
# plus a random offset. Two stimuli are the more similar the more fragments their programs' parse
# trees share (the subset-tree kernel, normalised; App. M).

KEY = "label"  # the batch entry the gensim target reads: the program id, a row of the kernel table
SHAPES = ("circle", "square", "line", "triangle")
RELATIONS = ("above", "inside", "beside")
# log K of two programs that share no fragment (K = 0, log K = -inf): below every other pair of this grammar,
# and near enough that the affine transform of the target keeps the other pairs apart
LOG_FLOOR = -5.0


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model and the sizes of the training and held-out sets
    num_programs: int = 16  # the classes
    depth: int = 2  # the deepest nesting of relations
    decay: float = 0.5  # the tree kernel's decay factor (lambda)
    spread: float = 0.5  # how far a stimulus lies from its program's rendering
    per_program: int = 32  # training stimuli per program
    heldout_per_program: int = 8
    latent_dim: int = 8
    stimulus_dim: int = 32
    noise: float = 0.2  # rendering noise


def draw_program(rng, depth):
    """`(bracketed parse tree, its productions)` of one program."""
    if depth == 0 or rng.random() < 0.3:
        shape = str(rng.choice(SHAPES))
        return f"(SHAPE {shape})", [f"SHAPE -> {shape}"]
    relation = str(rng.choice(RELATIONS))
    (a, pa), (b, pb) = draw_program(rng, depth - 1), draw_program(rng, depth - 1)
    return f"({relation} {a} {b})", [f"{relation} -> {a.split()[0][1:]} {b.split()[0][1:]}", *pa, *pb]


def world(config):  # the programs, their tree-kernel table and each program's rendering
    d, rng = config.data, np.random.default_rng(WORLD_SEED)
    programs = {}
    for _ in range(100 * d.num_programs):
        text, productions = draw_program(rng, d.depth)
        programs.setdefault(text, productions)
        if len(programs) == d.num_programs:
            break
    if len(programs) < d.num_programs:
        raise ValueError(f"data.num_programs: the grammar has {len(programs)} programs of depth <= {d.depth}")
    vocab = sorted({p for ps in programs.values() for p in ps})
    vectors = dict(zip(vocab, rng.normal(size=(len(vocab), d.latent_dim))))
    parsed = [trees.Tree.from_bracket(t) for t in programs]
    table = trees.gram_log_table(parsed, "sst", lam=d.decay, log_floor=LOG_FLOOR)
    prototypes = np.stack([sum(vectors[p] for p in ps) for ps in programs.values()])
    return {"programs": list(programs), "table": table, "prototypes": prototypes}


def num_classes(config):
    return config.data.num_programs


def num_train(config):
    return config.data.num_programs * config.data.per_program


def sample(config, world, split):
    d, rng = config.data, rng_of(config, split)
    per = d.per_program if split == "train" else d.heldout_per_program
    label = np.repeat(np.arange(d.num_programs, dtype=np.int32), per)
    latent = world["prototypes"][label] + d.spread * rng.normal(size=(len(label), d.latent_dim))
    return {"x": render(latent, config, rng), KEY: label}


def log_s(config, world, a, b):  # (Na, Nb) log generative similarity of two sets of program ids
    return world["table"][np.ix_(a, b)]


def make_target(config, world):  # the table gathered in the step, scaled by its own range
    return TableTarget.create(world["table"], key=KEY, method="affine")


def metadata(config):  # the program ids the table target reads are known to the runner
    return {}
'''

GAUSSIAN_MIXTURE = """
# A mixture of Gaussians (paper Eq. H2).
# Each stimulus is a point drawn from one of `num_components` unit Gaussians whose means lie on a
# circle, rendered. Two stimuli are similar when they likely came from one component (Eq. H2); the
# supervised baseline learns the component.

KEY = "point"  # the batch entry the gensim target reads: each stimulus's point


@dataclasses.dataclass(frozen=True)
class Data:  # the generative model and the sizes of the training and held-out sets
    num_components: int = 4
    radius: float = 3.0  # the means' distance from the origin
    num_train: int = 1024
    num_heldout: int = 192
    stimulus_dim: int = 32
    noise: float = 0.1  # rendering noise


def world(config):  # the mixture
    d = config.data
    angle = 2.0 * np.pi * np.arange(d.num_components) / d.num_components
    means = d.radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    weights = np.full(d.num_components, 1.0 / d.num_components)
    return {"mixture": gaussian_mixture.make_mixture(weights, means, 1.0, normalize=True)}


def num_classes(config):
    return config.data.num_components


def num_train(config):
    return config.data.num_train


def sample(config, world, split):
    d, rng = config.data, rng_of(config, split)
    n = d.num_train if split == "train" else d.num_heldout
    label = rng.integers(d.num_components, size=n).astype(np.int32)
    point = (np.asarray(world["mixture"].means)[label] + rng.normal(size=(n, 2))).astype(np.float32)
    return {"x": render(point / d.radius, config, rng), KEY: point, "label": label}


def log_s(config, world, a, b):  # (Na, Nb) log generative similarity of two sets of points
    return np.asarray(gaussian_mixture.pairwise_log_similarity(a, b, world["mixture"]))


def make_target(config, world):  # Eq. H2 in the step, scaled by its range over a reference sample
    ref = sample(config, world, "reference")[KEY]
    target = GaussianMixtureTarget(mixture=world["mixture"], key=KEY)
    return target.with_transform("affine", log_s(config, world, ref, ref))


def metadata(config):  # the per-example shape of what the target reads
    return {KEY: ((2,), np.float32)}
"""
