"""Loaders of the real benchmark sets (files under `data_dir()`; nothing is downloaded)."""

from __future__ import annotations

import numpy as np

from ._paths import data_file

__all__ = [
    "load_usps",
    "load_pendigits",
    "load_letters",
    "load_mnist",
    "load_synthetic_control",
    "load_newsgroups",
    "load_network",
]


def load_usps():
    """USPS digits: ``(x_train (7291, 256), y_train, x_test (2007, 256), y_test)``, values in [0, 1].

    Labels are the digits 0-9 as stored in ``usps.npz``.
    """
    with np.load(data_file("usps", "usps.npz"), allow_pickle=False) as z:
        return (
            z["x_train"].astype(np.float64),
            z["y_train"].astype(np.int64).ravel(),
            z["x_test"].astype(np.float64),
            z["y_test"].astype(np.int64).ravel(),
        )


def load_pendigits(split="train"):
    """UCI pen digits: ``(X (n, 16), y)``; split ``"train"`` (7494) or ``"test"`` (3498)."""
    name = {"train": "pendigits.tra", "test": "pendigits.tes"}[split]
    data = np.loadtxt(data_file("pendigits", name), delimiter=",")
    return data[:, :-1], data[:, -1].astype(np.int64)


def load_letters():
    """UCI letter recognition: ``(X (20000, 16), y)`` with y = 0..25 for A..Z."""
    path = data_file("letter_recognition", "letter-recognition.data")
    letters = np.loadtxt(path, delimiter=",", usecols=0, dtype=str)
    X = np.loadtxt(path, delimiter=",", usecols=range(1, 17))
    y = np.array([ord(c) - ord("A") for c in letters], dtype=np.int64)
    return X, y


def load_mnist(split="all"):
    """MNIST as flat float arrays in [0, 1]: ``(X (n, 784), y)``; split train, test or all (70 000)."""
    with np.load(data_file("mnist", "mnist.npz"), allow_pickle=False) as z:
        parts = {"train": ["train"], "test": ["test"], "all": ["train", "test"]}[split]
        X = np.concatenate([z[f"x_{p}"].reshape(len(z[f"x_{p}"]), -1) for p in parts])
        y = np.concatenate([z[f"y_{p}"].ravel() for p in parts]).astype(np.int64)
    return X.astype(np.float64) / 255.0, y


def load_synthetic_control():
    """UCI synthetic control charts: ``(X (600, 60), y)``, 6 classes of 100 in row order."""
    X = np.loadtxt(data_file("synthetic_control", "synthetic_control.data"))
    return X, np.arange(X.shape[0]) // 100


def load_newsgroups(version="w1000", split="train"):
    """20 Newsgroups bag of words (PMTK).

    ``w1000``: ``(X csr (n, 1000) word counts, y in 0..19, class_names)`` for split train or test.
    ``w100``: ``(X csr (16242, 100) binary, y in 0..3, group names)`` (one split).
    """
    from scipy.io import loadmat
    import scipy.sparse as sp

    if version == "w1000":
        m = loadmat(data_file("20newsgroups_pmtk", "20news_w1000.mat"))
        key = {"train": "train", "test": "test"}[split]
        X = sp.csr_matrix(m[f"{key}W"], dtype=np.float64)
        y = np.asarray(m[f"{key}C"].argmax(axis=1)).ravel().astype(np.int64)
        names = [str(np.asarray(c).ravel()[0]) for c in m["class_names"].ravel()]
        return X, y, names
    if version == "w100":
        m = loadmat(data_file("20newsgroups_pmtk", "20news_w100.mat"))
        X = sp.csr_matrix(m["documents"].T, dtype=np.float64)
        y = np.asarray(m["newsgroups"]).ravel().astype(np.int64) - 1
        names = [str(np.asarray(c).ravel()[0]) for c in m["groupnames"].ravel()]
        return X, y, names
    raise ValueError(f"version must be 'w1000' or 'w100'; got {version!r}.")


def load_network(name):
    """A small network as a networkx Graph: karate, football, polbooks or dolphins.

    Node attribute ``value`` (football: conference, polbooks: l/n/c) or ``club`` (karate) holds
    the ground truth where there is one.
    """
    import networkx as nx

    files = {
        "karate": ("karate", "karate_club.gml"),
        "football": ("football", "football.gml"),
        "polbooks": ("polbooks", "polbooks.gml"),
        "dolphins": ("dolphins", "dolphins.gml"),
    }
    if name not in files:
        raise ValueError(f"name must be one of {sorted(files)}; got {name!r}.")
    return nx.read_gml(data_file(*files[name]), label="id")
