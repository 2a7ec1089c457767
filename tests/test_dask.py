"""graphclust.dask on a dask.distributed LocalCluster started here: predict, the kNN graph and
fit-on-a-sample equal their in-memory references exactly; bad input fails clearly, naming the
chunk or the parameter, before any block is computed where it can be known."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask", reason="graphclust.dask needs the dask extra: pip install .[dask]")
pytest.importorskip("distributed", reason="graphclust.dask tests need dask.distributed")

import dask.array as da  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import graphclust as gc  # noqa: E402
from graphclust import dask as gcd  # noqa: E402
from graphclust.dask import _cell_knn as gcc  # noqa: E402

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def client():
    """Two single-threaded workers in this process (no process start-up on CI)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def blobs(n_per=60, seed=0, d=2):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 0.4, (n_per, d)), rng.normal(4, 0.4, (n_per, d))])


@pytest.fixture(scope="module")
def X():
    return blobs()


FITS = {
    "spectral": lambda X: gc.SpectralClustering(2, n_neighbors=6, random_state=0).fit(X),
    "ahk": lambda X: gc.AHKClustering(2, n_neighbors=6, random_state=0).fit(X),
    "consistency": lambda X: gc.ConsistencyClustering(2, alpha=0.99, sigma=1.0, n_neighbors=6,
                                                      random_state=0).fit(X),
    "stability": lambda X: gc.StabilityClustering(n_neighbors=6, random_state=0).fit(X),
}


class _Models(dict):
    """Each model fitted on first use (a broken estimator fails only its own tests)."""

    def __init__(self, X):
        super().__init__()
        self.X = X

    def __missing__(self, name):
        self[name] = FITS[name](self.X)
        return self[name]


@pytest.fixture(scope="module")
def models(X):
    return _Models(X)


def new_points(seed=1, n=137):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 0.6, (n // 2, 2)), rng.normal(4, 0.6, (n - n // 2, 2)),
                      [[50.0, 50.0]]])  # one point far from every training point


# ---------------------------------------------------------------------------------- predict
@pytest.mark.parametrize("name", ["spectral", "ahk", "consistency", "stability"])
def test_predict_equals_in_memory_predict(client, models, name):
    Y = new_points()
    labels = gcd.predict(models[name], da.from_array(Y, chunks=((40, 40, 50, 8), (1, 1))))
    assert labels.dtype == np.int64 and labels.chunks[0] == (40, 40, 50, 8)
    np.testing.assert_array_equal(labels.compute(), models[name].predict(Y))


def test_two_models_on_one_array_keep_their_own_labels(client):
    # the output keys were a fixed name: a second model's predict on the same array reused the
    # first one's keys, and the scheduler could hand back the first model's labels
    import dask

    points = np.load(DATA / "v1_points.npy") + 0.01
    X = da.from_array(points, chunks=(25, 2))
    a, b = (gcd.load_model(DATA / n) for n in ("v1_consistency.npz", "v1_spectral.npz"))
    ref_a, ref_b = a.predict(points), b.predict(points)
    assert (ref_a != ref_b).any()  # the models label the points differently
    la, lb = gcd.predict(a, X), gcd.predict(b, X)
    assert la.name != lb.name
    got_a, got_b = dask.compute(la, lb)
    np.testing.assert_array_equal(got_a, ref_a)
    np.testing.assert_array_equal(got_b, ref_b)
    sa, sb = gcd.predict(a, X, return_confidence=True), gcd.predict(a, X)
    assert sa[0].name != sb.name


@pytest.mark.parametrize("name,keyword", [("consistency", "return_confidence"),
                                          ("stability", "return_outlier_score")])
def test_predict_scores_equal_in_memory(client, models, name, keyword):
    Y = new_points()
    labels, scores = gcd.predict(models[name], da.from_array(Y, chunks=(50, 2)),
                                 **{keyword: True})
    ref_labels, ref_scores = models[name].predict(Y, **{keyword: True})
    np.testing.assert_array_equal(labels.compute(), ref_labels)
    np.testing.assert_array_equal(scores.compute(), ref_scores)


def test_predict_at_a_level_equals_in_memory(client, models):
    model = models["stability"]
    Y = new_points()
    Yd = da.from_array(Y, chunks=(50, 2))
    for tau in model.scan_["taus"][:4]:
        labels, scores = gcd.predict(model, Yd, return_outlier_score=True, tau=tau)
        ref_labels, ref_scores = model.predict(Y, return_outlier_score=True, tau=tau)
        np.testing.assert_array_equal(labels.compute(), ref_labels)
        np.testing.assert_array_equal(scores.compute(), ref_scores)
    c = int(model.scan_["consensus_n_clusters"][0])
    np.testing.assert_array_equal(gcd.predict(model, Yd, n_clusters=c).compute(),
                                  model.predict(Y, n_clusters=c))
    np.testing.assert_array_equal(gcd.predict(model, Yd).compute(), model.predict(Y))


