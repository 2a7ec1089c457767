"""Community detection benchmark: graphclust beside networkx's Louvain and label propagation.

Real networks (``$GRAPHCLUST_DATA``): karate (2 clubs), football (12 conferences), polbooks (3
leanings), NMI against the known groups. LFR benchmark graphs (``networkx.LFR_benchmark_graph``,
seed 0): n = 1 000 and 10 000, mixing parameter mu = 0.1 .. 0.6, power-law exponents 3 (degrees)
and 1.5 (community sizes), average degree 15, maximum degree 50, communities of 20 to 100 nodes
(settings fixed a priori; the classic LFR values where networkx generates them reliably).

Methods, all on the binary adjacency:

- ``consistency auto``: `communities(G)` (consistency clustering, number of communities chosen in
  2..max_clusters; max_clusters = 10 on the real networks, 50 on LFR n = 1 000; not run on n = 10 000,
  whose ~220 communities are beyond any sensible search range);
- ``consistency k``: consistency clustering given the true number of communities;
- ``ahk k``: AHK spectral clustering given the true number of communities;
- ``louvain``: ``networkx.community.louvain_communities(G, seed=0)``;
- ``label propagation``: ``networkx.community.label_propagation_communities(G)`` (semi-synchronous,
  deterministic).

Each run is a separate process stopped after --timeout seconds (reported as such). Timings are
wall-clock.

    python scripts/bench_communities.py [--sizes 1000 10000] [--timeout 600] [--methods ...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import networkx as nx
import numpy as np

from graphclust import communities
from graphclust.metrics import nmi

MUS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]


def lfr(n, mu, seed=0):
    G = nx.LFR_benchmark_graph(n, 3, 1.5, mu, average_degree=15, max_degree=50,
                               min_community=20, max_community=100, seed=seed)
    G.remove_edges_from(nx.selfloop_edges(G))
    comms = {frozenset(G.nodes[v]["community"]) for v in G}
    index = {}
    for i, c in enumerate(sorted(comms, key=min)):
        for v in c:
            index[v] = i
    for v in G:
        del G.nodes[v]["community"]  # sets are not needed downstream
    return G, [index[v] for v in G], len(comms)


def _run(method, G, k, max_clusters):
    if method == "consistency auto":
        return communities(G, "consistency", "auto", max_clusters=max_clusters, random_state=0)
    if method == "consistency k":
        return communities(G, "consistency", k, random_state=0)
    if method == "ahk k":
        return communities(G, "ahk", k, random_state=0)
    if method == "louvain":
        return nx.community.louvain_communities(G, seed=0)
    return list(nx.community.label_propagation_communities(G))


def _worker(q, method, G, k, max_clusters):
    t0 = time.perf_counter()
    try:
        parts = _run(method, G, k, max_clusters)
        q.put(("ok", [list(p) for p in parts], time.perf_counter() - t0))
    except Exception as err:  # reported in the table
        q.put(("error", f"{type(err).__name__}: {err}", time.perf_counter() - t0))


def timed(method, G, k, max_clusters, timeout):
    q = mp.Queue()
    p = mp.Process(target=_worker, args=(q, method, G, k, max_clusters))
    p.start()
    t0 = time.perf_counter()
    try:
        status, payload, dt = q.get(timeout=timeout if timeout > 0 else None)
    except Exception:
        p.terminate()
        p.join()
        return None, f"stopped after {timeout:.0f} s", time.perf_counter() - t0
    p.join()
    if status == "error":
        return None, payload, dt
    return payload, "", dt


def score(G, truth, parts):
    pos = {v: i for i, v in enumerate(G)}
    pred = np.empty(len(pos), dtype=int)
    for i, p in enumerate(parts):
        for v in p:
            pred[pos[v]] = i
    return nmi(truth, pred)


def row(name, mu, k, G, truth, method, max_clusters, timeout):
    parts, note, dt = timed(method, G, k, max_clusters, timeout)
    if parts is None:
        print(f"| {name} | {mu} | {k} | {method} | - | - | {dt:.1f} | {note[:80]} |", flush=True)
    else:
        print(f"| {name} | {mu} | {k} | {method} | {score(G, truth, parts):.3f} | {len(parts)} | "
              f"{dt:.1f} | |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--mus", type=float, nargs="*", default=MUS)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run; 0: no limit")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--methods", nargs="*", default=None, help="subset of the methods to run")
    args = ap.parse_args()
    print("| graph | mu | true communities | method | NMI | communities found | time (s) | note |")
    print("|---|---|---|---|---|---|---|---|")
    methods = ["consistency auto", "consistency k", "ahk k", "louvain", "label propagation"]
    if args.methods:
        methods = [m for m in methods if m in args.methods]
    if not args.skip_real:
        from graphclust.datasets import load_network

        for name, attr in (("karate", "club"), ("football", "value"), ("polbooks", "value")):
            G = load_network(name)
            truth = [G.nodes[v][attr] for v in G]
            k = len(set(truth))
            for method in methods:
                row(name, "-", k, G, truth, method, 10, args.timeout)
    for n in args.sizes:
        for mu in args.mus:
            G, truth, k = lfr(n, mu)
            for method in methods:
                if method == "consistency auto" and n > 1000:
                    continue
                row(f"LFR n={n}", mu, k, G, truth, method, 50, args.timeout)


if __name__ == "__main__":
    main()
