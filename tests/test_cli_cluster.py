"""``graphclust cluster``: reading tables, outputs, report, exit codes, bad input, progress."""

import io
import json
import sys

import numpy as np
import pytest

import graphclust as gc
from graphclust._cli_cluster import DataError, read_table
from graphclust.cli import main

FAST = ["--sigma-grid", "0.5,1", "--alpha-grid", "0.99,0.9999", "--max-clusters", "4"]


def three_blobs(n_per=20, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    X = np.vstack([rng.normal(c, 0.4, (n_per, 2)) for c in centres])
    return X, np.repeat(["a", "b", "c"], n_per)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_csv(path, X, labels=None, header=True, delimiter=","):
    lines = []
    if header:
        lines.append(delimiter.join(["x", "y"] + (["class"] if labels is not None else [])))
    for i, row in enumerate(X):
        fields = [repr(float(v)) for v in row] + ([labels[i]] if labels is not None else [])
        lines.append(delimiter.join(fields))
    path.write_text("\n".join(lines) + "\n")
    return path


def files(d):
    return sorted(p.name for p in d.iterdir())


# ------------------------------------------------------------------------ success paths
def test_csv_with_header_and_label_column(workdir, capsys):
    X, y = three_blobs()
    write_csv(workdir / "blobs.csv", X, y)
    assert main(["cluster", "blobs.csv", "--label-column", "class", "--n-neighbors", "8",
                 *FAST]) == 0
    out = capsys.readouterr().out
    assert "blobs.csv: 60 points -> 3 clusters (sizes 20 20 20)" in out
    assert "NMI 1.000, ARI 1.000" in out
    assert files(workdir) == ["blobs.csv", "blobs.labels.csv", "blobs.report.json"]
    table = np.genfromtxt(workdir / "blobs.labels.csv", delimiter=",", names=True)
    assert table.dtype.names == ("index", "label", "inlierness", "cluster_inlierness",
                                 "outlier_rank", "representative")
    assert len(table) == 60 and table["representative"].sum() == 3
    assert sorted(table["outlier_rank"].astype(int)) == list(range(1, 61))
    report = json.loads((workdir / "blobs.report.json").read_text())
    assert report["input"]["header"] is True and report["input"]["label_column"] == "class"
    assert report["input"]["columns"] == ["x", "y"]
    assert report["chosen"]["n_clusters"] == 3
    assert report["chosen"]["sigma"] in report["omega_search"]["sigmas"]
    assert report["chosen"]["alpha"] in report["omega_search"]["alphas"]
    om = report["omega_search"]
    assert (len(om["omega"]), len(om["omega"][0]), len(om["omega"][0][0])) == (2, 2, 3)
    assert om["n_clusters"] == [2, 3, 4]
    best = max(v for v in om["best_by_n_clusters"].values() if v is not None)
    assert om["best_by_n_clusters"]["3"] == best
    # the report's representatives are the rows flagged in the table, with their coordinates
    reps = [r["index"] for r in report["representatives"]]
    assert sorted(reps) == sorted(np.flatnonzero(table["representative"]).tolist())
    np.testing.assert_allclose(report["representatives"][0]["point"], X[reps[0]])
    assert len(report["worst_outliers"]) == 10
    assert report["against_label_column"]["nmi"] == pytest.approx(1.0)


def test_a_binary_table_is_reported_by_its_latent_classes(workdir, capsys):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    X = (rng.random((200, 8)) < np.where(y[:, None] == 1, 0.9, 0.1)).astype(int)
    np.save(workdir / "answers.npy", X)
    assert main(["cluster", "answers.npy", "--quiet"]) == 0
    assert "200 points -> 2 clusters" in capsys.readouterr().out
    report = json.loads((workdir / "answers.report.json").read_text())
    assert report["chosen"]["selection_rule"] == "latent classes"
    assert report["stability_scan"] is None
    bic = report["latent_classes"]["bic"]
    assert min(bic, key=bic.get) == "2"


def test_a_binary_table_with_missing_answers(workdir, capsys):
    # empty fields and NaN are missing answers of a binary table: the latent class model
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    X = (rng.random((200, 8)) < np.where(y[:, None] == 1, 0.9, 0.1)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    lines = ["\n".join(",".join("" if np.isnan(v) else f"{v:g}" for v in row) for row in X)]
    (workdir / "holes.csv").write_text("\n".join(lines) + "\n")
    assert main(["cluster", "holes.csv", "--quiet"]) == 0
    assert "200 points -> 2 clusters" in capsys.readouterr().out
    report = json.loads((workdir / "holes.report.json").read_text())
    assert report["chosen"]["selection_rule"] == "latent classes"
    np.save(workdir / "holes.npy", X)
    assert main(["cluster", "holes.npy", "--quiet"]) == 0
    X[0, 0] = 2.0  # a third value: no longer binary, so the NaN are refused
    np.save(workdir / "three.npy", X)
    assert main(["cluster", "three.npy"]) == 1
    assert "is not a finite number" in capsys.readouterr().err


def test_tsv_without_header_and_npy(workdir, capsys):
    X, _ = three_blobs()
    write_csv(workdir / "pts.tsv", X, header=False, delimiter="\t")
    assert main(["cluster", "pts.tsv", "-o", "tsv", "--n-neighbors", "8", *FAST]) == 0
    report = json.loads((workdir / "tsv.report.json").read_text())
    assert report["input"]["header"] is False and report["input"]["columns"] == ["x0", "x1"]
    y = np.repeat([0.0, 1.0, 2.0], 20)
    np.save(workdir / "pts.npy", np.column_stack([X, y]))
    assert main(["cluster", "pts.npy", "--label-column", "-1", "--n-neighbors", "8",
                 *FAST]) == 0
    report = json.loads((workdir / "pts.report.json").read_text())
    assert report["input"]["n_features"] == 2
    assert report["against_label_column"]["adjusted_rand"] == pytest.approx(1.0)


def test_kmeans_on_ahk_with_pmst_graph(workdir):
    X, _ = three_blobs()
    write_csv(workdir / "b.csv", X)
    assert main(["cluster", "b.csv", "--graph", "pmst", "--n-trees", "5", "--kernel", "ahk",
                 "--clusterer", "kmeans", "--n-clusters", "3"]) == 0
    table = np.genfromtxt(workdir / "b.labels.csv", delimiter=",", names=True)
    assert table.dtype.names == ("index", "label")
    assert sorted(np.bincount(table["label"].astype(int))) == [20, 20, 20]
    report = json.loads((workdir / "b.report.json").read_text())
    assert report["pipeline"]["graph"]["class"] == "PMSTGraph"
    assert report["pipeline"]["graph"]["n_trees"] == 5
    assert "omega_search" not in report and report["chosen"]["alpha"] is None


def test_njw_clusters_by_kmeans_without_being_told(workdir):
    # NJW's S is no diffusion kernel: --kernel njw alone takes k-means, not the seeds
    X, _ = three_blobs()
    write_csv(workdir / "b.csv", X)
    assert main(["cluster", "b.csv", "--kernel", "njw", "--n-clusters", "3"]) == 0
    table = np.genfromtxt(workdir / "b.labels.csv", delimiter=",", names=True)
    assert sorted(np.bincount(table["label"].astype(int))) == [20, 20, 20]
    report = json.loads((workdir / "b.report.json").read_text())
    assert report["pipeline"]["clusterer"]["class"] == "SpectralKMeans"


def test_plot_and_saved_model(workdir):
    X, _ = three_blobs()
    write_csv(workdir / "b.csv", X)
    assert main(["cluster", "b.csv", "--plot", "b.png", "--save-model", "b.npz",
                 "--n-neighbors", "8", *FAST]) == 0
    assert (workdir / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model = gc.Pipeline.load(workdir / "b.npz")
    table = np.genfromtxt(workdir / "b.labels.csv", delimiter=",", names=True)
    np.testing.assert_array_equal(model.labels_, table["label"].astype(int))
    assert set(files(workdir)) == {"b.csv", "b.labels.csv", "b.report.json", "b.png", "b.npz"}


# ------------------------------------------------------------------------ header detection
@pytest.mark.parametrize(
    "text,header,columns",
    [
        ("a,b\n1,2\n3,4\n5,6\n", True, ["a", "b"]),
        ("1,2\n3,4\n5,6\n", False, ["x0", "x1"]),
        ("1,2,label\n3,4,u\n", True, ["1", "2"]),  # label column named, numbers as names
        ('"a b","c"\n1,2\n3,4\n', True, ["a b"]),
    ],
)
def test_header_detection(tmp_path, text, header, columns):
    path = tmp_path / "t.csv"
    path.write_text(text)
    label = "label" if "label" in text else ("c" if '"c"' in text else None)
    X, labels, info = read_table(path, label_column=label)
    assert info["header"] is header and info["columns"] == columns
    assert X.dtype == np.float64 and X.shape[1] == len(columns)


def test_header_forced(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("1,2\n3,4\n5,6\n")
    X, _, info = read_table(path, header="yes")
    assert info["columns"] == ["1", "2"] and X.shape == (2, 2)


# ------------------------------------------------------------------------ bad input: exit 1
@pytest.mark.parametrize(
    "name,content,match",
    [
        ("ragged.csv", "x,y\n1,2\n3\n4,5\n", "line 3 has 1 fields but line 1 has 2"),
        ("text.csv", "x,y\n1,2\n3,4\n5,abc\n", "line 4, column 'y': 'abc', not a number"),
        ("empty.csv", "", "is empty: no rows"),
        ("blank.csv", "\n\n  \n", "is empty: no rows"),
        ("header_only.csv", "x,y\n", "has a header but no data rows"),
        ("hole.csv", "x,y\n1,2\n3,\n5,6\n", "line 3, column 'y': an empty field"),
        ("nan.csv", "x,y\n1,2\n3,nan\n5,6\n", "line 3, column 'y': 'nan' is not a finite"),
        ("binary.csv", b"\xff\xfe\x00\x81garbage", "is not a UTF-8 text table"),
        ("few.csv", "x,y\n1,2\n3,4\n", "has 2 data row"),
        ("semicolon.csv", "x;y\n1;2\n3;4\n5;6\n", "give --delimiter ';'"),
    ],
)
def test_malformed_tables_fail_cleanly(workdir, capsys, name, content, match):
    path = workdir / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = files(workdir)
    assert main(["cluster", name]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("graphclust: error: ")
    assert match in err
    assert files(workdir) == before  # nothing written


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda d: np.save(d / "v.npy", np.arange(5.0)), "needs a 2-D"),
        (lambda d: np.save(d / "v.npy", np.array([["a", "b"], ["c", "d"]])), "needs numbers"),
        (lambda d: np.save(d / "v.npy", np.array([[1.0, np.inf], [1, 2], [3, 4]])),
         "row 0, column 1 is not a finite"),
    ],
)
def test_bad_npy(workdir, capsys, make, match):
    make(workdir)
    assert main(["cluster", "v.npy"]) == 1
    assert match in capsys.readouterr().err


def test_missing_file_directory_and_bad_label_column(workdir, capsys):
    assert main(["cluster", "nope.csv"]) == 1
    assert "No such file" in capsys.readouterr().err
    (workdir / "adir").mkdir()
    assert main(["cluster", "adir"]) == 1
    assert "is a directory" in capsys.readouterr().err
    write_csv(workdir / "b.csv", *three_blobs())
    assert main(["cluster", "b.csv", "--label-column", "klass"]) == 1
    assert "--label-column 'klass' is not a column" in capsys.readouterr().err
    assert main(["cluster", "b.csv", "-o", "no/such/dir/out"]) == 1
    assert "directory no/such/dir does not exist" in capsys.readouterr().err


def test_failed_write_leaves_nothing(workdir, capsys, monkeypatch):
    import graphclust.plots as plots

    def broken(*a, **k):
        raise RuntimeError("the plot broke")

    monkeypatch.setattr(plots, "plot_clusters", broken)
    X, _ = three_blobs()
    write_csv(workdir / "b.csv", X)
    assert main(["cluster", "b.csv", "--plot", "b.png", "--n-neighbors", "8", *FAST]) == 1
    assert "RuntimeError: the plot broke" in capsys.readouterr().err
    assert files(workdir) == ["b.csv"]  # no labels, no report, no temporary file


def test_missing_matplotlib_says_which_extra(workdir, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    write_csv(workdir / "b.csv", *three_blobs())
    assert main(["cluster", "b.csv", "--plot", "b.png"]) == 1
    assert "pip install graphclust[plot]" in capsys.readouterr().err
    assert files(workdir) == ["b.csv"]


# ------------------------------------------------------------------------ usage errors: exit 2
@pytest.mark.parametrize(
    "argv,match",
    [
        (["--clusterer", "kmeans"], "--clusterer kmeans needs --n-clusters N"),
        (["--clusterer", "kmeans", "--n-clusters", "3", "--kernel", "consistency"],
         "--alpha auto is searched"),
        (["--kernel", "njw"], "--kernel njw clusters by k-means (--clusterer kmeans), which"),
        (["--kernel", "njw", "--clusterer", "seeds"],
         "--kernel njw works with --clusterer kmeans only"),
        (["--graph", "epsilon"], "--graph epsilon needs --radius R"),
        (["--radius", "1.0"], "--radius applies to --graph epsilon only"),
        (["--kernel", "ahk", "--alpha", "0.9"], "--alpha applies to --kernel consistency"),
        (["--graph", "pmst", "--n-trees", "2.5"], "--graph pmst needs an integer --n-trees"),
        (["--n-trees", "3"], "--n-trees applies to --graph pmst or dmst only"),
    ],
)
def test_option_combinations_are_usage_errors(workdir, capsys, argv, match):
    write_csv(workdir / "b.csv", *three_blobs())
    assert main(["cluster", "b.csv", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1
    assert files(workdir) == ["b.csv"]


@pytest.mark.parametrize(
    "argv",
    [["--no-such-option"], ["--n-clusters", "many"], ["--graph", "tree"],
     ["--sigma-grid", "a,b"], []],
)
def test_argparse_usage_errors_exit_2(argv, capsys):
    args = ["cluster", "b.csv", *argv] if argv else ["cluster"]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "usage: graphclust" in capsys.readouterr().err


def test_help_reads_well(capsys):
    with pytest.raises(SystemExit) as info:
        main(["cluster", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for text in ("DATA", "--label-column", "--graph", "--kernel", "--clusterer", "--plot",
                 "--quiet", "exit codes: 0 success, 2 usage error, 1 failure"):
        assert text in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "cluster" in capsys.readouterr().out


# ------------------------------------------------------------------------ progress and quiet
def split_blobs(workdir):
    X, _ = three_blobs()
    X[20:40] += 40.0  # far apart: the kNN graph splits and is joined with a warning
    write_csv(workdir / "s.csv", X)


def test_warnings_one_line_each_and_quiet(workdir, capsys):
    split_blobs(workdir)
    assert main(["cluster", "s.csv", "--n-neighbors", "5", *FAST]) == 0
    err = capsys.readouterr().err
    assert err.startswith("graphclust: warning: the knn_graph of the data has")
    assert all(line.startswith("graphclust: warning: ") for line in err.splitlines())
    assert main(["cluster", "s.csv", "--n-neighbors", "5", "--quiet", *FAST]) == 0
    assert capsys.readouterr().err == ""


def test_progress_only_on_a_terminal(workdir, capsys, monkeypatch):
    write_csv(workdir / "b.csv", three_blobs()[0])
    assert main(["cluster", "b.csv", "--n-neighbors", "8", *FAST]) == 0
    err = capsys.readouterr().err  # captured stderr is not a terminal: warnings only
    assert "done in" not in err and "graphclust: reading" not in err

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(["cluster", "b.csv", "--n-neighbors", "8", *FAST]) == 0
    text = fake.getvalue()
    assert "graphclust: reading b.csv ... done in" in text
    assert "graphclust: graph KNNGraph(" in text
    assert "graphclust: searching 2 sigma x 2 alpha x c in 2..4" in text
    assert "graphclust: sigma 2/2 = " in text and ": spectrum of S ... done in" in text
    assert "seeds and Omega for c = 2..4 ... done in" in text
    assert "graphclust: final fit at sigma = " in text
    assert "graphclust: writing b.labels.csv, b.report.json ... done in" in text
    fake2 = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake2)
    assert main(["cluster", "b.csv", "--quiet", "--n-neighbors", "8", *FAST]) == 0
    assert fake2.getvalue() == ""


def test_read_table_errors_are_value_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,y\n1,2\n")
    with pytest.raises(DataError, match="--label-column 5 is out of range for 2 columns"):
        read_table(path, label_column=5)
    with pytest.raises(ValueError, match="no feature column is left"):
        (tmp_path / "one.csv").write_text("a\n1\n2\n")
        read_table(tmp_path / "one.csv", label_column="a")


def test_n_neighbors_auto_reports_the_graph_search(workdir, capsys):
    X, y = three_blobs()
    write_csv(workdir / "blobs.csv", X, y)
    assert main(["cluster", "blobs.csv", "--label-column", "class", "--n-neighbors", "auto",
                 *FAST]) == 0
    report = json.loads((workdir / "blobs.report.json").read_text())
    chosen = report["chosen"]
    assert sorted(chosen["omega_by_n_neighbors"]) == ["10", "20", "5"]
    best = max(chosen["omega_by_n_neighbors"], key=chosen["omega_by_n_neighbors"].get)
    assert chosen["n_neighbors"] == int(best)
    assert report["pipeline"]["graph"]["n_neighbors"] == "auto"
