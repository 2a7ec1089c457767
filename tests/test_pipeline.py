"""Pipeline: estimator contract, stage combinations, reuse across the search, persistence, errors."""

import io

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import graphclust as gc
from graphclust import pipeline as gp
from graphclust._progress import Progress
from graphclust.datasets import two_moons


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 0.3, (n_per, 2)), rng.normal(4, 0.3, (n_per, 2))])
    return X, np.repeat([0, 1], n_per)


FAST_KERNEL = dict(sigma_grid=(0.5, 1.0), alpha_grid=(0.99, 0.9999))


@pytest.fixture(scope="module")
def moons():
    return two_moons(200, noise=0.05, random_state=0)


# ------------------------------------------------------------------------ estimator contract
@parametrize_with_checks(
    [
        gc.Pipeline(gc.KNNGraph(5), gc.ConsistencyStage(sigma_grid=(1.0,), alpha_grid=(0.99,)),
                    gc.ConsistencySeeds(max_clusters=3), random_state=0),
        gc.Pipeline(gc.KNNGraph(5), gc.AHKStage(), gc.SpectralKMeans(3, n_init=1),
                    random_state=0),
        gc.ConsistencyClustering(criterion="omega", sigma_grid=(1.0,), alpha_grid=(0.99,),
                                 max_clusters=3, n_neighbors=5, random_state=0),
        gc.AHKClustering(3, n_neighbors=5, n_init=1, random_state=0),
        gc.SpectralClustering(3, n_neighbors=5, n_init=1, random_state=0),
    ],
)
def test_sklearn_estimator_checks(estimator, check):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # component-joining / tiny-data warnings of the checks
        check(estimator)


def test_docstring_example_two_moons(moons):
    X, y = moons
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(**FAST_KERNEL),
                       gc.ConsistencySeeds(max_clusters=4), random_state=0)
    labels = pipe.fit_predict(X)
    assert pipe.n_clusters_ == 2
    assert gc.metrics.clustering_error(y, labels) == 0.0
    assert pipe.omega_.shape == (2, 2, 3)
    assert pipe.alpha_ in (0.99, 0.9999)


def test_nested_params_and_clone():
    pipe = gc.Pipeline(gc.PMSTGraph(n_trees=20, r=0.4), gc.ConsistencyStage(alpha="auto"),
                       gc.ConsistencySeeds(3))
    params = pipe.get_params()
    assert params["graph__n_trees"] == 20 and params["graph__r"] == 0.4
    assert params["kernel__alpha"] == "auto" and params["clusterer__n_clusters"] == 3
    pipe.set_params(graph__n_trees=5, kernel__alpha=0.9)
    assert pipe.graph.n_trees == 5 and pipe.kernel.alpha == 0.9
    twin = clone(pipe)
    assert twin.graph is not pipe.graph
    assert twin.get_params(deep=True).keys() == pipe.get_params(deep=True).keys()
    assert all(
        twin.get_params()[k] == v for k, v in pipe.get_params().items()
        if not hasattr(v, "get_params")
    )
    with pytest.raises(ValueError, match="Invalid parameter"):
        pipe.set_params(graph__no_such=1)


def test_constructor_only_stores(moons):
    pipe = gc.Pipeline(graph="nonsense", kernel=3, clusterer=None)  # no validation here
    X, _ = moons
    with pytest.raises(TypeError, match="graph must be one of KNNGraph"):
        pipe.fit(X)
    with pytest.raises(TypeError, match="kernel must be ConsistencyStage, AHKStage"):
        gc.Pipeline(kernel=3).fit(X)
    with pytest.raises(TypeError, match="clusterer must be ConsistencySeeds"):
        gc.Pipeline(clusterer=gc.KNNGraph()).fit(X)


def test_seeded_determinism_pmst(moons):
    X, _ = moons
    make = lambda seed: gc.Pipeline(  # noqa: E731
        gc.PMSTGraph(n_trees=5), gc.ConsistencyStage(0.99, sigma=0.1),
        gc.ConsistencySeeds(2), random_state=seed)
    a, b = make(3).fit(X), make(3).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.graph_.distances.indices, b.graph_.distances.indices)
    np.testing.assert_allclose(a.inlierness_, b.inlierness_)
    c = make(4).fit(X)  # another seed perturbs other copies: another ensemble
    assert not np.array_equal(a.graph_.multiplicity.data, c.graph_.multiplicity.data) or \
        a.graph_.n_edges != c.graph_.n_edges


