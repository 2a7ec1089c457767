"""The default fit on many named sets, one line each with a hash of its partition.

A change to the automatic fit is checked by running this on the code before and after and
comparing the lines: a set whose hash differs got another partition (the hash is of the labels
numbered by first appearance, so a renumbering of one partition does not count). Sets are the
names of ``scripts/bench_model_selection.py`` (``battery:<folder>``, ``toys``, ``blobs``,
``tables``, ``tables-raw``, ``shapes``, a development set such as ``usps``); each fit is
``StabilityClustering(random_state=0)``, all in one process. Two lists that run the 350 sets
of docs/battery.md in about 20 minutes on two cores, side by side:

    python scripts/partition_hashes.py \\
        battery:uci,battery:other,battery:fcps,battery:graves,toys,tables > a.txt
    python scripts/partition_hashes.py \\
        battery:sipu,battery:wut,shapes,blobs,tables-raw > b.txt

and to compare with the same run of another checkout (``PYTHONPATH=/path/to/checkout``, run
from that checkout):

    python scripts/partition_hashes.py --compare new.txt old.txt

Each line: set, n, c, NMI with the set's labels (its noise points, label -1, left out), the
hash, seconds of the fit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def partition_hash(labels):
    """A 10-digit hash of a partition: the same for any numbering of its clusters."""
    from graphclust.cluster._partition_quality import canonical_labels

    return hashlib.md5(canonical_labels(labels).tobytes()).hexdigest()[:10]


def read_lines(path):
    """{set: (n, c, nmi, hash, seconds)} of a file this script printed."""
    found = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 6:
                found[parts[0]] = parts[1:]
    return found


def compare(new, old):
    """The lines of the sets whose partitions differ, and a count."""
    a, b = read_lines(new), read_lines(old)
    common = [name for name in a if name in b]
    changed = [name for name in common if a[name][3] != b[name][3]]
    out = [f"{name}: c {b[name][1]} -> {a[name][1]}, NMI {b[name][2]} -> {a[name][2]}"
           for name in changed]
    out.append(f"{len(common)} sets in both, {len(changed)} with another partition "
               f"({len(a)} new, {len(b)} old)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="?", help="comma-separated set names")
    ap.add_argument("--compare", nargs=2, metavar=("NEW", "OLD"),
                    help="compare two files of this script's lines instead of fitting")
    args = ap.parse_args(argv)
    if args.compare:
        print("\n".join(compare(*args.compare)))
        return
    if not args.sets:
        ap.error("give the sets to fit (comma-separated), or --compare NEW OLD")
    sys.path.insert(0, HERE)
    import bench_model_selection as bench
    from sklearn.metrics import normalized_mutual_info_score

    import graphclust as gc

    for name in bench.expand_sets([s for s in args.sets.split(",") if s]):
        X, y, _ = bench.load(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            model = gc.StabilityClustering(random_state=0).fit(X)
            seconds = time.perf_counter() - t
        keep = y >= 0
        nmi = normalized_mutual_info_score(y[keep], model.labels_[keep])
        print(f"{name} {X.shape[0]} {model.n_clusters_} {nmi:.4f} "
              f"{partition_hash(model.labels_)} {seconds:.1f}", flush=True)


if __name__ == "__main__":
    main()
