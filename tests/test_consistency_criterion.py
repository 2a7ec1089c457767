"""`ConsistencyClustering(criterion=...)`: Markov stability by default when c is chosen, the
papers' Omega by name (and when c is given); which attributes each sets, predict, model files,
the CLI."""

import json
import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import graphclust as gc
from graphclust.cli import main
from graphclust.cluster import ConsistencyClustering
from graphclust.datasets import three_moons, two_moons
from graphclust.metrics import clustering_error

from _estimator_checks import knn_expected_failures

OMEGA_ONLY_ATTRS = ("inlierness_", "cluster_inlierness_", "omega_", "omega_by_n_clusters_",
                    "between_", "column_norms_")


@pytest.fixture(scope="module")
def moons3():
    return three_moons(600, random_state=0)


@pytest.fixture(scope="module")
def auto3(moons3):
    return ConsistencyClustering(random_state=0).fit(moons3[0])


# ------------------------------------------------------------------ the default finds c
def test_default_is_stability_and_finds_three_moons(moons3, auto3):
    _, y = moons3
    assert auto3.criterion == "auto" and auto3.criterion_ == "stability"
    assert auto3.n_clusters_ == 3 and clustering_error(y, auto3.labels_) == 0.0
    assert isinstance(auto3.stability_, gc.StabilityClustering)
    np.testing.assert_array_equal(auto3.labels_, auto3.stability_.labels_)
    assert auto3.tau_ == auto3.stability_.tau_ and auto3.selection_rule_ == "metastable"
    assert auto3.alpha_ == pytest.approx(auto3.tau_ / (1 + auto3.tau_))
    assert auto3.sigma_ is None  # one scale per point, not one Gaussian width
    assert auto3.representatives_.shape == (3,)
    assert auto3.labels_[auto3.representatives_].tolist() == [0, 1, 2]
    assert auto3.n_features_in_ == 2 and auto3.timings_
    for name in OMEGA_ONLY_ATTRS:
        assert not hasattr(auto3, name), name


def test_default_finds_two_moons():
    X, y = two_moons(400, noise=0.05, random_state=0)
    model = ConsistencyClustering(random_state=0).fit(X)
    assert (model.criterion_, model.n_clusters_) == ("stability", 2)
    assert clustering_error(y, model.labels_) == 0.0


def test_omega_by_name_is_the_papers_search(moons3):
    X, y = moons3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gc.cluster.ConsistencyWarning)
        model = ConsistencyClustering(criterion="omega", random_state=0).fit(X)
    assert model.criterion_ == "omega" and model.n_clusters_ == 3
    assert clustering_error(y, model.labels_) == 0.0
    assert model.omega_.shape[2] == 9 and model.sigma_ > 0
    assert not hasattr(model, "stability_") and not hasattr(model, "tau_")


# ------------------------------------------------------------------ how "auto" resolves
def _fit_quietly(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X)


def test_auto_reads_a_given_c_from_the_stability_hierarchy():
    X, _ = two_moons(200, noise=0.05, random_state=0)
    for c in (2, 4):
        model = _fit_quietly(ConsistencyClustering(n_clusters=c, random_state=0), X)
        assert model.criterion_ == "stability" and model.n_clusters_ == c
        assert model.selection_rule_ == "n_clusters" and not hasattr(model, "omega_")


@pytest.mark.parametrize("params", [
    dict(max_clusters=4),                             # a parameter of the Omega search
    dict(alpha=0.99, sigma_grid=(1.0,), max_clusters=3),
    dict(criterion="omega"),
])
def test_auto_uses_omega_when_omega_is_asked_for(params):
    X, _ = two_moons(200, noise=0.05, random_state=0)
    model = _fit_quietly(ConsistencyClustering(random_state=0, **params), X)
    assert model.criterion_ == "omega" and hasattr(model, "omega_")