def test_same_result_as_consistency_clustering_on_the_same_graph(moons):
    X, _ = moons
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(**FAST_KERNEL),
                       gc.ConsistencySeeds(max_clusters=4), random_state=0).fit(X)
    ref = gc.ConsistencyClustering(criterion="omega", max_clusters=4,
                                   random_state=pipe.estimator_.random_state,
                                   **FAST_KERNEL).fit(gc.knn_graph(X, 10))
    np.testing.assert_array_equal(pipe.labels_, ref.labels_)
    np.testing.assert_allclose(pipe.omega_, ref.omega_, equal_nan=True)
    assert (pipe.sigma_, pipe.alpha_, pipe.n_clusters_) == (ref.sigma_, ref.alpha_,
                                                            ref.n_clusters_)


def test_search_builds_graph_once_and_one_spectrum_per_sigma(moons, monkeypatch):
    import graphclust.kernels._consistency as kc

    import dataclasses

    from graphclust.graphs import GRAPH_TYPES

    X, _ = moons
    calls = {"graph": 0, "basis": 0}
    real_knn, real_basis = GRAPH_TYPES["knn"].build, kc._build_basis

    def counting_knn(*a, **k):
        calls["graph"] += 1
        return real_knn(*a, **k)

    def counting_basis(*a, **k):
        calls["basis"] += 1
        return real_basis(*a, **k)

    monkeypatch.setitem(GRAPH_TYPES, "knn", dataclasses.replace(GRAPH_TYPES["knn"],
                                                               build=counting_knn))
    monkeypatch.setattr(kc, "_build_basis", counting_basis)
    gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(sigma_grid=(0.5, 1.0, 2.0),
                                                    alpha_grid=(0.9, 0.99, 0.999)),
                gc.ConsistencySeeds(max_clusters=4), random_state=0).fit(X)
    # 3 sigma x 3 alpha x 3 c evaluations: one graph, one eigensolve per sigma (+ none later)
    assert calls == {"graph": 1, "basis": 3}


def test_ahk_seed_search_one_spectrum_per_sigma(moons, monkeypatch):
    import graphclust.cluster._search as gk  # where the seed search builds spectral kernels

    X, _ = moons
    calls = []
    real = gk.spectral_kernel

    def counting(W, *a, **k):
        calls.append(W.shape)
        return real(W, *a, **k)

    monkeypatch.setattr(gk, "spectral_kernel", counting)
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.AHKStage(n_eigenpairs=30, sigma="auto",
                                                    sigma_grid=(0.5, 1.0)),
                       gc.ConsistencySeeds(max_clusters=4), random_state=0).fit(X)
    assert len(calls) == 2
    assert pipe.omega_.shape == (2, 1, 3) and np.isnan(pipe.omega_alphas_).all()
    assert pipe.sigma_ in pipe.omega_sigmas_


COMBOS = [
    (gc.ConsistencyStage(0.99, sigma=1.0), gc.ConsistencySeeds(2)),
    (gc.ConsistencyStage(0.99, sigma=1.0), gc.SpectralKMeans(2, n_init=3)),
    (gc.AHKStage(), gc.ConsistencySeeds(2)),
    (gc.AHKStage(normalization="sym", kind="heat", t=5.0), gc.SpectralKMeans(2, n_init=3)),
    (gc.NJWStage(), gc.SpectralKMeans(2, n_init=3)),
]
GRAPHS = [gc.KNNGraph(6), gc.MSTGraph(), gc.DMSTGraph(2), gc.PMSTGraph(5),
          gc.EpsilonGraph(1.0)]


