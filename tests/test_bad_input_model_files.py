"""Edited or damaged model files: every one is a ValueError naming the file and what is wrong,
never a wrong value or a raw KeyError / TypeError (values are checked on load)."""

import json

import numpy as np
import pytest

import graphclust as gc
from graphclust._persistence import write_model_file


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 0.3, (n_per, 2)), rng.normal(4, 0.3, (n_per, 2))])


FITS = {
    "consistency": lambda X: gc.ConsistencyClustering(2, alpha=0.99, sigma=1.0, n_neighbors=6,
                                                      random_state=0).fit(X),
    "spectral": lambda X: gc.SpectralClustering(2, n_neighbors=6, random_state=0).fit(X),
    "ahk": lambda X: gc.AHKClustering(2, n_neighbors=6, random_state=0).fit(X),
    "pipeline": lambda X: gc.Pipeline(gc.KNNGraph(6), gc.ConsistencyStage(0.99, sigma=1.0),
                                      gc.ConsistencySeeds(2), random_state=0).fit(X),
}
LOADERS = {"consistency": gc.ConsistencyClustering, "spectral": gc.SpectralClustering,
           "ahk": gc.AHKClustering, "pipeline": gc.Pipeline}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X = blobs()
    folder = tmp_path_factory.mktemp("models")
    return {name: fit(X).save(folder / f"{name}.npz") for name, fit in FITS.items()}


def _edit(src, dst, edit):
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays.pop("meta_json")).decode())
    edit(arrays, meta)
    write_model_file(dst, arrays, meta)
    return dst


def _unknown_param(a, m):
    m["params"]["bogus_param"] = 3


def _drop(name):
    def edit(a, m):
        a.pop(name)
    return edit


def _meta(key, value, inside=None):
    def edit(a, m):
        (m[inside] if inside else m)[key] = value
    return edit


def _nan(name):
    def edit(a, m):
        a[name] = a[name].astype(float)
        a[name].flat[0] = np.nan
    return edit


def _strings(a, m):
    a["labels_"] = a["labels_"].astype(str)


def _bad_label(a, m):
    a["labels_"] = a["labels_"].copy()
    a["labels_"][0] = 7


CASES = [
    ("consistency", _unknown_param, "unknown ConsistencyClustering parameter"),
    ("consistency", _drop("inlierness_"), r"arrays \['inlierness_'\] are missing"),
    ("consistency", _meta("sigma_", float("nan")), "sigma_ = nan is not a float"),
    ("consistency", _meta("sigma_", -1.0), "sigma_ = -1.0 is not > 0"),
    ("consistency", _meta("alpha_", 1.5), "alpha_ = 1.5 is outside"),
    ("consistency", _nan("predict_H"), "predict_H holds NaN"),
    ("consistency", _strings, "labels_ holds <U"),
    ("consistency", _bad_label, "labels_ holds values outside"),
    ("consistency", _meta("n_clusters_", "two"), "n_clusters_ = 'two' is not a int"),
    ("consistency", _meta("fit_kind", "bogus"), "fit_kind = 'bogus'"),
    ("consistency", _meta("params", None), "parameters are not a mapping"),
    ("spectral", _unknown_param, "unknown SpectralClustering parameter"),
    ("spectral", _nan("ext_vectors"), "ext_vectors holds NaN"),
    ("spectral", _strings, "labels_ holds <U"),
    ("spectral", _meta("sigma_", float("nan"), inside="fitted"), "sigma_ = nan"),
    ("spectral", _meta("fitted", {}), "fitted values"),
    ("ahk", _unknown_param, "unknown AHKClustering parameter"),
    ("ahk", _meta("normalization", "bogus"), "normalization = 'bogus'"),
    ("pipeline", _meta("params", None), r"its stages \(params\) are missing"),
    ("pipeline", lambda a, m: m["params"]["kernel"]["params"].update(bogus=1),
     "unknown ConsistencyStage parameter"),
    ("pipeline", _strings, "labels_ holds <U"),
    ("pipeline", _meta("sigma_", float("nan")), "sigma_ = nan"),
]


@pytest.mark.parametrize("kind,edit,match", CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)])
def test_damaged_files_are_refused_with_the_file_and_the_field(saved, tmp_path, kind, edit,
                                                               match):
    bad = _edit(saved[kind], tmp_path / "edited.npz", edit)
    with pytest.raises(ValueError, match=match) as err:
        LOADERS[kind].load(bad)
    assert "edited.npz" in str(err.value)


@pytest.mark.parametrize("kind", sorted(FITS))
def test_untouched_files_load(saved, kind):
    model = LOADERS[kind].load(saved[kind])
    assert len(np.unique(model.labels_)) == 2
