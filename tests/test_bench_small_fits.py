"""`scripts/bench_small_fits.py`: fits in fresh processes, one row per set, labels compared."""

import pytest
from conftest import load_script


def test_rows_of_fresh_fits_compare_the_labels_of_each_tree(capsys):
    bench = load_script("bench_small_fits")
    here = bench.os.path.dirname(bench.HERE)
    bench.main(["--sets", "moons150", "--trees", f"{here},{here}", "--repeat", "1"])
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("| moons150 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "150" and cells[-1] == "same"  # one checkout twice: the same labels
    assert all(c.split(", c=")[1].isdigit() for c in cells[2:4])


def test_repeat_must_be_positive(capsys):
    bench = load_script("bench_small_fits")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--repeat", "0"])
    assert stop.value.code == 2
    assert "--repeat must be at least 1; got 0" in capsys.readouterr().err