def test_auto_uses_omega_on_a_graph_or_precomputed_w():
    X, _ = two_moons(200, noise=0.05, random_state=0)
    g = gc.knn_graph(X, 10)
    a = _fit_quietly(ConsistencyClustering(sigma_grid=(1.0,), alpha_grid=(0.99,)), g)
    b = ConsistencyClustering(affinity="precomputed", alpha_grid=(0.99,),
                              max_clusters=3).fit(gc.affinity(g, gc.default_sigma(g)))
    assert a.criterion_ == b.criterion_ == "omega"


def test_refit_with_the_other_criterion_leaves_no_stale_attribute():
    X, _ = two_moons(200, noise=0.05, random_state=0)
    model = _fit_quietly(ConsistencyClustering(criterion="omega", max_clusters=3,
                                               random_state=0), X)
    assert hasattr(model, "omega_")
    model.set_params(criterion="stability", max_clusters=10).fit(X)
    assert model.criterion_ == "stability" and not hasattr(model, "omega_")
    model.set_params(criterion="omega", max_clusters=3)
    _fit_quietly(model, X)
    assert not hasattr(model, "stability_") and not hasattr(model, "tau_")


# ------------------------------------------------------------------ parameters of one criterion
@pytest.mark.parametrize("params,error,match", [
    (dict(criterion="stability", alpha=0.99), ValueError,
     r"alpha=0.99: this applies to criterion='omega' only"),
    (dict(criterion="stability", max_clusters=4, sigma=1.0), ValueError,
     r"sigma=1.0, max_clusters=4: these apply to criterion='omega' only"),
    (dict(criterion="stability", affinity="precomputed"), ValueError,
     "affinity='precomputed': this applies to criterion='omega' only"),
    (dict(criterion="omega", stability_params={"n_seeds": 5}), ValueError,
     "stability_params=.* applies to criterion='stability' only"),
    (dict(n_clusters=3, max_clusters=4, stability_params={"n_seeds": 5}), ValueError,
     "chosen because the input is a Graph or a precomputed W, or a parameter of the Omega"),
    (dict(stability_params={"seeds": 5}), ValueError, r"unknown key\(s\) \['seeds'\]"),
    (dict(stability_params=[("n_seeds", 5)]), TypeError, "stability_params must be a dict"),
    (dict(criterion="Omega"), ValueError, "criterion must be one of 'auto', 'omega'"),
    (dict(criterion="stability", n_clusters=601), ValueError,
     "n_clusters must satisfy 1 <= n_clusters <= n_samples = 600"),
    (dict(criterion="stability", alpha=1.5), ValueError, "alpha must satisfy"),
])
def test_parameters_of_the_other_criterion_are_refused_before_any_work(params, error, match,
                                                                       moons3, monkeypatch):
    fitted = []
    monkeypatch.setattr(gc.StabilityClustering, "fit",
                        lambda self, X, y=None: fitted.append(1) or self)
    with pytest.raises(error, match=match):
        ConsistencyClustering(**params).fit(moons3[0])
    assert not fitted


def test_stability_refuses_a_graph():
    X, _ = two_moons(100, noise=0.05, random_state=0)
    with pytest.raises(ValueError, match="cannot cluster a Graph"):
        ConsistencyClustering(criterion="stability").fit(gc.knn_graph(X, 10))


def test_stability_params_reach_the_stability_fit(moons3):
    model = ConsistencyClustering(stability_params={"n_seeds": 2, "affinity": "local"},
                                  random_state=0).fit(moons3[0])
    assert model.stability_.n_seeds == 2 and model.stability_.affinity == "local"
    assert model.stability_.scan_["n_clusters"].shape[1] == 2


def test_stability_with_c_given_returns_the_nearest_scanned_partition(moons3):
    model = ConsistencyClustering(3, criterion="stability", random_state=0).fit(moons3[0])
    assert model.criterion_ == "stability" and model.n_clusters_ == 3
    assert model.selection_rule_ == "n_clusters"