@pytest.mark.parametrize("kernel,clusterer", COMBOS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("graph", GRAPHS, ids=lambda s: type(s).__name__)
def test_every_graph_under_every_kernel_recovers_blobs(graph, kernel, clusterer):
    X, y = blobs()
    pipe = gc.Pipeline(graph, kernel, clusterer, random_state=0)
    # the MST-based graphs and the epsilon graph with radius 1 join the two blobs by at most
    # a few bridges; every valid combination must separate them
    labels = pipe.fit_predict(X)
    assert adjusted_rand_score(y, labels) == 1.0
    assert pipe.n_clusters_ == 2


def test_graph_input(moons):
    X, y = moons
    g = gc.knn_graph(X, 10)
    pipe = gc.Pipeline(None, gc.ConsistencyStage(0.999, sigma=0.1), gc.ConsistencySeeds(2),
                       random_state=0).fit(g)
    assert gc.metrics.clustering_error(y, pipe.labels_) == 0.0
    assert not hasattr(pipe, "n_features_in_")
    with pytest.raises(ValueError, match="fitted on a Graph"):
        pipe.predict(X)
    with pytest.raises(ValueError, match="set graph=None"):
        gc.Pipeline(gc.KNNGraph()).fit(g)


def test_consistency_kmeans_embedding_is_top_eigenvectors_of_dense_U(moons):
    X, _ = moons
    sigma, alpha, k = 0.1, 0.99, 3
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(alpha, sigma=sigma),
                       gc.SpectralKMeans(k), random_state=0).fit(X)
    W = gc.affinity(gc.knn_graph(X, 10), sigma).toarray()
    d = W.sum(1)
    S = W / np.sqrt(np.outer(d, d))
    U = (1 - alpha) * np.linalg.inv(np.eye(len(d)) - alpha * S)
    vals, vecs = np.linalg.eigh(U)
    top = vecs[:, ::-1][:, :k]
    ref = top / np.linalg.norm(top, axis=1, keepdims=True)
    # same rows up to one orthogonal k x k rotation (eigenvector signs)
    R, *_ = np.linalg.lstsq(pipe.embedding_, ref, rcond=None)
    np.testing.assert_allclose(pipe.embedding_ @ R, ref, atol=1e-6)


def test_ahk_seeds_match_dense_reference(moons):
    X, _ = moons
    c = 3
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.AHKStage(n_eigenpairs=40), gc.ConsistencySeeds(c),
                       random_state=0).fit(X)
    W = gc.affinity(gc.knn_graph(X, 10), pipe.sigma_)
    K = gc.spectral_kernel(W, "ahk", n_eigenpairs=40, random_state=0)
    T = K.spectrum.trivial_vectors.toarray()  # the lambda = 0 vector, weight w(0) = 1 / gamma
    H = K.to_dense() + (T @ T.T) / 0.01
    assert H.min() > -1e-3 * H.max()  # (nearly) non-negative: what the seed geometry needs
    nu = np.linalg.norm(H, axis=0)
    V = H / nu
    C = V.T @ V
    o = C.mean(axis=1)
    seeds = [int(np.argmax(o))]
    O = o.copy()
    for _ in range(c - 1):
        O = O * (1 - C[:, seeds[-1]])
        seeds.append(int(np.argmax(O)))
    labels = np.argmax(V[:, seeds], axis=1)
    np.testing.assert_array_equal(pipe.representatives_, seeds)
    np.testing.assert_array_equal(pipe.labels_, labels)
    np.testing.assert_allclose(pipe.inlierness_, o, atol=1e-8)
    DM = 1 - C
    between = [DM[np.ix_(labels == a, labels == b)].mean() for a in range(c) for b in range(c)
               if a != b]
    within = [DM[np.ix_(labels == a, labels == a)].mean() for a in range(c)]
    assert pipe.omega_[0, 0, 0] == pytest.approx(np.mean(between) - np.mean(within), abs=1e-8)


# ------------------------------------------------------------------------ combinations refused
@pytest.mark.parametrize(
    "kernel,clusterer,match",
    [
        (gc.NJWStage(), gc.ConsistencySeeds(), "NJWStage with ConsistencySeeds makes no sense"),
        (gc.AHKStage(), gc.SpectralKMeans("auto"), "SpectralKMeans needs an integer"),
        (gc.AHKStage(sigma="auto"), gc.SpectralKMeans(2), "kernel__sigma='auto' is searched"),
        (gc.ConsistencyStage(), gc.SpectralKMeans(2), "kernel__sigma='auto' is searched"),
        (gc.ConsistencyStage(sigma=1.0), gc.SpectralKMeans(2), "kernel__alpha='auto'"),
        (gc.AHKStage(n_eigenpairs="all"), gc.ConsistencySeeds(2),
         "kernel__n_eigenpairs='all' .* while ConsistencySeeds read the columns of H"),
    ],
)
def test_nonsense_combinations_are_refused(kernel, clusterer, match):
    X, _ = blobs()
    with pytest.raises(ValueError, match=match):
        gc.Pipeline(gc.KNNGraph(5), kernel, clusterer).fit(X)