def test_predict_at_a_bad_level_fails_before_any_block(models):
    never = da.map_blocks(lambda b: 1 / 0, da.zeros((20, 2), chunks=10), dtype=float)
    with pytest.raises(ValueError, match="tau must be one of the scanned walk lengths"):
        gcd.predict(models["stability"], never, tau=3.0)
    with pytest.raises(ValueError, match="got a SpectralClustering"):
        gcd.predict(models["spectral"], never, n_clusters=2)


def test_predict_ships_the_model_once(models):
    labels = gcd.predict(models["spectral"], da.from_array(new_points(), chunks=(10, 2)))
    graph = dict(labels.__dask_graph__())
    holding = [k for k, v in graph.items() if getattr(v, "value", v) is models["spectral"]]
    assert len(holding) <= 1  # one node of the graph holds the model; 14 blocks depend on it


def test_predict_with_unknown_row_chunks(client, models, X):
    Xd = da.from_array(new_points(), chunks=(40, 2))
    Xm = Xd[Xd[:, 0] < 20]  # drops the far point; row chunks become unknown (nan)
    assert np.isnan(Xm.chunks[0][0])
    ref = models["spectral"].predict(new_points()[:-1])
    np.testing.assert_array_equal(gcd.predict(models["spectral"], Xm).compute(), ref)


def test_predict_reads_model_files_old_and_new(client, models, tmp_path):
    Y = new_points()
    path = models["ahk"].save(tmp_path / "ahk.npz")
    np.testing.assert_array_equal(gcd.predict(path, da.from_array(Y, chunks=60)).compute(),
                                  models["ahk"].predict(Y))
    points = np.load(DATA / "v1_points.npy")
    for name in ("v1_consistency.npz", "v1_spectral.npz", "v1_pipeline_seeds.npz"):
        ref = gcd.load_model(DATA / name)
        got = gcd.predict(DATA / name, da.from_array(points + 0.01, chunks=(25, 2))).compute()
        np.testing.assert_array_equal(got, ref.predict(points + 0.01))


def test_predict_refuses_an_older_format_version(models, tmp_path):
    src = models["consistency"].save(tmp_path / "m.npz")
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays.pop("meta_json")).decode())
    meta["format_version"] = 0
    arrays["meta_json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match="format version 0.*refit and save again"):
        gcd.predict(tmp_path / "old.npz", da.zeros((10, 2), chunks=5))
    np.save(tmp_path / "junk.npy", np.zeros(3))
    with pytest.raises(ValueError, match="not a graphclust model file|damaged"):
        gcd.load_model(tmp_path / "junk.npy")
    with pytest.raises(FileNotFoundError, match="no model file .*give a fitted estimator or the "
                                                "path of a file its save"):
        gcd.predict(str(tmp_path / "missing.npz"), da.zeros((10, 2), chunks=5))


def test_predict_bad_input_fails_before_any_block(models):
    never = da.map_blocks(lambda b: 1 / 0, da.zeros((20, 3), chunks=10), dtype=float)
    with pytest.raises(ValueError, match="X has 3 features, but the SpectralClustering model "
                                         "expects 2"):
        gcd.predict(models["spectral"], never)
    with pytest.raises(NotFittedError, match="not fitted"):
        gcd.predict(gc.SpectralClustering(2), da.zeros((20, 2), chunks=10))
    graph_model = gc.SpectralClustering(2, random_state=0).fit(gc.knn_graph(blobs(), 6))
    with pytest.raises(ValueError, match="fitted on a Graph"):
        gcd.predict(graph_model, da.zeros((20, 2), chunks=10))
    with pytest.raises(ValueError, match="return_confidence=True: SpectralClustering.predict"):
        gcd.predict(models["spectral"], da.zeros((20, 2), chunks=10), return_confidence=True)
    unknown_cols = da.map_blocks(lambda b: b, da.zeros((20, 2), chunks=10), dtype=float,
                                 chunks=((10, 10), (np.nan,)))
    with pytest.raises(ValueError, match="unknown chunk sizes along its feature axis"):
        gcd.predict(models["spectral"], unknown_cols)
    with pytest.raises(ValueError, match="must be 2-d"):
        gcd.predict(models["spectral"], da.zeros(20, chunks=10))


def test_nan_inside_a_chunk_names_the_chunk(client, models):
    Y = new_points()
    Y[95, 1] = np.nan  # chunk 2 of 40-row chunks, rows 80..119
    with pytest.raises(ValueError, match=r"X chunk 2 \(rows 80\.\.119, first at row 95, "
                                         r"column 1\) contains 1 NaN"):
        gcd.predict(models["spectral"], da.from_array(Y, chunks=(40, 2))).compute()
    with pytest.raises(ValueError, match=r"X chunk 2 \(rows 80\.\.119"):
        gcd.kneighbors_graph(da.from_array(Y, chunks=(40, 2)), 5)


def test_import_without_dask_names_the_extra():
    code = ("import sys; sys.modules['dask'] = None; import graphclust\n"
            "assert 'distributed' not in sys.modules\n"
            "try:\n    import graphclust.dask\nexcept ImportError as e:\n"
            "    assert 'pip install graphclust[dask]' in str(e), e; print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


# ---------------------------------------------------------------------------------- kNN graph
def dense_knn_reference(X, k):
    """k nearest other points by the direct formula, ties broken by the smaller index."""
    n = X.shape[0]
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(n), (n, n)), D), axis=-1)[:, :k]
    return order, np.take_along_axis(D, order, axis=1)


