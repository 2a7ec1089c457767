"""The threading policy of graphclust.threads: resolution order, limits applied and restored."""

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from graphclust import threads as _threads
from graphclust.threads import ENV_VAR, get_num_threads, limit_threads, set_num_threads


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    previous = set_num_threads(None)
    yield
    set_num_threads(previous)


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.mark.parametrize("load, expected", [(0.0, 4), (1.0, 4), (2.4, 3), (3.6, 1), (12.0, 1)])
def test_without_cpu_accounting_the_default_is_the_cores_minus_the_load(monkeypatch, load,
                                                                        expected):
    # where /proc/stat is not readable: 4 logical = 4 physical cores, this process counts for 1
    # of the load
    monkeypatch.setattr(_threads, "_available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(_threads, "_cpu_sample", lambda: None)
    assert get_num_threads() == expected


@pytest.mark.parametrize("machine, own, expected", [
    (0.0, 0.0, 4),   # idle machine
    (4.0, 4.0, 4),   # this process alone kept the 4 cores busy: they are still its own
    (1.0, 0.0, 3),   # another process kept one core busy
    (3.0, 2.0, 3),   # ... while this process used two
    (3.6, 0.0, 1),   # others kept 3.6 cores busy
    (8.0, 1.0, 1),   # overloaded: at least one thread
])
def test_default_is_the_cores_minus_what_other_processes_use(monkeypatch, machine, own,
                                                             expected):
    # two samples 2 s apart: the machine's busy CPU seconds grow by 2 * machine, this
    # process's by 2 * own; the other processes' share is the difference
    monkeypatch.setattr(_threads, "_available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (50.0, 50.0, 50.0))  # not read
    samples = iter([(100.0, 10.0, 1000.0), (100.0 + 2 * machine, 10.0 + 2 * own, 1002.0)])
    monkeypatch.setattr(_threads, "_cpu_sample", lambda: next(samples))
    monkeypatch.setattr(_threads, "_last_sample", None)
    monkeypatch.setattr(_threads, "_last_others", None)
    _threads._other_processes_busy()  # the first sample (taken at import in a real process)
    assert get_num_threads() == expected


def test_a_measurement_sooner_than_the_window_reuses_the_last(monkeypatch):
    monkeypatch.setattr(_threads, "_available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    samples = iter([(0.0, 0.0, 0.0), (4.0, 0.0, 2.0), (4.0, 0.0, 2.5)])
    monkeypatch.setattr(_threads, "_cpu_sample", lambda: next(samples))
    monkeypatch.setattr(_threads, "_last_sample", None)
    monkeypatch.setattr(_threads, "_last_others", None)
    _threads._other_processes_busy()
    assert get_num_threads() == 2  # others kept 2 cores busy over the 2 s window
    assert get_num_threads() == 2  # 0.5 s later: below MIN_WINDOW_S, the last measurement


@pytest.mark.parametrize("others, expected", [(0.0, 4), (1.0, 3), (3.0, 1)])
def test_the_first_measurement_uses_the_window_since_import(monkeypatch, others, expected):
    # a fit 0.5 s after the imports, right after another job: the 1-minute load average (here
    # 50) still counts the jobs that have ended; the CPU time of the last 0.5 s does not
    monkeypatch.setattr(_threads, "_available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (50.0, 50.0, 50.0))
    samples = iter([(100.0, 1.0, 1000.0), (100.0 + 0.5 * (others + 1.0), 1.5, 1000.5)])
    monkeypatch.setattr(_threads, "_cpu_sample", lambda: next(samples))
    monkeypatch.setattr(_threads, "_last_sample", None)
    monkeypatch.setattr(_threads, "_last_others", None)
    monkeypatch.setattr(_threads.time, "sleep", lambda s: pytest.fail("no wait was needed"))
    _threads._other_processes_busy()  # at import
    assert get_num_threads() == expected


def test_a_process_younger_than_the_first_window_waits_for_it(monkeypatch):
    monkeypatch.setattr(_threads, "_available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (50.0, 50.0, 50.0))
    # import at t = 0, the first call at t = 0.05, the sample after the wait at t = 0.2: two
    # other cores busy over [0, 0.2]
    samples = iter([(0.0, 0.0, 0.0), (0.1, 0.0, 0.05), (0.4, 0.0, 0.2)])
    monkeypatch.setattr(_threads, "_cpu_sample", lambda: next(samples))
    monkeypatch.setattr(_threads, "_last_sample", None)
    monkeypatch.setattr(_threads, "_last_others", None)
    waited = []
    monkeypatch.setattr(_threads.time, "sleep", waited.append)
    _threads._other_processes_busy()
    assert get_num_threads() == 2
    assert waited == [pytest.approx(_threads.FIRST_WINDOW_S - 0.05)]


def test_cpu_sample_reads_this_machine():
    sample = _threads._cpu_sample()
    if sample is None:
        pytest.skip("no /proc/stat on this platform")
    busy, own, wall = sample
    assert busy >= 0 and own >= 0 and wall > 0


def test_default_never_exceeds_the_physical_cores():
    assert 1 <= get_num_threads() <= _threads._available_cores()


def test_environment_variable_then_function_take_precedence(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "3")
    assert get_num_threads() == 3
    set_num_threads(1)
    assert get_num_threads() == 1
    set_num_threads(None)
    assert get_num_threads() == 3


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_environment_value_is_an_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(ValueError, match=f"the environment variable {ENV_VAR} must be a positive integer"):
        get_num_threads()


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "4"])
def test_bad_set_num_threads_is_an_error(value):
    with pytest.raises(ValueError, match="n must be a positive integer number of threads"):
        set_num_threads(value)


def test_limit_threads_applies_and_restores_blas_and_numba():
    blas_before, numba_before = _blas_threads(), numba.get_num_threads()
    with limit_threads(1) as n:
        assert n == 1
        assert all(t == 1 for t in _blas_threads())
        assert numba.get_num_threads() == 1
        np.linalg.eigh(np.eye(50))  # BLAS works inside
    assert _blas_threads() == blas_before
    assert numba.get_num_threads() == numba_before


def test_limit_threads_restores_after_an_exception():
    numba_before = numba.get_num_threads()
    with pytest.raises(RuntimeError):
        with limit_threads(1):
            raise RuntimeError("boom")
    assert numba.get_num_threads() == numba_before


def test_limit_threads_default_follows_the_policy(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "1")
    with limit_threads() as n:
        assert n == 1 and numba.get_num_threads() == 1


def test_numba_never_asked_for_more_threads_than_it_started_with():
    with limit_threads(10_000) as n:
        assert n == 10_000
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_run_parallel_keeps_the_order_and_runs_nested_calls_inline():
    import threading

    set_num_threads(2)
    try:
        names = []

        def task(i):
            # a call from inside a task runs in that thread: no pool waits on itself
            inner = _threads.run_parallel([lambda j=j: (j, threading.current_thread().name)
                                           for j in range(3)])
            names.append({name for _, name in inner} | {threading.current_thread().name})
            return i * 10 + len(inner)

        assert _threads.run_parallel([lambda i=i: task(i) for i in range(5)]) == [3, 13, 23, 33,
                                                                                  43]
        assert all(len(s) == 1 for s in names)
        assert _threads.run_parallel([]) == []
    finally:
        set_num_threads(None)


def test_run_parallel_passes_errors_on():
    set_num_threads(2)
    try:
        def bad():
            raise ValueError("from a task")

        with pytest.raises(ValueError, match="from a task"):
            _threads.run_parallel([lambda: 1, bad])
    finally:
        set_num_threads(None)
