"""`scripts/partition_hashes.py`: the hash ignores the numbering, the comparison names changes."""

import numpy as np
from conftest import load_script


def test_the_hash_is_the_partitions_not_its_numbering():
    script = load_script("partition_hashes")
    labels = np.array([2, 2, 0, 1, 0, 1])
    renumbered = np.array([5, 5, 9, 7, 9, 7])
    other = np.array([2, 2, 0, 1, 1, 1])
    assert script.partition_hash(labels) == script.partition_hash(renumbered)
    assert script.partition_hash(labels) != script.partition_hash(other)


def test_a_fit_prints_a_line_and_the_comparison_names_the_changed_set(tmp_path, capsys):
    script = load_script("partition_hashes")
    script.main(["toys:moons:1000:0.05:0"])
    line = capsys.readouterr().out.strip()
    name, n, c, nmi, digest, seconds = line.split()
    assert (name, n, c) == ("toys:moons:1000:0.05:0", "1000", "2") and float(nmi) > 0.99
    (tmp_path / "new.txt").write_text(line + "\nother 10 2 0.5 aaaaaaaaaa 0.1\n")
    (tmp_path / "old.txt").write_text(line + "\nother 10 3 0.4 bbbbbbbbbb 0.1\n")
    out = script.compare(tmp_path / "new.txt", tmp_path / "old.txt")
    assert out == ["other: c 3 -> 2, NMI 0.4 -> 0.5",
                   "2 sets in both, 1 with another partition (2 new, 2 old)"]
