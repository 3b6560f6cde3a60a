"""A user's folder and metadata table: each kernel form against an independent computation, the split, bad tables,
the stream (per-process rows, PNG/JPEG of any size, grey or RGB)."""

from __future__ import annotations

import csv
import itertools
import math
import os

import numpy as np
import pytest
from scipy.special import betaln, logsumexp
from scipy.stats import norm

from gensim_jax.data import folder as fd
from gensim_jax.data.indexing import StreamIndex
from gensim_jax.parallel import HostShard

PIL = pytest.importorskip("PIL.Image")


def write_folder(root, header, rows, *, size=(8, 8), images=True):
    """``root/metadata.csv`` with ``header`` and ``rows`` (the first cell of each row a file name), and a PNG per row
    whose pixels encode its row number."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "metadata.csv"), "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    if images:
        for i, row in enumerate(rows):
            path = os.path.join(root, row[0])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            PIL.fromarray(np.full((*size, 3), (i * 7 % 256, i % 256, 50), np.uint8)).save(path)
    return str(root)


def features_folder(root, n=40, f=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, size=(n, f))
    rows = [[f"img/{i}.png", *map(str, r)] for i, r in enumerate(x)]
    return write_folder(root, ["file", *[f"f{j}" for j in range(f)]], rows), x


def test_binary_features_give_beta_bernoulli_eq_i3_pair_by_pair(tmp_path):
    d, x = features_folder(tmp_path, n=30, f=4)
    table = fd.load_table(d, "metadata.csv", alpha=0.7, beta=1.3)
    assert table.kernel == "beta_bernoulli" and "auto: 4 binary feature column(s) f0, f1, f2, f3" in table.status
    a, b = 0.7, 1.3

    def eq_i3(u, v):  # p(u, v | one theta) / (p(u) p(v)), feature by feature, theta ~ Beta(a, b)
        return sum(
            betaln(a + ui + vi, b + 2 - ui - vi)
            + betaln(a, b)
            - betaln(a + ui, b + 1 - ui)
            - betaln(a + vi, b + 1 - vi)
            for ui, vi in zip(u, v)
        )

    rows = np.arange(12)
    want = [[eq_i3(x[i], x[j]) for j in rows] for i in rows]
    np.testing.assert_allclose(table.log_similarity(rows), want, rtol=1e-5, atol=1e-5)


def _eq4_paths(paths, p, q):
    """Eq. 4 over the tree of the '/'-paths: s = (1/K) sum_k prod_{j<=k} (children of the j-th shared node's parent)."""
    children = {}
    for path in paths:
        parts = path.split("/")
        for d in range(len(parts)):
            children.setdefault(tuple(parts[:d]), set()).add(parts[d])
    a, b = p.split("/"), q.split("/")
    k = next((i for i, (u, v) in enumerate(zip(a, b)) if u != v), min(len(a), len(b)))
    if k == 0:
        return 0.0
    terms = np.cumprod([len(children[tuple(a[:j])]) for j in range(k)])
    return math.log(terms.sum() / k)


def test_class_paths_give_eq4_over_their_ragged_tree_and_levels(tmp_path):
    paths = [
        "animal/dog/terrier",
        "animal/dog/poodle",
        "animal/cat",
        "plant/tree/oak/young",
        "plant/flower",
        "animal/dog",
    ]
    rows = [[f"{i}.png", paths[i % len(paths)]] for i in range(24)]
    table = fd.load_table(write_folder(tmp_path, ["file", "class_path"], rows), "metadata.csv")
    assert table.kernel == "hierarchy"
    got = table.log_similarity(np.arange(12))
    want = [[_eq4_paths(paths, rows[i][1], rows[j][1]) for j in range(12)] for i in range(12)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert table.level_names == ("level 1", "level 2", "level 3", "level 4")
    names = {v: k for k, v in enumerate(table.class_names)}
    assert table.metadata["label"].tolist() == [names[r[1]] for r in rows]  # supervised: the whole path
    top = [r[1].split("/")[0] for r in rows]  # level 1 groups the rows by their first segment
    assert all(
        (table.levels[i, 0] == table.levels[j, 0]) == (top[i] == top[j])
        for i, j in itertools.combinations(range(24), 2)
    )


def test_label_program_and_component_tables(tmp_path):
    labels = ["cat", "dog", "dog", "emu"] * 5
    t = fd.load_table(
        write_folder(tmp_path / "l", ["file", "label"], [[f"{i}.png", v] for i, v in enumerate(labels)]), "metadata.csv"
    )
    pi = {"cat": 0.25, "dog": 0.5, "emu": 0.25}
    want = [[-math.log(pi[u]) if u == v else fd.CATEGORICAL_FLOOR for v in labels[:8]] for u in labels[:8]]
    assert t.kernel == "categorical" and np.allclose(t.log_similarity(np.arange(8)), want)

    from gensim_jax.kernels.trees import Tree, log_tree_kernel

    programs = ["(S (A a) (B b))", "(S (A a) (B c))", "l1 = line(p1(), p2())", "c1 = circle(p1(), p2())"]
    t = fd.load_table(
        write_folder(tmp_path / "p", ["file", "program"], [[f"{i}.png", programs[i % 4]] for i in range(12)]),
        "metadata.csv",
    )
    assert t.kernel == "tree"
    a, b = Tree.from_bracket(programs[0]), Tree.from_bracket(programs[1])
    want = log_tree_kernel(a, b) - 0.5 * (log_tree_kernel(a, a) + log_tree_kernel(b, b))
    assert t.log_similarity([0], [1])[0, 0] == pytest.approx(want, rel=1e-5)
    assert (
        t.log_similarity([2], [3])[0, 0] > t.log_similarity([0], [2])[0, 0]
    )  # two Geoclidean programs share fragments

    rng = np.random.default_rng(1)
    comp = np.repeat([0, 1, 2], 8)
    x = rng.normal(size=(24, 2)) + 4.0 * comp[:, None]
    rows = [[f"{i}.png", f"{x[i, 0]:.6f}", f"{x[i, 1]:.6f}", f"k{comp[i]}"] for i in range(24)]
    t = fd.load_table(write_folder(tmp_path / "g", ["file", "u", "v", "component"], rows), "metadata.csv")
    assert t.kernel == "gaussian_mixture"
    xs = np.array([[float(r[1]), float(r[2])] for r in rows])
    means = np.stack([xs[comp == k].mean(0) for k in range(3)])
    sd = np.sqrt(np.stack([xs[comp == k].var(0) for k in range(3)]))

    def log_n(p, k):
        return norm.logpdf(p, means[k], sd[k]).sum()

    def h2(p, q):  # Eq. H2 with weights 1/3
        w = math.log(1 / 3)
        joint = logsumexp([w + log_n(p, k) + log_n(q, k) for k in range(3)])
        return joint - logsumexp([w + log_n(p, k) for k in range(3)]) - logsumexp([w + log_n(q, k) for k in range(3)])

    idx = [0, 5, 9, 20]
    np.testing.assert_allclose(
        t.log_similarity(idx), [[h2(xs[i], xs[j]) for j in idx] for i in idx], rtol=1e-3, atol=1e-3
    )


def test_parquet_tables_read_as_csv(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    d, x = features_folder(tmp_path, n=20, f=2)
    cols = {"file": [f"img/{i}.png" for i in range(20)], "f0": x[:, 0].tolist(), "f1": x[:, 1].tolist()}
    pq.write_table(pa.table(cols), os.path.join(d, "metadata.parquet"))
    a, b = fd.load_table(d, "metadata.csv"), fd.load_table(d, "metadata.parquet")
    assert b.kernel == "beta_bernoulli" and np.array_equal(
        a.log_similarity(np.arange(20)), b.log_similarity(np.arange(20))
    )


def test_the_split_is_a_hash_of_file_and_stable_when_rows_are_added(tmp_path):
    files = [f"photos/{i:04d}.jpg" for i in range(3000)]
    held = fd.heldout_fraction_of(files) < 0.2
    assert abs(held.mean() - 0.2) < 0.03  # about the fraction asked for
    more = files[:1000] + [f"new/{i}.png" for i in range(500)] + files[1000:]
    held_more = fd.heldout_fraction_of(more) < 0.2
    assert np.array_equal(held_more[:1000], held[:1000]) and np.array_equal(held_more[1500:], held[1000:])
    # and through load_table: appending rows to the table keeps every earlier row on its side
    d, x = features_folder(tmp_path / "a", n=60)
    before = fd.load_table(d, "metadata.csv").heldout
    with open(os.path.join(d, "metadata.csv"), "a", newline="") as f:
        csv.writer(f).writerows([[f"img/{i}.png", *map(str, x[i % 60])] for i in range(60, 90)])
    for i in range(60, 90):
        PIL.fromarray(np.zeros((4, 4, 3), np.uint8)).save(os.path.join(d, f"img/{i}.png"))
    assert np.array_equal(fd.load_table(d, "metadata.csv").heldout[:60], before)


def _bad(root, case):
    """A folder whose table has one fault; returns (directory, [strings the message must hold])."""
    good = [[f"{i}.png", str(i % 2), str(i // 2 % 2)] for i in range(12)]
    header = ["file", "f0", "f1"]
    if case == "missing file":
        d = write_folder(root, header, good)
        os.remove(os.path.join(d, "5.png"))
        return d, ["row 6", "'file'", "5.png does not exist"]
    if case == "unreadable file":
        d = write_folder(root, header, good)
        open(os.path.join(d, "3.png"), "w").write("not an image")
        return d, ["row 4", "'file'", "3.png is not a PNG, JPEG"]
    if case == "not 0/1":
        rows = [r[:] for r in good]
        rows[7][2] = "2"
        return write_folder(root, header, rows), ["row 8", "'f1'", "'2' is not 0 or 1"]
    if case == "empty table":
        return write_folder(root, header, []), ["metadata.csv is empty"]
    if case == "empty segment":
        rows = [[f"{i}.png", "a/b" if i != 4 else "a//c"] for i in range(6)]
        return write_folder(root, ["file", "class_path"], rows), ["row 5", "'class_path'", "empty segment"]
    if case == "mixed kernels":
        rows = [[*r, "x/y" if int(r[1]) else "x/z"] for r in good]
        return write_folder(root, [*header, "class_path"], rows), [
            "several kernels",
            "class_path",
            "f0, f1",
            "data.kernel",
        ]
    if case == "one target":
        rows = [[f"{i}.png", "1", "0"] for i in range(6)]
        return write_folder(root, header, rows), ["same features", "f0, f1", "fewer than two distinct targets"]
    if case == "one label":
        rows = [[f"{i}.png", "cat"] for i in range(6)]
        return write_folder(root, ["file", "label"], rows), ["column 'label'", "fewer than two distinct targets"]
    raise ValueError(case)


BAD = (
    "missing file",
    "unreadable file",
    "not 0/1",
    "empty table",
    "empty segment",
    "mixed kernels",
    "one target",
    "one label",
)


@pytest.mark.parametrize("case", BAD)
def test_each_bad_table_is_one_error_naming_row_and_column(tmp_path, case):
    d, parts = _bad(tmp_path, case)
    with pytest.raises(fd.TableError) as info:
        fd.load_table(d, "metadata.csv")
    msg = str(info.value)
    assert "\n" not in msg and all(p in msg for p in parts), msg


def test_the_stream_is_the_same_global_batch_for_any_process_count_and_decodes_any_image(tmp_path):
    d, _ = features_folder(tmp_path, n=20)
    # other sizes, a JPEG, a grey PNG and an RGBA PNG
    PIL.fromarray(np.full((30, 17, 3), 200, np.uint8)).save(os.path.join(d, "img/3.png"))
    jpeg = os.path.join(d, "img/4.png")
    PIL.fromarray(np.full((9, 40, 3), 90, np.uint8)).save(jpeg, format="JPEG")
    PIL.fromarray(np.full((12, 12), 60, np.uint8)).save(os.path.join(d, "img/5.png"))
    PIL.fromarray(np.full((6, 6, 4), 120, np.uint8)).save(os.path.join(d, "img/6.png"))
    table = fd.load_table(d, "metadata.csv", holdout=0.2)
    rows = table.rows(False)
    kw = {"seed": 3, "image_size": 16, "keys": ("target_id",)}

    def take(shard, n=2):
        return list(itertools.islice(fd.folder_stream(table, rows, shard=shard, **kw)(5), n))

    whole = take(HostShard(0, 1, 8))
    parts = [take(HostShard(i, 2, 8)) for i in range(2)]
    for s in range(2):
        for key in ("image", "target_id", "mask"):
            np.testing.assert_array_equal(np.concatenate([p[s][key] for p in parts]), whole[s][key])
    assert whole[0]["image"].shape == (8, 16, 16, 3) and whole[0]["image"].dtype == np.uint8
    index = StreamIndex(len(rows), 8, seed=3)  # step 5's rows, in order, each image its file's
    want = rows[index.indices(index.positions(5))]
    np.testing.assert_array_equal(whole[0]["target_id"], table.metadata["target_id"][want])
    np.testing.assert_array_equal(whole[0]["image"], fd.load_images(table, want, 16))
    grey = fd.load_images(table, np.arange(8), 16, color="grayscale")
    assert (grey[..., 0] == grey[..., 1]).all() and (grey[..., 1] == grey[..., 2]).all()
    rgb = fd.load_images(table, np.arange(8), 16)
    assert np.abs(rgb[4].astype(int) - 90).max() <= 3 and (rgb[6] == 120).all() and (rgb[5] == 60).all()
    device = next(iter(fd.folder_stream(table, rows, shard=HostShard(0, 1, 8), views="device", **kw)(5)))
    assert device["augment_seed"].shape == (8, 2) and device["augment_seed"][:, 1].tolist() == list(range(40, 48))
