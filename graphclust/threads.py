"""How many threads graphclust's hot loops use, decided inside the library.

Policy
------
A user calling ``fit`` should get the documented speed without setting environment variables.
Left alone, OpenBLAS starts one busy-waiting thread per logical CPU, numba one per logical CPU,
and a dense eigensolve that runs while (or right after) numba's parallel kernels have their
threads spinning oversubscribes the machine; on small shared machines this made BLAS calls many
times slower. So, around its hot loops (dense eigensolves, block Krylov products, numba kernels),
graphclust caps

- the BLAS / OpenMP pools (through threadpoolctl) and
- numba's parallel thread count

to one number, resolved in this order:

1. `set_num_threads(n)` called by the user (``None`` returns to the default);
2. the environment variable ``GRAPHCLUST_NUM_THREADS`` (a positive integer);
3. dynamic, re-read at every `limit_threads` entry: the physical cores available to this
   process (CPU affinity respected; hyper-threads do not speed up BLAS), minus the cores other
   processes keep busy, at least 1. The other processes' use is the busy CPU time of the CPUs
   this process may run on (/proc/stat) minus this process's own, over the time since the
   previous measurement (at least a second; the first starts at import and may be as short as
   `FIRST_WINDOW_S`, so that a fit started within a second of the imports is not judged by the
   load average of the jobs that have just ended). This is OpenMP's
   dynamic adjustment (``OMP_DYNAMIC``) without its flaw here: libgomp subtracts the load
   average, which counts this process's own threads, so a fit that kept both cores busy for a
   minute then took one. Where /proc/stat is not readable, the 1-minute load average minus
   this process's one thread is the estimate. Measured on a loaded 2-core machine, 2 BLAS
   threads made a dense eigensolve 5x and a block product 3x slower than 1 thread, while on an
   idle machine the cores are used.

numba is never asked for more threads than it was started with.

Outside `limit_threads` blocks nothing is changed: a user's own threadpoolctl limits and
environment variables (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``) keep their meaning, and an
explicit ``OPENBLAS_NUM_THREADS=1`` in the environment is an upper bound graphclust never raises
(threadpoolctl cannot give a pool more threads than it was started with).

Measured both ways in docs/reliability.md (scripts/bench_threads.py).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

__all__ = ["get_num_threads", "set_num_threads", "limit_threads", "one_blas_thread",
           "run_parallel", "ENV_VAR"]

ENV_VAR = "GRAPHCLUST_NUM_THREADS"

_user_threads = None  # set by set_num_threads


def _available_cores():
    """Physical cores usable by this process (logical CPUs in the affinity mask as a bound)."""
    try:
        logical = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        logical = os.cpu_count() or 1
    try:  # joblib ships with scikit-learn; it reads /proc or lscpu for the physical count
        from joblib import cpu_count

        physical = cpu_count(only_physical_cores=True)
    except Exception:  # pragma: no cover - joblib missing or unable to tell
        physical = logical
    return max(1, min(logical, physical))


def _check_count(value, source):
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{source} must be a positive integer number of threads; got {value!r}.")
    return int(value)


def set_num_threads(n):
    """Fix the number of threads of graphclust's hot loops (``None``: back to the default).

    Takes precedence over ``GRAPHCLUST_NUM_THREADS``. Returns the previous setting (an int or
    None) so that a caller can restore it.
    """
    global _user_threads
    previous = _user_threads
    _user_threads = None if n is None else _check_count(n, "n")
    return previous


def get_num_threads():
    """The thread count `limit_threads` applies: see the module's policy for the order."""
    if _user_threads is not None:
        n = _user_threads
    else:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            try:
                value = int(env)
            except ValueError:
                value = env
            n = _check_count(value, f"the environment variable {ENV_VAR}")
        else:
            n = _dynamic_threads()
    return n


#: Shortest window over which the other processes' CPU use is measured; a call sooner than this
#: after the last measurement reuses it.
MIN_WINDOW_S = 1.0
#: Shortest window of a process's first measurement (from the sample taken at import): 20
#: clock ticks of each CPU, a resolution of about 0.1 core on two.
FIRST_WINDOW_S = 0.2

_last_sample = None  # (system busy s, this process's CPU s, wall s) of the last measurement
_last_others = None  # the other processes' busy cores measured then


def _cpu_sample():
    """(busy CPU seconds of the CPUs this process may run on, CPU seconds of this process, wall
    seconds), or None where /proc/stat is not readable (not Linux).

    Only the CPUs of this process's affinity mask are summed (its per-CPU lines), so that
    processes busy on other CPUs (other containers' on a shared host) do not count.
    """
    try:
        allowed = {f"cpu{i}" for i in os.sched_getaffinity(0)}
    except (AttributeError, OSError):
        allowed = None
    try:
        busy = 0.0
        with open("/proc/stat") as f:
            for line in f:
                fields = line.split()
                if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
                    continue
                if allowed is not None and fields[0] not in allowed:
                    continue
                ticks = [float(x) for x in fields[1:9]]
                # user .. steal, without idle and iowait (guest time is already in user)
                busy += sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0.0)
        hz = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return busy / hz, time.process_time(), time.monotonic()