@pytest.mark.parametrize(
    "params,error,match",
    [
        (dict(graph=gc.KNNGraph("auto"), kernel=gc.AHKStage(), clusterer=gc.SpectralKMeans(2)),
         ValueError, "graph__n_neighbors='auto' is searched by the Omega criterion"),
        (dict(graph=gc.KNNGraph("auto", n_neighbors_grid=())), ValueError,
         "graph__n_neighbors_grid is empty"),
        (dict(graph=gc.KNNGraph("auto", n_neighbors_grid=(5, 60))), ValueError,
         "graph__n_neighbors_grid entries must satisfy"),
        (dict(graph=gc.MSTGraph(n_neighbors="auto")), ValueError,
         "only KNNGraph\\(n_neighbors='auto'\\) is searched"),
        (dict(graph=gc.KNNGraph(100)), ValueError, "n_neighbors"),
        (dict(clusterer=gc.ConsistencySeeds(max_clusters=100)), ValueError,
         "clusterer__max_clusters must satisfy 2 <= max_clusters <= n_samples = 60"),
        (dict(clusterer=gc.ConsistencySeeds(61)), ValueError, "clusterer__n_clusters"),
        (dict(clusterer=gc.ConsistencySeeds("many")), ValueError,
         "clusterer__n_clusters must be 'auto' or an integer"),
        (dict(kernel=gc.NJWStage(), clusterer=gc.SpectralKMeans(2, n_init=0)), ValueError,
         "clusterer__n_init"),
        (dict(kernel=gc.ConsistencyStage(1.5, sigma=1.0)), ValueError, "alpha"),
        (dict(kernel=gc.AHKStage(sigma=-1.0)), ValueError, "kernel__sigma must satisfy"),
        (dict(kernel=gc.AHKStage(sigma="wide")), ValueError, "kernel__sigma must be"),
        (dict(kernel=gc.AHKStage(kind="nope"), clusterer=gc.ConsistencySeeds(2)), ValueError,
         "kernel__kind must be one of"),
        (dict(kernel=gc.AHKStage(kind="mdm"), clusterer=gc.ConsistencySeeds(2)), ValueError,
         "needs a finite weight w\\(0\\)"),
        (dict(kernel=gc.AHKStage(gamma=-1), clusterer=gc.SpectralKMeans(2)), ValueError,
         "kernel__gamma must satisfy kernel__gamma >= 0"),
    ],
)
def test_bad_parameters(params, error, match):
    X, _ = blobs()
    with pytest.raises(error, match=match):
        gc.Pipeline(**{"graph": gc.KNNGraph(5), **params}).fit(X)


@pytest.mark.parametrize(
    "X,match",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 4.0]]),
         "X contains 1 NaN or infinite value.* .first at row 0, column 1."),
        (np.zeros((1, 2)), "at least 2"),
        (np.arange(5.0), "X must be a 2-D array .* got 1-D shape .5,."),
    ],
)
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        gc.Pipeline().fit(X)


# ------------------------------------------------------------------------ predict and outliers
def test_predict_unseen_points_and_availability(moons):
    X, y = moons
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(0.999, sigma=0.1),
                       gc.ConsistencySeeds(2), random_state=0).fit(X)
    rng = np.random.default_rng(1)
    Xn = X + rng.normal(0, 0.01, X.shape)
    labels, conf = pipe.predict(Xn, return_confidence=True)
    assert (labels == pipe.labels_).mean() > 0.98
    assert conf.shape == (len(X),) and (conf >= 0).all() and (conf <= 1).all()
    with pytest.raises(ValueError, match="expecting 2 features"):
        pipe.predict(np.zeros((3, 3)))
    kmeans_on_u = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(0.99), gc.SpectralKMeans(2))
    assert not hasattr(kmeans_on_u, "predict")  # no out-of-sample rule for k-means on U
    assert not hasattr(gc.Pipeline(gc.KNNGraph(10), gc.AHKStage(), gc.ConsistencySeeds()),
                       "predict")
    cos = gc.Pipeline(gc.KNNGraph(10, metric="cosine"), gc.ConsistencyStage(0.99, sigma=0.1),
                      gc.ConsistencySeeds(2), random_state=0).fit(X + 3.0)
    with pytest.raises(ValueError, match="graph uses metric='cosine'"):
        cos.predict(X)


