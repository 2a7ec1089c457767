"""Data: loaders of the real benchmark sets (from `data_dir()`) and seeded synthetic generators."""

from ._paths import DataNotFoundError, data_dir
from ._real import (
    load_letters,
    load_mnist,
    load_network,
    load_newsgroups,
    load_pendigits,
    load_synthetic_control,
    load_usps,
)
from ._synthetic import three_moons, three_spirals, two_moons, two_spirals
from ._noise import add_uniform_noise, load_iris_noisy

__all__ = sorted(
    [
        "add_uniform_noise",
        "load_iris_noisy",
        "DataNotFoundError",
        "data_dir",
        "load_letters",
        "load_mnist",
        "load_network",
        "load_newsgroups",
        "load_pendigits",
        "load_synthetic_control",
        "load_usps",
        "three_moons",
        "three_spirals",
        "two_moons",
        "two_spirals",
    ]
)