# ------------------------------------------------------------------ predict, outliers
def test_predict_and_outlier_score_under_stability(moons3, auto3):
    X, _ = moons3
    np.testing.assert_array_equal(auto3.predict(X[:50] + 1e-3), auto3.labels_[:50])
    labels, score = auto3.predict(X[:50] + 1e-3, return_outlier_score=True)
    np.testing.assert_array_equal(labels, auto3.labels_[:50])
    assert np.median(score) > 0.1
    _, far = auto3.predict(X[:5] + 20.0, return_outlier_score=True)
    assert (far < auto3.stability_.outlier_threshold).all()


def test_each_criterion_refuses_the_others_outputs(moons3, auto3):
    X, _ = moons3
    with pytest.raises(ValueError, match="use return_outlier_score=True"):
        auto3.predict(X[:3], return_confidence=True)
    assert not hasattr(auto3, "decision_function")  # the seeds' scores: criterion="omega"
    with pytest.raises(ValueError, match="outliers\\(\\) ranks the training points"):
        auto3.outliers(5)
    omega = _fit_quietly(ConsistencyClustering(2, alpha=0.99, sigma=0.1, random_state=0), X)
    with pytest.raises(ValueError, match="not both"):
        omega.predict(X[:3], return_confidence=True, return_outlier_score=True)


# ------------------------------------------------------------------ model files
def test_stability_model_round_trips(moons3, auto3, tmp_path):
    X, _ = moons3
    back = ConsistencyClustering.load(auto3.save(tmp_path / "m.npz"))
    assert back.criterion_ == "stability" and back.get_params() == auto3.get_params()
    np.testing.assert_array_equal(back.labels_, auto3.labels_)
    np.testing.assert_array_equal(back.representatives_, auto3.representatives_)
    assert (back.n_clusters_, back.alpha_, back.tau_, back.selection_rule_, back.sigma_) == (
        auto3.n_clusters_, auto3.alpha_, auto3.tau_, auto3.selection_rule_, None)
    Xn = X[::7] + 0.003
    a, sa = auto3.predict(Xn, return_outlier_score=True)
    b, sb = back.predict(Xn, return_outlier_score=True)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sa, sb)


def test_stability_params_round_trip(moons3, tmp_path):
    model = ConsistencyClustering(stability_params={"n_seeds": 2, "taus": [4.0, 64.0, 1024.0]},
                                  random_state=0).fit(moons3[0])
    back = ConsistencyClustering.load(model.save(tmp_path / "m.npz"))
    assert back.stability_params == {"n_seeds": 2, "taus": [4.0, 64.0, 1024.0]}
    np.testing.assert_array_equal(back.labels_, model.labels_)


def test_damaged_stability_file_names_the_field(auto3, tmp_path):
    path = auto3.save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data["stability_model"] = data["stability_model"][:100]
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match="embedded stability model does not load"):
        ConsistencyClustering.load(tmp_path / "bad.npz")
    data.pop("stability_model")
    np.savez(tmp_path / "bad2.npz", **data)
    with pytest.raises(ValueError, match="stability_model bytes"):
        ConsistencyClustering.load(tmp_path / "bad2.npz")


# ------------------------------------------------------------------ the pipeline and the CLI
def test_pipeline_seeds_stay_the_papers_omega():
    X, _ = two_moons(200, noise=0.05, random_state=0)
    pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(sigma_grid=(1.0,),
                                                            alpha_grid=(0.99,)),
                       gc.ConsistencySeeds(max_clusters=3), random_state=0)
    _fit_quietly(pipe, X)
    assert pipe.estimator_.criterion == "omega" and pipe.estimator_.criterion_ == "omega"