def test_outliers_rank_an_isolated_point_first():
    X, _ = blobs()
    X = np.vstack([X, [[2.0, 12.0]]])
    pipe = gc.Pipeline(gc.KNNGraph(6), gc.ConsistencyStage(0.99, sigma=1.0),
                       gc.ConsistencySeeds(2), random_state=0).fit(X)
    assert pipe.outliers(1)[0] == len(X) - 1
    assert pipe.outliers(3, within_cluster=True).shape == (3,)
    km = gc.Pipeline(gc.KNNGraph(6), gc.NJWStage(), gc.SpectralKMeans(2)).fit(X)
    with pytest.raises(ValueError, match="outliers need clusterer=ConsistencySeeds"):
        km.outliers()


# ------------------------------------------------------------------------ persistence
def test_save_load_round_trip_consistency(tmp_path, moons):
    X, _ = moons
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(**FAST_KERNEL),
                       gc.ConsistencySeeds(max_clusters=3), random_state=0).fit(X)
    path = pipe.save(tmp_path / "model.npz")
    with np.load(path, allow_pickle=False) as z:  # no object arrays anywhere
        assert "meta_json" in z.files and "consistency_model" in z.files
    back = gc.Pipeline.load(path)
    for name in ("labels_", "representatives_", "inlierness_", "omega_", "omega_sigmas_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(pipe, name))
    assert (back.sigma_, back.alpha_, back.n_clusters_) == (pipe.sigma_, pipe.alpha_,
                                                            pipe.n_clusters_)
    assert back.get_params()["kernel__sigma_grid"] == (0.5, 1.0)
    assert back.omega_by_n_clusters_ == pipe.omega_by_n_clusters_
    np.testing.assert_array_equal(back.predict(X[:20] + 0.01), pipe.predict(X[:20] + 0.01))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]  # no temporary left


def test_save_load_round_trip_kmeans(tmp_path):
    X, _ = blobs()
    pipe = gc.Pipeline(gc.DMSTGraph(2), gc.AHKStage(normalization="rw"), gc.SpectralKMeans(2),
                       random_state=0).fit(X)
    back = gc.Pipeline.load(pipe.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.labels_, pipe.labels_)
    np.testing.assert_allclose(back.embedding_, pipe.embedding_)
    assert isinstance(back.graph, gc.DMSTGraph) and back.kernel.normalization == "rw"
    assert back.inertia_ == pipe.inertia_ and back.alpha_ is None


@pytest.mark.parametrize("kernel", [gc.AHKStage(), gc.NJWStage()], ids=["ahk", "njw"])
@pytest.mark.parametrize("graph", [gc.KNNGraph(10), gc.DMSTGraph(3)], ids=["knn", "dmst"])
def test_ahk_and_njw_pipelines_predict_and_round_trip(kernel, graph, tmp_path):
    X, y = blobs()
    pipe = gc.Pipeline(graph, kernel, gc.SpectralKMeans(2), random_state=0).fit(X)
    Xn = X + np.random.default_rng(1).normal(0, 0.01, X.shape)
    labels = pipe.predict(Xn)
    np.testing.assert_array_equal(labels, pipe.labels_)  # two blobs 4 apart, jitter 0.01
    with pytest.raises(ValueError, match="return_confidence=True needs clusterer=ConsistencySeeds"):
        pipe.predict(Xn, return_confidence=True)
    back = gc.Pipeline.load(pipe.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.predict(Xn), labels)
    assert type(back.estimator_) is type(pipe.estimator_)
    with np.load(tmp_path / "m.npz") as z:  # a file without the embedded model
        arrays = {k: z[k] for k in z.files if k != "spectral_model"}
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match="no fitted model to predict with"):
        gc.Pipeline.load(tmp_path / "old.npz").predict(Xn)