@pytest.mark.parametrize("mode", ["union", "mutual"])
def test_knn_graph_equals_in_memory_exact(client, mode):
    X = np.random.default_rng(3).normal(size=(530, 8)) * 1e3
    got = gcd.kneighbors_graph(da.from_array(X, chunks=((200, 150, 1, 179), (5, 3))), 7,
                               mode=mode, merge_width=2)
    ref = gc.knn_graph(X, 7, method="exact", mode=mode)
    diff = got.distances != ref.distances
    assert diff.nnz == 0 and got.distances.nnz == ref.distances.nnz
    np.testing.assert_array_equal(got.distances.data, ref.distances.data)


def test_knn_lists_exact_with_duplicates_and_ties(client):
    """Clusters of exact duplicates (ties at the k-th distance, the full-row fallback)."""
    rng = np.random.default_rng(4)
    base = rng.normal(size=(40, 3))
    X = np.vstack([base, base, base[:10], rng.normal(size=(30, 3)) * 1e-9 + 5])
    parts = gcd.kneighbors_lists(da.from_array(X, chunks=23), 12)
    idx = np.concatenate([p.compute()[0] for p in parts])
    dist = np.concatenate([p.compute()[1] for p in parts])
    ref_idx, ref_dist = dense_knn_reference(X, 12)
    np.testing.assert_array_equal(dist, ref_dist)
    np.testing.assert_array_equal(idx, ref_idx)


def test_knn_graph_bad_input():
    Xd = da.from_array(np.random.default_rng(0).normal(size=(50, 2)), chunks=10)
    with pytest.raises(ValueError, match="row chunk\\(s\\) of unknown size .*compute_chunk_sizes"):
        gcd.kneighbors_graph(Xd[Xd[:, 0] > 0], 5)
    with pytest.raises(ValueError, match="n_neighbors must satisfy 1 <= n_neighbors < 50"):
        gcd.kneighbors_graph(Xd, 50)
    with pytest.raises(ValueError, match="mode"):
        gcd.kneighbors_graph(Xd, 5, mode="both")
    huge = np.random.default_rng(0).normal(size=(40, 3))
    huge[25] *= 1e200
    with pytest.raises(ValueError, match="X chunk 2 has coordinates whose squared norms overflow"):
        gcd.kneighbors_graph(da.from_array(huge, chunks=10), 3)


# ---------------------------------------------------------------------------------- kNN by cells
def _lists_valid(X, idx, dist):
    n, k = idx.shape
    assert (idx >= 0).all() and (idx != np.arange(n)[:, None]).all()
    assert all(len(set(r)) == k for r in idx)  # distinct neighbours
    assert (np.diff(dist, axis=1) >= 0).all()
    np.testing.assert_allclose(dist, np.linalg.norm(X[idx] - X[:, None, :], axis=2),
                               rtol=1e-12, atol=0)


def test_cells_with_every_probe_are_exact(client):
    """probes = number of cells puts every row in every cell: the exact lists, any chunking."""
    X = np.random.default_rng(5).normal(size=(700, 6))
    ref_idx, ref_dist = dense_knn_reference(X, 6)
    for chunks in (700, 100, (300, 1, 399)):
        idx, dist = gcd.kneighbors_lists_by_cells(da.from_array(X, chunks=(chunks, 6)), 6,
                                                  cell_size=200, probes=4, random_state=0)
        np.testing.assert_array_equal(idx, ref_idx)
        np.testing.assert_allclose(dist, ref_dist, rtol=1e-13)


