"""The command line facing bad input: a usage error (exit 2) or one clear line (exit 1), named as
the user typed it, before any work; library warnings as one line, never with a source line."""

import numpy as np
import pytest

from graphclust.cli import main


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    pts = np.vstack([rng.normal(0, 0.3, (20, 2)), rng.normal(4, 0.3, (20, 2))])
    np.savetxt("pts.csv", pts, delimiter=",", header="a,b", comments="")
    np.save("complex.npy", pts + 1j)
    open("empty.csv", "w").close()
    return tmp_path


CASES = [
    (["demo", "--n-samples", "0"], 2, "argument --n-samples: expected an integer >= 1; got 0"),
    (["demo", "--seed", "-1"], 2, "argument --seed: expected an integer >= 0"),
    (["demo", "--max-clusters", "1"], 2, "argument --max-clusters: expected an integer >= 2"),
    (["embed", "swiss_roll", "--graph", "knn", "--param", "2.7"], 1,
     "--param 2.7: --graph knn takes an integer k >= 1"),
    (["embed", "swiss_roll", "--graph", "knn", "--param", "0"], 1,
     "--param 0: --graph knn takes an integer k >= 1"),
    (["embed", "swiss_roll", "--n-landmarks", "abc"], 2,
     "argument --n-landmarks: expected an integer >= 1 or one of auto, none"),
    (["embed", "swiss_roll", "--n-samples", "0"], 2, "argument --n-samples"),
    (["cluster", "complex.npy", "--quiet"], 1, "complex.npy holds complex numbers"),
    (["cluster", "empty.csv"], 1, "empty.csv is empty"),
    (["cluster", "pts.csv", "--save-model", "missing/m.npz"], 1,
     "--save-model missing/m.npz: directory missing does not exist"),
    (["cluster", "pts.csv", "--plot", "missing/p.png"], 1,
     "--plot missing/p.png: directory missing does not exist"),
    (["cluster", "pts.csv", "--max-clusters", "50"], 1,
     "--max-clusters must satisfy 2 <= max_clusters <= n_samples = 40"),
    (["cluster", "pts.csv", "--seed", "-3"], 2, "argument --seed: expected an integer >= 0"),
    (["communities", "karate", "--show", "-1"], 2, "argument --show"),
    (["cluster", "pts.csv", "--delimiter", ""], 1,
     "--delimiter must be one character (or 'tab'); got ''"),
    # every subcommand checks where it will write before it works, not after
    (["communities", "karate", "--output", "missing/c.tsv"], 1,
     "--output missing/c.tsv: directory missing does not exist"),
    (["segment", "any.png", "--labels", "missing/l.npy"], 1,
     "--labels missing/l.npy: directory missing does not exist"),
    (["segment", "any.png", "--overlay", "missing/o.png"], 1,
     "--overlay missing/o.png: directory missing does not exist"),
    (["embed", "swiss_roll", "--output", "missing/e.npy"], 1,
     "--output missing/e.npy: directory missing does not exist"),
    # a table of points is no edge list: its header became an edge, its coordinates nodes
    (["communities", "pts.csv"], 1, "so it reads as a table of point coordinates, not a network"),
]


@pytest.mark.parametrize("argv,code,message", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_gives_one_clear_line(files, capsys, argv, code, message):
    if code == 2:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    else:
        assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_embed_reads_a_csv_header_as_cluster_does(files, capsys):
    assert main(["embed", "pts.csv", "--graph", "mst"]) == 0
    assert "40 points in 2-D" in capsys.readouterr().out


def test_library_warnings_are_one_line(files, capsys):
    # the demo with the papers' criterion: three moons of 600 points split into 3 kNN
    # components, which the estimator joins with a ConsistencyWarning
    assert main(["demo", "--criterion", "omega", "--output", "none"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("graphclust: warning: ") for ln in lines), err
    assert "connected components" in err