def test_save_load_round_trip_ahk_seeds(tmp_path):
    X, _ = blobs()
    pipe = gc.Pipeline(gc.KNNGraph(8), gc.AHKStage(sigma="auto", sigma_grid=(0.5, 1.0)),
                       gc.ConsistencySeeds(max_clusters=3), random_state=0).fit(X)
    back = gc.Pipeline.load(pipe.save(tmp_path / "m.npz"))
    for name in ("labels_", "representatives_", "cluster_inlierness_", "omega_", "between_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(pipe, name))
    np.testing.assert_array_equal(back.outliers(5), pipe.outliers(5))
    assert back.sigma_ == pipe.sigma_ and back.estimator_ is None


def test_load_rejects_damaged_and_foreign_files(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="damaged or not a graphclust pipeline"):
        gc.Pipeline.load(bad)
    other = tmp_path / "other.npz"
    np.savez(other, meta_json=np.frombuffer(b'{"format": "x"}', dtype=np.uint8))
    with pytest.raises(ValueError, match="is not a graphclust.Pipeline file"):
        gc.Pipeline.load(other)
    with pytest.raises(FileNotFoundError):
        gc.Pipeline.load(tmp_path / "missing.npz")
    with pytest.raises(Exception, match="not fitted"):
        gc.Pipeline().save(tmp_path / "x.npz")


# ------------------------------------------------------------------------ progress
def test_verbose_progress_on_stderr(capsys):
    X, _ = blobs()
    gc.Pipeline(gc.KNNGraph(5), gc.ConsistencyStage(0.99, sigma=1.0), gc.ConsistencySeeds(2),
                verbose=True).fit(X)
    err = capsys.readouterr().err
    assert "graphclust: graph KNNGraph(" in err and "of 60 points ... done in" in err
    assert "searching" not in err  # nothing to search: sigma, alpha and c are given
    assert "graphclust: final fit at sigma = 1, alpha = 0.99, c = 2 (tol 1e-08) ... done in" in err
    assert "chose c = 2" in err
    gc.Pipeline(gc.KNNGraph(5), gc.ConsistencyStage(0.99, sigma=1.0),
                gc.ConsistencySeeds(2)).fit(X)
    assert capsys.readouterr().err == ""
    gc.Pipeline(gc.KNNGraph(5), gc.AHKStage(), gc.SpectralKMeans(2), verbose=True).fit(X)
    err = capsys.readouterr().err
    assert "eigenpairs: top 2 of the full ahk kernel" in err
    assert "graphclust: k-means (10 restarts) ... done in" in err
    gc.Pipeline(gc.KNNGraph(5), gc.NJWStage(), gc.SpectralKMeans(2)).fit(X)
    assert capsys.readouterr().err == ""


def test_progress_silent_when_not_a_terminal():
    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    assert not Progress.for_terminal(stream=io.StringIO()).enabled
    assert Progress.for_terminal(stream=FakeTTY()).enabled
    assert not Progress.for_terminal(quiet=True, stream=FakeTTY()).enabled
    out = FakeTTY()
    p = Progress.for_terminal(stream=out)
    with pytest.raises(RuntimeError):
        with p.step("failing step"):
            raise RuntimeError("boom")
    assert "graphclust: failing step ... failed after" in out.getvalue()
    assert p.steps[0][0] == "failing step"


def test_n_neighbors_auto_searches_one_neighbour_search(moons, tmp_path):
    X, y = moons
    pipe = gc.Pipeline(gc.KNNGraph("auto", n_neighbors_grid=(5, 10)),
                       gc.ConsistencyStage(**FAST_KERNEL), gc.ConsistencySeeds(max_clusters=4),
                       random_state=0).fit(X)
    assert sorted(pipe.graph_search_) == [5, 10]
    assert pipe.n_neighbors_ == max(pipe.graph_search_, key=pipe.graph_search_.get)
    assert pipe.graph_.provenance["n_neighbors"] == pipe.n_neighbors_
    # the chosen k gives exactly what a pipeline with that k given gives
    fixed = gc.Pipeline(gc.KNNGraph(pipe.n_neighbors_), gc.ConsistencyStage(**FAST_KERNEL),
                        gc.ConsistencySeeds(max_clusters=4), random_state=0).fit(X)
    assert np.array_equal(pipe.labels_, fixed.labels_)
    assert pipe.graph_search_[pipe.n_neighbors_] == pytest.approx(
        fixed.omega_by_n_clusters_[fixed.n_clusters_], rel=1e-12)
    assert fixed.n_neighbors_ is None and fixed.graph_search_ is None
    assert np.array_equal(pipe.predict(X[:20]), pipe.labels_[:20])
    loaded = gc.Pipeline.load(pipe.save(tmp_path / "auto_k.npz"))
    assert loaded.n_neighbors_ == pipe.n_neighbors_ and loaded.graph_search_ == pipe.graph_search_
    assert loaded.get_params()["graph__n_neighbors_grid"] == (5, 10)
