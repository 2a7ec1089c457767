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
from ._images import (
    ELLIPSE_NOISE,
    SWISS_ROLL_NOISE,
    ellipse_geodesics,
    noisy_ellipse,
    occluder_image,
    swiss_roll,
    swiss_roll_geodesics,
)
from ._bsds import bsds_ids, load_bsds
from ._networks import lfr_graph
from ._infinite_mnist import cache_dir, load_infinite_mnist

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
__all__ += sorted(
    [
        "ELLIPSE_NOISE",
        "SWISS_ROLL_NOISE",
        "bsds_ids",
        "cache_dir",
        "ellipse_geodesics",
        "lfr_graph",
        "load_bsds",
        "load_infinite_mnist",
        "noisy_ellipse",
        "occluder_image",
        "swiss_roll",
        "swiss_roll_geodesics",
    ]
)