def test_one_cell_graph_equals_the_in_memory_graph(client):
    X = np.random.default_rng(6).normal(size=(400, 4))
    got = gcd.kneighbors_graph(da.from_array(X, chunks=150), 5, method="cells",
                               cell_size=400, random_state=0)
    ref = gc.knn_graph(X, 5, method="exact")
    assert (got.distances != ref.distances).nnz == 0
    assert got.provenance["method"] == "cells"


def test_cells_recall_and_determinism(client):
    """Eight Gaussian clusters in 10-d: most true neighbours share a cell with their row; the
    lists are valid kNN lists, and the same seed gives the same lists whatever the chunks."""
    rng = np.random.default_rng(7)
    X = np.vstack([rng.normal(c, 1.0, (400, 10)) for c in rng.normal(0, 3, (8, 10))])
    ref_idx, _ = dense_knn_reference(X, 10)
    runs = [gcd.kneighbors_lists_by_cells(da.from_array(X, chunks=ch), 10, cell_size=400,
                                          probes=2, random_state=1) for ch in (1000, 3200)]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    idx, dist = runs[0]
    _lists_valid(X, idx, dist)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(idx, ref_idx)])
    assert recall >= 0.95, recall
    one = gcd.kneighbors_lists_by_cells(da.from_array(X, chunks=1000), 10, cell_size=400,
                                        probes=1, random_state=1)[0]
    recall1 = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(one, ref_idx)])
    assert recall1 <= recall  # a second probe finds what cell borders hide


def test_cells_in_several_passes_give_the_same_lists(client, monkeypatch):
    """A memory budget that admits one cell per pass reads X once per cell, and blocks cut in
    row chunks of 7: the same lists."""
    X = np.random.default_rng(9).normal(size=(1500, 5))
    Xd = da.from_array(X, chunks=400)
    one = gcd.kneighbors_lists_by_cells(Xd, 6, cell_size=300, random_state=2)
    assert gcc._passes(1e3, 5) == 1
    monkeypatch.setattr(gcc, "_PASS_MEMORY", 1e-12)
    monkeypatch.setattr(gcc, "_SPLIT_ROWS", 7)  # the workers are threads of this process
    assert gcc._passes(1e3, 5) == 5
    many = gcd.kneighbors_lists_by_cells(Xd, 6, cell_size=300, random_state=2)
    np.testing.assert_array_equal(one[0], many[0])
    np.testing.assert_array_equal(one[1], many[1])


def test_cells_too_small_for_k_fall_back_to_an_exact_search(client):
    """A far group of 3 points with k = 5: its cell cannot fill the lists, an exact search does."""
    rng = np.random.default_rng(8)
    X = np.vstack([rng.normal(0, 1, (40, 2)), rng.normal(100, 1, (3, 2))])
    idx, dist = gcd.kneighbors_lists_by_cells(da.from_array(X, chunks=20), 5, cell_size=15,
                                              probes=1, random_state=0)
    ref_idx, ref_dist = dense_knn_reference(X, 5)
    np.testing.assert_array_equal(idx[40:], ref_idx[40:])
    np.testing.assert_allclose(dist[40:], ref_dist[40:], rtol=1e-13)
    _lists_valid(X, idx, dist)


def _merge_reference(n, k, lists):
    best = [dict() for _ in range(n)]
    for rows, idx, dist in lists:
        for r, ii, dd in zip(rows, idx, dist):
            for j, v in zip(ii, dd):
                if j >= 0:
                    best[r][j] = min(v, best[r].get(j, np.inf))
    out_i, out_d = np.full((n, k), -1), np.full((n, k), np.inf)
    for r in range(n):
        top = sorted(best[r].items(), key=lambda t: (t[1], t[0]))[:k]
        for t, (j, v) in enumerate(top):
            out_i[r, t], out_d[r, t] = j, v
    return out_i, out_d


