"""Real tables from outside the development sets and the battery: loaders for an untuned check.

Sixteen labelled UCI tables that no default of graphclust was chosen on, read from checkouts of
two public repositories in a folder named by ``GRAPHCLUST_TABLES``:

- ``clustering-benchmark/``: github.com/deric/clustering-benchmark (ARFF files under
  ``src/main/resources/datasets/real-world/``);
- ``Datasets/``: github.com/jbrownlee/Datasets (CSV files; ``weka-datasets.zip`` read in place).

The same collection's artificial point sets (mostly planar shapes; those the battery holds
too are left out) are ``shapes:<name>``, or ``shapes`` for all of them. A table is
``tables:<name>`` (every feature standardised to mean 0 and variance 1, as a user
clusters a table whose columns have different units; the peers get the same matrix) or
``tables-raw:<name>`` (the features as stored); ``tables`` or ``tables-raw`` alone stands for
all of them. Only numeric columns (and nominal ones whose values are numbers) are features;
rows with a missing value and constant columns are left out; the labels are the class column.

    GRAPHCLUST_TABLES=/path/to/folder python scripts/bench_model_selection.py --sets tables \
        --methods stability,leiden,hdbscan,umap_hdbscan --out tables.jsonl
"""

import io
import os
import zipfile

import numpy as np

ARFF = "clustering-benchmark/src/main/resources/datasets/real-world/"
CSV = "Datasets/"

# name -> (file under the folder, the class column: an index for CSV; for ARFF (None) the
# last attribute named class in any case, else the last attribute)
SETS = {
    "wheat_seeds": (CSV + "wheat-seeds.csv", -1),
    "new_thyroid": (CSV + "new-thyroid.csv", -1),
    "banknote": (CSV + "banknote_authentication.csv", -1),
    "pima": (CSV + "weka-datasets.zip:data/diabetes.arff", None),
    "segment": (ARFF + "segment.arff", None),
    "dermatology": (ARFF + "dermatology.arff", None),
    "vehicle": (ARFF + "vehicle.arff", None),
    "vowel": (ARFF + "vowel.arff", None),
    "zoo": (ARFF + "zoo.arff", None),
    "heart_statlog": (ARFF + "heart-statlog.arff", None),
    "haberman": (ARFF + "haberman.arff", None),
    "balance_scale": (ARFF + "balance-scale.arff", None),
    "tae": (ARFF + "tae.arff", None),
    "wisc": (ARFF + "wisc.arff", None),
    "german": (ARFF + "german.arff", None),
    "arrhythmia": (ARFF + "arrhythmia.arff", None),
}


SHAPES = "clustering-benchmark/src/main/resources/datasets/artificial/"
# the artificial sets that the battery holds too (sipu, fcps, the chameleon sets as cluto-*),
# and the large geographic and BIRCH ones
SHAPES_LEFT_OUT = {
    "3-spiral", "D31", "R15", "aggregation", "atom", "chainlink", "compound", "engytime",
    "flame", "hepta", "jain", "lsun", "pathbased", "target", "tetra", "twodiamonds", "wingnut",
    "s-set1", "s-set2", "s-set3", "s-set4", "cluto-t4-8k", "cluto-t5-8k", "cluto-t7-10k",
    "cluto-t8-8k", "birch-rg1", "birch-rg2", "birch-rg3", "mopsi-finland", "mopsi-joensuu"}


def _root():
    root = os.environ.get("GRAPHCLUST_TABLES")
    if not root:
        raise SystemExit("tables need GRAPHCLUST_TABLES: a folder holding checkouts of "
                         "github.com/deric/clustering-benchmark and github.com/jbrownlee/Datasets")
    return root


def expand(name):
    """``tables`` / ``tables-raw`` / ``shapes`` -> every set's name with that prefix; other
    names as given."""
    if name == "shapes":
        files = sorted(os.listdir(os.path.join(_root(), SHAPES)))
        return [f"shapes:{f[:-5]}" for f in files
                if f.endswith(".arff") and f[:-5] not in SHAPES_LEFT_OUT]
    return [f"{name}:{s}" for s in SETS] if name in ("tables", "tables-raw") else [name]


def load(name):
    """(X, y) of ``tables:<name>`` (standardised), ``tables-raw:<name>`` or ``shapes:<name>``
    (the collection's artificial sets, as stored; a class named noise counts as a class)."""
    kind, key = name.split(":", 1)
    root = _root()
    if kind == "shapes":
        X, y = _arff(os.path.join(root, SHAPES, key + ".arff"), None)
        return X, np.unique(y, return_inverse=True)[1]
    if key not in SETS:
        raise SystemExit(f"unknown table {key!r}; choose from {sorted(SETS)}")
    path, label = SETS[key]
    X, y = (_arff if path.split(":")[0].endswith((".arff", ".zip")) else _csv)(
        os.path.join(root, path), label)
    keep = ~np.isnan(X).any(axis=1)
    X, y = X[keep], np.unique(y[keep], return_inverse=True)[1]
    X = X[:, X.std(axis=0) > 0]
    if kind == "tables":
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


def _csv(path, label):
    A = np.genfromtxt(path, delimiter=",")
    return np.delete(A, label % A.shape[1], axis=1), A[:, label]


def _arff(path, label=None):
    """(features, classes) of an ARFF file (``archive.zip:member`` read in place); its class
    column is found by name (`SETS`), `label` is the CSV reader's and unused here."""
    from scipy.io import arff

    if ".zip:" in path:
        archive, member = path.split(":", 1)
        with zipfile.ZipFile(archive) as z:
            data, meta = arff.loadarff(io.StringIO(z.read(member).decode()))
    else:
        data, meta = arff.loadarff(path)
    names = meta.names()
    label = next((n for n in reversed(names) if n.lower() == "class"), names[-1])
    cols = [_numeric(data[n], meta[n][0]) for n in names if n != label]
    return np.column_stack([c for c in cols if c is not None]), np.asarray(data[label])


def _numeric(values, kind):
    """A column as floats (NaN for '?'), or None when its values are not numbers."""
    if kind == "numeric":
        return np.asarray(values, dtype=np.float64)
    try:  # nominal with numbers for values (dermatology's grades 0-3, zoo's 0 / 1)
        return np.array([np.nan if v in (b"?", "?") else float(v) for v in values])
    except ValueError:
        return None
