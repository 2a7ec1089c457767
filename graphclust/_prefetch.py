"""A software prefetch for the numba kernels that read arrays at random positions.

The Leiden local moves read, for every node they visit, the community of each neighbour: on
a graph of 10^6 nodes most of those reads miss every cache, and the next node's reads cannot
start before the current node's decision, which depends on them. The visiting order is known
in advance (a queue), so a kernel can ask for the next nodes' rows and their neighbours'
entries a few visits ahead (`prefetch`), and the memory latency overlaps the current work
(docs/scaling.md, *Software prefetch in the local moves*). A prefetch is a hint: it changes no
value and never faults, so the kernels' results are bitwise those without it.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba import njit
from numba.extending import intrinsic

__all__ = ["prefetch", "prefetch_row"]


def _codegen(context, builder, signature, args):
    aryty = signature.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], signature.args[1:])]
    ptr = cgutils.get_item_pointer(context, builder, aryty, ary, inds, wraparound=False)
    i8p, i32 = ir.PointerType(ir.IntType(8)), ir.IntType(32)
    # the typed-pointer name; LLVM's auto-upgrade maps it to "llvm.prefetch.p0" where pointers
    # are opaque (LLVM >= 15), so one name serves numba's whole supported range
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8")
    # (address, rw = 0 read, locality = 3 keep in all levels, cache type = 1 data)
    builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                      ir.Constant(i32, 1)])
    return context.get_dummy_value()


@intrinsic
def prefetch(typingctx, arr, index):
    """Ask the CPU to bring ``arr[index]`` into the cache (LLVM's ``llvm.prefetch``: a read,
    high temporal locality, data cache). Only inside numba kernels; 1-d arrays, integer index.

    The index is not checked against the array's bounds; callers pass valid indices (an
    address outside the array would still not fault, but would waste the hint).

    Examples
    --------
    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def total(a):
    ...     s = 0.0
    ...     for i in range(a.size):
    ...         if i + 8 < a.size:
    ...             prefetch(a, i + 8)
    ...         s += a[i]
    ...     return s
    >>> total(np.arange(100.0))
    4950.0
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(index, types.Integer)):
        return None
    return types.void(arr, index), _codegen


@intrinsic
def _prefetch_2d(typingctx, arr, i, j):
    if not (isinstance(arr, types.Array) and arr.ndim == 2 and isinstance(i, types.Integer)
            and isinstance(j, types.Integer)):
        return None
    return types.void(arr, i, j), _codegen


@njit(cache=True, inline="always")
def prefetch_row(X, i):
    """`prefetch` every cache line of row i of a C-contiguous 2-d array (a point's
    coordinates, read whole by a distance)."""
    step = max(1, 64 // X.itemsize)
    for t in range(0, X.shape[1], step):
        _prefetch_2d(X, i, t)
    if X.shape[1]:
        _prefetch_2d(X, i, X.shape[1] - 1)  # a row that starts inside a line ends in one more