def _other_processes_busy():
    """Cores the other processes kept busy since the last measurement, or None if unknown.

    The machine's busy CPU time minus this process's own (every thread of it: numba's and
    OpenBLAS' workers included), over the wall time between two samples of at least
    MIN_WINDOW_S. The first sample is taken when this module is imported, and the first
    measurement of a process takes whatever window has passed since, if it is at least
    FIRST_WINDOW_S (waiting for the rest otherwise): a script fits within a second of its
    imports, and the load average it fell back to before counts the processes that have just
    ended. Right after a job that kept both cores of this project's machine busy, every fresh
    process got one thread on an idle machine (1-minute load 1.9), for its whole fit: the
    kNN lists of 250 000 points took 20 s instead of 11 (docs/scaling.md).
    """
    global _last_sample, _last_others
    now = _cpu_sample()
    if now is None:
        return None
    if _last_sample is None:  # the sample taken at import
        _last_sample = now
        return None
    wall = now[2] - _last_sample[2]
    if _last_others is None:  # the first measurement
        if wall < FIRST_WINDOW_S:
            time.sleep(FIRST_WINDOW_S - wall)
            now = _cpu_sample()
            if now is None:
                return None
            wall = now[2] - _last_sample[2]
    elif wall < MIN_WINDOW_S:
        return _last_others
    if wall <= 0:
        return _last_others
    others = ((now[0] - _last_sample[0]) - (now[1] - _last_sample[1])) / wall
    _last_sample, _last_others = now, max(others, 0.0)
    return _last_others


def _dynamic_threads():
    """Physical cores minus those other processes keep busy, >= 1.

    What the other processes use is measured from the machine's CPU accounting minus this
    process's own (`_other_processes_busy`). The 1-minute load average, used where that is not
    available, counts this process's own threads too: a fit running two threads on two cores
    pushed it to 2 within a minute, and the next `limit_threads` entry then gave one thread to
    an otherwise idle machine (docs/scaling.md). It is the fallback, with this process counted
    as one thread.
    """
    cores = _available_cores()
    try:
        logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    except (AttributeError, OSError):
        logical = os.cpu_count()
    logical = logical or 1
    others = _other_processes_busy()
    if others is None:
        try:
            others = max(os.getloadavg()[0] - 1.0, 0.0)
        except (AttributeError, OSError):  # no load average on this platform
            return cores
    free = int(round(logical - others))
    return max(1, min(cores, free))


def _numba_cap(n):
    try:
        import numba

        return max(1, min(n, numba.config.NUMBA_NUM_THREADS))
    except Exception:  # pragma: no cover
        return None


@contextmanager
def limit_threads(n=None):
    """Context manager: BLAS/OpenMP pools and numba limited to `n` (default `get_num_threads()`).

    Restores the previous limits on exit, also after an exception. Nested blocks work (the inner
    limit applies inside it). Yields the thread count in force.

    Examples
    --------
    >>> from graphclust.threads import limit_threads
    >>> with limit_threads(1) as n:
    ...     n
    1
    """
    from threadpoolctl import threadpool_limits

    n = get_num_threads() if n is None else _check_count(n, "n")
    numba_n = _numba_cap(n)
    previous_numba = None
    if numba_n is not None:
        import numba

        previous_numba = numba.get_num_threads()
        numba.set_num_threads(numba_n)
    try:
        with threadpool_limits(limits=n):
            yield n
    finally:
        if previous_numba is not None:
            import numba

            numba.set_num_threads(previous_numba)


_pools = {}
_blas_controller = None
_in_task = threading.local()


def _blas():
    """The process's threadpoolctl controller (found once: finding the pools costs ms)."""
    global _blas_controller
    if _blas_controller is None:
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController()
    return _blas_controller


def one_blas_thread():
    """Context manager: the BLAS pools at one thread inside it (a few microseconds to enter).

    For runs of small BLAS calls between other work: ARPACK's vector updates, the dense
    products of a block Krylov method on blocks of a few thousand rows. A second BLAS thread
    does not speed such calls up, and right after one of numba's parallel kernels, whose
    threads still spin, it slows them several times over (a 4 811 x 60 block's ``X^T X``:
    0.65 ms on one thread, 4.6 ms on two; docs/scaling.md). One thread also gives the same
    rounding whatever the thread count.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.threads import one_blas_thread
    >>> with one_blas_thread():
    ...     float(np.ones(3) @ np.ones(3))
    3.0
    """
    return _blas().limit(limits=1, user_api="blas")


def run_parallel(tasks):
    """Call every callable of `tasks` over `get_num_threads()` threads; their results, in order.

    For work whose time is spent outside the GIL (BLAS, scipy's sparse products, numba's nogil
    kernels). Of two or more tasks each runs with one BLAS thread, so that the tasks, not BLAS,
    share the cores, and so that a task's result does not depend on how many threads there
    are: also when they run one after the other (one thread, or other processes keeping the
    cores busy while `limit_threads` left BLAS more than one; the chunked products of
    `kernels` then gave other roundings under load). A single task runs as called. Tasks are
    started in the given order (put the longest first). A call from inside a task runs its own
    tasks in that thread, so no pool ever waits on itself.

    Examples
    --------
    >>> from graphclust.threads import run_parallel
    >>> run_parallel([lambda i=i: i * i for i in range(4)])
    [0, 1, 4, 9]
    """
    tasks = list(tasks)
    if len(tasks) <= 1 or getattr(_in_task, "active", False):
        return [t() for t in tasks]  # inside a task BLAS is at one thread already
    threads = min(get_num_threads(), len(tasks))
    if threads <= 1:
        with one_blas_thread():
            return [t() for t in tasks]
    pool = _pools.get(threads)
    if pool is None:
        pool = _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="graphclust")

    def call(task):
        _in_task.active = True
        try:
            return task()
        finally:
            _in_task.active = False

    with one_blas_thread():
        return [f.result() for f in [pool.submit(call, t) for t in tasks]]


_other_processes_busy()  # the first sample: the window of the first call starts at import
