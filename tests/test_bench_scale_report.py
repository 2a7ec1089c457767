"""`scripts/bench_scale.py --report`: the pooled medians and the doubling's bootstrap interval."""

import numpy as np
import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_scale")


def _log(rows):
    head = ["# 2026-11-28 21:15 UTC data=mnist ",
            "        n    stage   time s x prev  peak MB  base MB  B/edge      edges  details"]
    body = [f"{n:>9} {st:>8} {t:8.1f} {'':>6} {700:8d} {200:8d} {500:7d} {900000:10d}  {{}}"
            for n, st, t in rows]
    return "\n".join(head + body)


def test_report_pools_files_and_skips_the_medians_summary(bench, tmp_path, capsys):
    a = tmp_path / "a.log"
    a.write_text(_log([(1000, "auto", 1.0), (2000, "auto", 2.0)])
                 + "\n   1000     auto stopped\n  2000     auto > 540 s (stopped)"
                 + "\n# medians of 2 rounds\n     1000     auto       9.0\n")
    b = tmp_path / "b.log"
    b.write_text(_log([(1000, "auto", 3.0), (2000, "auto", 8.0), (1000, "knn", 0.5)]))
    times = bench._pooled(bench._read_sweeps([a, b]))
    assert times == {("auto", 1000): [1.0, 3.0], ("auto", 2000): [2.0, 8.0],
                     ("knn", 1000): [0.5]}
    bench._report([a, b], n_boot=500)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.split()[:2] == ["2000", "auto"])
    parts = row.split()
    assert int(parts[2]) == 2 and float(parts[3]) == 5.0
    assert float(parts[4]) == pytest.approx(2.5)  # median 5.0 over median 2.0
    lo, hi = (float(v) for v in row[row.index("[") + 1:row.index("]")].split(","))
    # the bootstrap resamples {1, 3} and {2, 8}: its ratios lie between 2 / 3 and 8
    assert 2 / 3 - 1e-9 <= lo <= 2.5 <= hi <= 8 + 1e-9


def test_report_interval_is_seeded(bench, tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = [(n, "auto", float(t)) for n in (1000, 2000) for t in rng.uniform(1, 2, 5) * n / 1000]
    p = tmp_path / "c.log"
    p.write_text(_log(rows))
    bench._report([p], n_boot=300)
    first = capsys.readouterr().out
    bench._report([p], n_boot=300)
    assert capsys.readouterr().out == first


def test_report_pairs_the_sizes_of_each_sweep(bench, tmp_path, capsys):
    # two sweeps in one file (rounds) and one in another: the paired ratios are 2, 8/3, 2
    a = tmp_path / "a.log"
    a.write_text(_log([(1000, "auto", 1.0), (2000, "auto", 2.0)]) + "\n# round 2 of 2\n"
                 + _log([(1000, "auto", 3.0), (2000, "auto", 8.0)]).split("\n", 2)[2])
    b = tmp_path / "b.log"
    b.write_text(_log([(1000, "auto", 10.0), (2000, "auto", 20.0)]))
    sweeps = bench._read_sweeps([a, b])
    assert [sw[("auto", 2000)] / sw[("auto", 1000)] for sw in sweeps] == [2.0, 8 / 3, 2.0]
    bench._report([a, b], n_boot=500)
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.split()[:2] == ["2000", "auto"])
    parts = row.replace(",", " ").replace("[", " ").replace("]", " ").split()
    # runs, median, ratio of the medians (8 / 3), its interval, paired median, its interval
    assert float(parts[4]) == pytest.approx(8 / 3, abs=1e-3)
    assert float(parts[7]) == pytest.approx(2.0)
    lo, hi = float(parts[8]), float(parts[9])
    assert 2.0 - 0.005 <= lo <= 2.0 <= hi <= 8 / 3 + 0.005  # printed to two decimals


def test_a_repeated_row_starts_a_new_sweep(bench, tmp_path):
    p = tmp_path / "c.log"
    p.write_text(_log([(1000, "auto", 1.0), (1000, "auto", 2.0), (2000, "auto", 5.0)]))
    assert bench._read_sweeps([p]) == [{("auto", 1000): 1.0},
                                      {("auto", 1000): 2.0, ("auto", 2000): 5.0}]
