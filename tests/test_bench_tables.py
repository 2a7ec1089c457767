"""`scripts/external_tables.py` through `scripts/bench_model_selection.py`: the real tables and
artificial shapes outside the battery, read from small stand-ins of the two collections."""

import zipfile

import numpy as np
import pytest
from conftest import load_script

ZOO = """@relation zoo
@attribute animal {aardvark,bass,crow,deer,eagle}
@attribute hair {0,1}
@attribute legs numeric
@attribute always numeric
@attribute weight numeric
@attribute class {mammal,bird,fish}
@data
aardvark,1,4,7,30,mammal
bass,0,0,7,?,fish
crow,0,2,7,0.5,bird
deer,1,4,7,80,mammal
eagle,0,2,7,4,bird
"""

DIABETES = """@relation pima
@attribute preg numeric
@attribute plas numeric
@attribute class {tested_negative,tested_positive}
@data
1,85,tested_negative
8,183,tested_positive
1,89,tested_negative
"""

SHAPE = """@relation toy
@attribute x REAL
@attribute y REAL
@attribute CLASS {1,2}
@data
0,0,1
0,1,1
5,5,2
"""


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_model_selection")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    real = tmp_path / "clustering-benchmark/src/main/resources/datasets/real-world"
    real.mkdir(parents=True)
    (real / "zoo.arff").write_text(ZOO)
    shapes = real.parent / "artificial"
    shapes.mkdir()
    (shapes / "toy.arff").write_text(SHAPE)
    (shapes / "jain.arff").write_text(SHAPE)  # in the battery too: left out
    csv = tmp_path / "Datasets"
    csv.mkdir()
    (csv / "wheat-seeds.csv").write_text("15.2,14.8,1\n14.9,14.6,1\n17.6,15.9,2\n")
    with zipfile.ZipFile(csv / "weka-datasets.zip", "w") as z:
        z.writestr("data/diabetes.arff", DIABETES)
    monkeypatch.setenv("GRAPHCLUST_TABLES", str(tmp_path))
    return tmp_path


def test_a_table_is_standardised_and_as_stored(bench, folder):
    X, y, metric = bench.load("tables:zoo")
    # the row with a missing weight is left out; so is the constant column; hair (nominal
    # 0 / 1) is a feature, the animal's name (nominal, no numbers) and the class are not
    assert X.shape == (4, 3) and metric == "euclidean"
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1)
    assert y.tolist() == [1, 0, 1, 0]  # bird 0, mammal 1, in sorted order
    raw, y_raw, _ = bench.load("tables-raw:zoo")
    np.testing.assert_array_equal(raw, [[1, 4, 30], [0, 2, 0.5], [1, 4, 80], [0, 2, 4]])
    np.testing.assert_array_equal(y_raw, y)


def test_csv_tables_and_a_member_of_an_archive(bench, folder):
    X, y, _ = bench.load("tables-raw:wheat_seeds")
    np.testing.assert_array_equal(X, [[15.2, 14.8], [14.9, 14.6], [17.6, 15.9]])
    assert y.tolist() == [0, 0, 1]
    X, y, _ = bench.load("tables-raw:pima")  # read inside weka-datasets.zip
    assert X.shape == (3, 2) and y.tolist() == [0, 1, 0]


def test_shapes_expand_without_the_batterys_sets(bench, folder):
    assert bench.expand_sets(["shapes", "usps"]) == ["shapes:toy", "usps"]
    X, y, _ = bench.load("shapes:toy")
    assert X.shape == (3, 2) and y.tolist() == [0, 0, 1]
    assert bench.expand_sets(["tables"])[:2] == ["tables:wheat_seeds", "tables:new_thyroid"]


def test_what_is_missing_is_named(bench, folder, monkeypatch):
    with pytest.raises(SystemExit, match="unknown table 'iris'"):
        bench.load("tables:iris")
    monkeypatch.delenv("GRAPHCLUST_TABLES")
    with pytest.raises(SystemExit, match="GRAPHCLUST_TABLES"):
        bench.load("tables:zoo")