def _merge_parts(n, k, lists):
    """The client's merge: every part streamed into empty (n, k) lists by `_merge_into`."""
    idx, dist = np.full((n, k), -1, dtype=np.int64), np.full((n, k), np.inf)
    for rows, i, d in lists:
        gcc._merge_into(idx, dist, np.asarray(rows, dtype=np.int64),
                        np.asarray(i, dtype=np.int64), np.asarray(d, dtype=np.float64))
    return idx, dist


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merge_into_keeps_the_shortest_distinct_neighbours(seed):
    lists = [(np.array([0, 1]), np.array([[2, 1], [0, -1]]), np.array([[1.0, 3.0], [2.0, np.inf]])),
             (np.array([0, 2]), np.array([[2, 3], [1, 0]]), np.array([[1.0, 0.5], [4.0, 1.0]]))]
    idx, dist = _merge_parts(4, 2, lists)
    np.testing.assert_array_equal(idx, [[3, 2], [0, -1], [0, 1], [-1, -1]])
    np.testing.assert_array_equal(dist, [[0.5, 1.0], [2.0, np.inf], [1.0, 4.0], [np.inf, np.inf]])
    rng = np.random.default_rng(seed)
    n, k = 9, 3
    lists = []
    for _ in range(6):
        rows = np.sort(rng.choice(n, size=5, replace=False))
        idx = rng.integers(-1, n, size=(5, k))
        lists.append((rows, idx, np.where(idx < 0, np.inf, rng.integers(1, 4, size=(5, k)) * 1.0)))
    ref = _merge_reference(n, k, lists)
    for order in (lists, lists[::-1]):  # the parts' order does not matter
        got = _merge_parts(n, k, order)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])


def test_cells_bad_input():
    Xd = da.from_array(np.random.default_rng(0).normal(size=(50, 2)), chunks=10)
    with pytest.raises(ValueError, match="method"):
        gcd.kneighbors_graph(Xd, 5, method="ivf")
    with pytest.raises(ValueError, match="cell_size must satisfy 6 <= cell_size; got 5"):
        gcd.kneighbors_graph(Xd, 5, method="cells", cell_size=5)
    with pytest.raises(ValueError, match="probes must satisfy 1 <= probes; got 0"):
        gcd.kneighbors_graph(Xd, 5, method="cells", cell_size=10, probes=0)
    bad = np.random.default_rng(0).normal(size=(40, 3))
    bad[33, 1] = np.nan
    with pytest.raises(ValueError, match="chunk"):
        gcd.kneighbors_graph(da.from_array(bad, chunks=10), 3, method="cells", cell_size=10)


# ---------------------------------------------------------------------------------- sample
def test_fit_sample_extend(client):
    X = blobs(400, seed=2)
    Xd = da.from_array(X, chunks=(170, 2))
    est, labels, sample = gcd.fit_sample_extend(
        gc.SpectralClustering(2, n_neighbors=8), Xd, 150, random_state=0)
    lab = labels.compute()
    assert sample.shape == (150,) and np.all(np.diff(sample) > 0)
    np.testing.assert_array_equal(lab[sample], est.labels_)
    rest = np.setdiff1d(np.arange(800), sample)
    np.testing.assert_array_equal(lab[rest], est.predict(X[rest]))
    assert gc.metrics.nmi(lab, np.repeat([0, 1], 400)) == 1.0
    est2, labels2, sample2 = gcd.fit_sample_extend(
        gc.SpectralClustering(2, n_neighbors=8), Xd, 150, random_state=0)
    np.testing.assert_array_equal(sample2, sample)
    np.testing.assert_array_equal(labels2.compute(), lab)


def test_fit_sample_extend_scores(client):
    Xd = da.from_array(blobs(100), chunks=(70, 2))
    est, labels, scores, sample = gcd.fit_sample_extend(
        gc.StabilityClustering(n_neighbors=6), Xd, 80, random_state=1,
        return_outlier_score=True)
    assert labels.shape == scores.shape == (200,)
    s = scores.compute()
    assert np.all((s >= 0) & (s <= 1))


def test_fit_sample_extend_bad_input():
    Xd = da.from_array(blobs(), chunks=50)
    with pytest.raises(ValueError, match="sample_size must satisfy 2 <= sample_size <= n = 120 "
                                         "\\(the rows of X\\); got 500"):
        gcd.fit_sample_extend(gc.SpectralClustering(2), Xd, 500)
    with pytest.raises(ValueError, match="row chunk\\(s\\) of unknown size"):
        gcd.fit_sample_extend(gc.SpectralClustering(2), Xd[Xd[:, 0] > 0], 10)
    with pytest.raises(TypeError, match="estimator must be a graphclust estimator"):
        gcd.fit_sample_extend(object(), Xd, 10)
    Y = blobs()
    Y[3, 0] = np.inf
    with pytest.raises(ValueError, match="X chunk sample .*NaN or infinite"):
        gcd.fit_sample_extend(gc.SpectralClustering(2), da.from_array(Y, chunks=50), 120)