def _write_moons(path):
    X, y = three_moons(300, random_state=1)
    lines = ["x,y,class"] + [f"{float(a)!r},{float(b)!r},{int(c)}" for (a, b), c in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


def test_cli_default_chooses_c_by_stability(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write_moons(tmp_path / "m.csv")
    assert main(["cluster", "m.csv", "--label-column", "class", "--save-model", "m.npz",
                 "--quiet"]) == 0
    report = json.loads((tmp_path / "m.report.json").read_text())
    assert report["estimator"]["criterion"] == "stability"
    assert report["chosen"]["n_clusters"] == 3 and report["chosen"]["sigma"] is None
    assert report["chosen"]["selection_rule"] in ("metastable", "plateau")
    assert report["against_label_column"]["adjusted_rand"] == pytest.approx(1.0)
    assert "omega_search" not in report and "stability_scan" in report
    model = ConsistencyClustering.load(tmp_path / "m.npz")
    assert report["chosen"]["cluster_splits"] == model.stability_.cluster_splits_
    table = np.genfromtxt(tmp_path / "m.labels.csv", delimiter=",", names=True)
    assert table.dtype.names == ("index", "label")
    np.testing.assert_array_equal(model.labels_, table["label"].astype(int))
    # the scan it chose from: on stdout as `summary()`, in the report per walk length
    out = capsys.readouterr().out
    for line in model.summary().splitlines()[1:]:
        assert "  " + line in out
    scan = report["stability_scan"]
    taus = model.stability_.scan_["taus"]
    assert len(scan["consensus_n_clusters"]) == len(scan["consensus_stability"]) == taus.size
    for t, c in zip(taus, scan["consensus_n_clusters"]):
        if t != model.tau_:
            assert int(model.labels_at(tau=t).max()) + 1 == c


@pytest.mark.parametrize("argv,code,message", [
    (["--criterion", "stability", "--sigma", "1"], 2, "--sigma applies to --criterion omega"),
    (["--criterion", "stability", "--max-clusters", "4", "--graph", "mst"], 2,
     "--graph, --max-clusters apply to --criterion omega only"),
    (["--criterion", "stability", "--n-neighbors", "auto"], 2,
     "--n-neighbors auto applies to --criterion omega only"),
])
def test_cli_stability_refuses_omega_options(argv, code, message, tmp_path, monkeypatch,
                                             capsys):
    monkeypatch.chdir(tmp_path)
    _write_moons(tmp_path / "m.csv")
    assert main(["cluster", "m.csv", *argv]) == code
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]


def test_cli_omega_options_select_the_papers_pipeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_moons(tmp_path / "m.csv")
    assert main(["cluster", "m.csv", "--max-clusters", "4", "--sigma-grid", "1",
                 "--alpha-grid", "0.999", "--quiet"]) == 0
    report = json.loads((tmp_path / "m.report.json").read_text())
    assert "omega_search" in report and report["pipeline"]["clusterer"]["max_clusters"] == 4


# ------------------------------------------------------------------ scikit-learn contract
@parametrize_with_checks([ConsistencyClustering(criterion="stability", random_state=0)],
                         expected_failed_checks=knn_expected_failures)
def test_sklearn_compatible_with_the_default_criterion(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


# ------------------------------------------------------------------ probes in a canonical order
def test_kernel_probe_order_makes_the_estimate_permutation_equivariant():
    from graphclust.cluster._search import probe_row_order

    X, _ = three_moons(1800, random_state=3)
    p = np.random.default_rng(0).permutation(len(X))
    W = gc.affinity(gc.knn_graph(X, 10), 0.08)
    Wp = W[p][:, p]
    K = gc.kernels.ConsistencyKernel(W, 0.99, method="cg", random_state=0)
    Kp = gc.kernels.ConsistencyKernel(Wp, 0.99, method="cg", random_state=0)
    a = K.column_norms("estimate", random_state=4, probe_order=probe_row_order(X=X))
    b = Kp.column_norms("estimate", random_state=4, probe_order=probe_row_order(X=X[p]))
    np.testing.assert_allclose(b.nu, a.nu[p], rtol=1e-6)
    c = K.column_norms("estimate", random_state=4)  # row order: another estimate
    assert not np.allclose(c.nu, a.nu, rtol=1e-6)
    with pytest.raises(ValueError, match="probe_order must be a permutation"):
        K.column_norms("estimate", probe_order=np.zeros(len(X), dtype=int))
    # with only W: node features, equal under the permutation
    np.testing.assert_array_equal(p[probe_row_order(W=Wp)], probe_row_order(W=W))
