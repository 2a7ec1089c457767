"""The splitmix64 finaliser, shared by every hash the package computes inside numba kernels.

NN-descent's random choices (`graphs._nndescent`: a hash of seed, point, neighbour and
iteration) and the canonical row order (`cluster._row_order`: a hash of a row's non-zeros) both
need a well-spread 64-bit mix of a 64-bit integer; this is the one implementation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["splitmix64", "GOLDEN"]

#: 2^64 / golden ratio, splitmix64's increment (odd, well-spread bits).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def splitmix64(x):
    """splitmix64's finaliser (Steele, Lea & Flood 2014): every input bit moves every output bit.

    Examples
    --------
    >>> import numpy as np
    >>> int(splitmix64(np.uint64(0))), int(splitmix64(np.uint64(1))) != 1
    (0, True)
    """
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))
