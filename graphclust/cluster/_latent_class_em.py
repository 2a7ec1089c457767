"""The EM of the latent class model (`LatentClassClustering`): a table's distinct rows as an
indicator matrix, and EM over them by compiled passes, several starts sharing each pass.

One iteration is two compiled passes over the indicator matrix's stored entries (`em_pass`):
each row's joint log-probabilities, numpy's vector exp, then the posteriors normalised and
summed per value and per class, rows in fixed chunks whose sums are added in chunk order, so a
run's numbers are the same on any number of threads and in any batch of runs
(docs/model_selection.md, *Built: the latent class model's EM as compiled passes*).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["BIC_PATIENCE", "SHORT_RUN", "Table", "best_start", "em", "em_pass", "encode",
           "normalised_log", "presence_table", "search_by_bic"]

#: The search for c stops once the BIC has not fallen for this many classes in a row.
BIC_PATIENCE = 3

#: EM iterations of each start before the best one is run to convergence (`best_start`).
SHORT_RUN = 20

# EM's passes run over the threads from this many (stored entries + rows) x classes (of the
# runs in the batch): below, starting the threads costs more than they save (the 84 drawn
# tables of docs/model_selection.md 4.7 s on one thread, 6.4 s from 2^17 on threads)
_THREADED_WORK = 2**19


def search_by_bic(tries, fit, free_parameters, n):
    """(BIC of each number of classes tried, the fit of smallest BIC with its "c"): `fit(c)`
    returns an EM run (its "log_likelihood"), `free_parameters(c)` the model's count; the
    search stops once the BIC has not fallen for `BIC_PATIENCE` numbers in a row. Shared by
    the latent class model and the mixture of multinomials."""
    bic, best = {}, None
    for c in tries:
        run = fit(c)
        bic[c] = -2.0 * run["log_likelihood"] + free_parameters(c) * np.log(n)
        if best is None or bic[c] < bic[best["c"]]:
            best = dict(run, c=c)
        elif c >= best["c"] + BIC_PATIENCE:
            break
    return bic, best


def encode(X, max_values):
    """(codes (n, p) int, categories per feature) of the table X, a NaN (a missing value)
    coded -1; a ValueError names the first feature with more than `max_values` values or with
    none observed."""
    codes, cats = np.full(X.shape, -1, np.int64), []
    for j in range(X.shape[1]):
        seen = ~np.isnan(X[:, j])
        values, codes[seen, j] = np.unique(X[seen, j], return_inverse=True)
        if values.size > max_values:
            raise ValueError(
                f"X's feature {j} takes {values.size} distinct values; a latent class model "
                f"reads each feature's values as categories, at most max_values={max_values}: "
                f"a feature of many values is a measurement (use StabilityClustering), or raise "
                f"max_values.")
        if values.size == 0:
            raise ValueError(f"X's feature {j} is missing (NaN) in every row: it tells the "
                             f"classes nothing; drop it.")
        cats.append(values)
    return codes, cats


class Table:
    """The distinct rows of a table of codes, each standing for `counts` copies, as the EM
    reads them: an indicator matrix `Z` of each row's values *other than* its feature's
    baseline value (columns `keep` of the one-hot cells), whose log-probability enters
    through a constant per class (columns `base`). Binary answers need one column per
    feature instead of two, and a sparse table (text: most words absent) keeps its sparsity:
    20 newsgroups' binary table, 10 267 distinct rows of 100 words, is 5 % filled. An EM
    iteration is one compiled pass over its stored entries (`em_pass`): 0.5 ms on that
    table with 13 classes, against 2.5 ms for sparse products and numpy's exp."""

    def __init__(self, Z, base, keep, sizes, counts, missing=None):
        self.sizes, self.counts, self.cells = sizes, counts, int(sizes.sum())
        self.base, self.keep = base, keep
        # features missing in some row: one more column of Z each (after the `keep` columns),
        # whose term takes the baseline's log-probability back out of the row's constant, so
        # that a missing value is left out of the row's likelihood (missing at random)
        self.missing = np.zeros(0, np.int64) if missing is None else missing
        self.feature = np.repeat(np.arange(sizes.size), sizes)  # each cell's feature
        Z = sp.csr_matrix(Z)
        Z.sort_indices()
        self.Z = Z  # every stored value 1: EM reads its indices only (`em_pass`)
        self.indptr, self.indices = Z.indptr.astype(np.int64), Z.indices.astype(np.int64)

    @classmethod
    def from_codes(cls, codes, sizes, counts):
        """From the codes (n, p) of the distinct rows (-1: missing): each feature's most
        frequent value is its baseline."""
        n, p = codes.shape
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        seen = codes >= 0
        full = np.zeros(int(sizes.sum()))
        np.add.at(full, (codes + offsets)[seen], np.broadcast_to(counts[:, None], codes.shape)[
            seen])
        base = np.array([np.argmax(full[a:a + m]) for a, m in zip(offsets, sizes)])
        keep = np.setdiff1d(np.arange(full.size), offsets + base)
        rows, feats = np.nonzero(seen & (codes != base))
        column = np.searchsorted(keep, (codes + offsets)[rows, feats])
        missing = np.flatnonzero((~seen).any(axis=0))
        lost_rows, lost_feats = np.nonzero(~seen)
        rows = np.r_[rows, lost_rows]
        column = np.r_[column, keep.size + np.searchsorted(missing, lost_feats)]
        Z = sp.csr_matrix((np.ones(rows.size), (rows, column)),
                          shape=(n, keep.size + missing.size))
        return cls(Z, offsets + base, keep, sizes, counts, missing)

    def step(self, weights, log_profiles):
        """One E step and the M step's sums for S runs at once (their weights (S, c) and log
        profiles (S, c, cells)): (each distinct row's class posteriors (n, S c), run s's in
        columns s c .. s c + c - 1; each row's log-likelihood under each run (S, n); each
        class's count of every value (S, c, cells) and of rows (S, c), both from the
        posteriors times the copies). A run's numbers do not depend on the others in the
        batch: the batch shares the passes over the table, not their sums."""
        S, c, _ = log_profiles.shape
        differences = np.concatenate([
            log_profiles[:, :, self.keep] - log_profiles[:, :, self.base[self.feature[
                self.keep]]], -log_profiles[:, :, self.base[self.missing]]], axis=2)
        constant = log_profiles[:, :, self.base].sum(axis=2) + np.log(weights)
        n, m = self.counts.size, differences.shape[2]
        # fixed chunks (of the table's and the model's sizes only, never the thread count or
        # the batch), their sums added in chunk order: the same numbers on any number of
        # threads and in any batch
        chunks = max(1, min(64, 2**22 // max(1, m * c), -(-n // 256)))
        posterior, row_ll, kept, totals = em_pass(
            self.indptr, self.indices, self.counts,
            np.ascontiguousarray(differences.transpose(2, 0, 1).reshape(m, S * c)),
            constant.ravel(), c, -(-n // chunks))
        cells = np.stack([self.cell_counts(kept[:, s * c:(s + 1) * c].T, totals[s * c:
                                                                              (s + 1) * c])
                          for s in range(S)])
        return posterior, row_ll, cells, totals.reshape(S, c)

    def class_counts(self, weighted):
        """(c, cells): each class's count of every value, from the rows' class weights
        (n, c) already multiplied by their copies."""
        return self.cell_counts(np.asarray(self.Z.T @ weighted).T, weighted.sum(axis=0))

    def cell_counts(self, kept, totals):
        """(c, cells) from each class's counts of Z's columns (c, m: the kept cells, then
        the missing features) and its total (c,): a baseline's count is the total less the
        counts of its feature's other values and of the rows where it is missing."""
        c, m = kept.shape[0], self.keep.size
        out = np.zeros((c, self.cells))
        out[:, self.keep] = kept[:, :m]
        others = np.zeros((c, self.sizes.size))  # and rows where the feature is missing
        np.add.at(others.T, self.feature[self.keep], kept[:, :m].T)
        np.add.at(others.T, self.missing, kept[:, m:].T)
        out[:, self.base] = totals[:, None] - others
        return out


def em_pass(indptr, indices, counts, differences, constant, group, chunk):
    """The E step over the distinct rows of an indicator matrix (CSR `indptr`, `indices`; the
    values 1), with the M step's sums: row i's joint log-probability of column r is
    ``constant[r] + sum of differences[j, r]`` over its columns j, and each run's `group`
    consecutive columns are its classes. Returns (posteriors (n, k), each run's row
    log-likelihoods (k / group, n), posteriors times copies summed per column of the table
    (m, k) and per class (k,)). Two compiled passes over the rows in fixed chunks, each
    chunk's sums added in chunk order (the same numbers on any number of threads), and
    numpy's exp between them: its vector exp is several times faster than a compiled loop's
    scalar one."""
    n = counts.size
    n_chunks = (n + chunk - 1) // chunk
    # threads only for a pass of some size (`_THREADED_WORK`): beside other busy processes
    # each start of the threads can wait a scheduler's slice (the 84 drawn tables fitted two
    # at a time: 450 s with every pass on threads, against 9 s)
    driver = (_em_chunks_threaded if (indptr[-1] + n) * constant.size >= _THREADED_WORK
              else _em_chunks)
    runs = constant.size // group
    posterior, top = np.empty((n, constant.size)), np.empty((runs, n))
    kept = np.zeros((n_chunks, differences.shape[0], constant.size))
    totals = np.zeros((n_chunks, constant.size))
    row_ll = np.empty((runs, n))
    for stage in (0, 1):
        if stage:
            np.exp(posterior, out=posterior)
        driver(stage, indptr, indices, counts, differences, constant, group, chunk, posterior,
               top, row_ll, kept, totals)
    return posterior, row_ll, _in_order(kept), _in_order(totals)


def _in_order(parts):
    out = parts[0].copy()
    for part in parts[1:]:
        out += part
    return out


@numba.njit(cache=True)
def _em_chunk(stage, lo, hi, indptr, indices, counts, differences, constant, group, out, top,
              row_ll, kept, totals):
    """Rows lo..hi of `em_pass`. Stage 0: each row's joint log-probabilities less each run's
    largest (`out`), and those largest (`top`). Stage 1, `out` holding their exp: each run's
    rows normalised in place, their log-likelihoods, and the posteriors times copies added to
    this chunk's sums per column (`kept`, (m, k)) and per class (`totals`)."""
    k = constant.size
    for i in range(lo, hi):
        if stage == 0:
            for r in range(k):
                out[i, r] = constant[r]
            for q in range(indptr[i], indptr[i + 1]):
                j = indices[q]
                for r in range(k):
                    out[i, r] += differences[j, r]
            for s in range(k // group):
                a = s * group
                t = out[i, a]
                for r in range(a + 1, a + group):
                    t = max(t, out[i, r])
                for r in range(a, a + group):
                    out[i, r] -= t
                top[s, i] = t
            continue
        for s in range(k // group):
            a = s * group
            total = 0.0
            for r in range(a, a + group):
                # posteriors below 1e-300 are 0: subnormal numbers (exp of -708 and below,
                # and quotients of tiny ones) cost a hundred times more per operation
                if out[i, r] < 1e-300:
                    out[i, r] = 0.0
                total += out[i, r]
            row_ll[s, i] = top[s, i] + np.log(total)
            for r in range(a, a + group):
                out[i, r] /= total
                totals[r] += out[i, r] * counts[i]
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            for r in range(k):
                kept[j, r] += out[i, r] * counts[i]


@numba.njit(cache=True)
def _em_chunks(stage, indptr, indices, counts, differences, constant, group, chunk, out, top,
               row_ll, kept, totals):
    n = counts.size
    for k in range(kept.shape[0]):
        _em_chunk(stage, k * chunk, min(n, (k + 1) * chunk), indptr, indices, counts,
                  differences, constant, group, out, top, row_ll, kept[k], totals[k])


@numba.njit(cache=True, parallel=True)
def _em_chunks_threaded(stage, indptr, indices, counts, differences, constant, group, chunk,
                        out, top, row_ll, kept, totals):
    n = counts.size
    for k in numba.prange(kept.shape[0]):
        _em_chunk(stage, k * chunk, min(n, (k + 1) * chunk), indptr, indices, counts,
                  differences, constant, group, out, top, row_ll, kept[k], totals[k])


def presence_table(X):
    """(`Table`, each row's distinct row, categories) of a sparse table of presence /
    absence: its stored values one number v (absence is 0), the baseline of every feature 0."""
    X = sp.csr_matrix(X, copy=True)
    X.eliminate_zeros()
    X.sort_indices()
    values = np.unique(X.data)
    if values.size > 1:
        raise ValueError(
            f"a sparse X is read as presence / absence: its stored values must be one number; "
            f"got {values.size} ({', '.join(f'{v:g}' for v in values[:4])}"
            f"{', ...' if values.size > 4 else ''}). Pass X.toarray() for a table of categories.")
    v = float(values[0]) if values.size else 1.0
    n, p = X.shape
    present = np.bincount(X.indices, minlength=p)
    cats = [np.array([0.0]) if k == 0 else np.array([v]) if k == n else np.sort([0.0, v])
            for k in present]
    sizes = np.array([len(c) for c in cats])
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    two = np.flatnonzero(sizes == 2)
    # the v-cell of a two-valued feature is kept, the 0-cell is its baseline; a one-valued
    # feature's only cell is its baseline
    keep = offsets[two] + (v > 0)
    base = offsets.copy()
    base[two] += v < 0
    keys = np.empty(n, dtype=object)  # a row's present features, as bytes: its identity
    for i in range(n):
        keys[i] = X.indices[X.indptr[i]:X.indptr[i + 1]].tobytes()
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
    P = X[first][:, two]
    P.data[:] = 1.0
    return Table(P, base, keep, sizes, counts.astype(np.float64)), inverse.ravel(), cats


def normalised_log(counts, sizes):
    """Log of the counts (c, sum(sizes)) divided by their sum within each feature's block."""
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    totals = np.add.reduceat(counts, offsets, axis=1)
    return np.log(counts) - np.log(np.repeat(totals, sizes, axis=1))


def best_start(table, c, n_init, max_iter, tol, rng):
    """The EM run of c classes from the best of `n_init` starts: each start runs
    `SHORT_RUN` iterations, and the one of largest log posterior then runs to convergence
    (the short-runs strategy of Biernacki, Celeux & Govaert 2003: most of the starts' cost
    saved, the same optimum on the development tables). The starts' short runs share each
    pass over the table (`em`)."""
    sizes = table.sizes
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    marginal = table.class_counts(table.counts[:, None])[0] + 1.0 / np.repeat(sizes, sizes)
    shares = marginal / np.repeat(np.add.reduceat(marginal, offsets), sizes)
    # class profiles drawn around the marginal frequencies (a Dirichlet of total mass 2 per
    # value: spread enough that starts differ)
    starts = np.stack([
        normalised_log(rng.gamma(2.0 * np.repeat(sizes, sizes) * shares,
                                  size=(c, shares.size)) + 1e-12, sizes)
        for _ in range(n_init)])
    best = None
    for run in em(table, np.full((n_init, c), 1.0 / c), starts, min(SHORT_RUN, max_iter), tol):
        if best is None or run["log_posterior"] > best["log_posterior"]:
            best = run
    if not best["converged"] and max_iter > SHORT_RUN:
        history = best["history"]
        best = em(table, best["weights"][None], best["log_profiles"][None],
                   max_iter - SHORT_RUN, tol)[0]
        best["history"] = history + best["history"]
        best["n_iter"] += SHORT_RUN
    return best


def em(table, weights, log_profiles, max_iter, tol):
    """EM on the distinct rows of `table` (`Table`) for S runs at once from their class
    weights (S, c) and log profiles (S, c, cells): MAP estimates with a Dirichlet pseudo-count
    of 1 / (values) per cell. Each run stops on its own; a run's numbers are those it would
    have alone. Returns each run's final fit and `history`, its log posterior after each
    iteration (never lower than the one before)."""
    sizes, counts = table.sizes, table.counts
    n = counts.sum()
    prior = 1.0 / np.repeat(sizes, sizes)
    c = weights.shape[1]
    runs = [{"weights": w, "log_profiles": lp, "history": [], "change": np.inf,
             "converged": False} for w, lp in zip(weights, log_profiles)]
    active = list(range(len(runs)))
    for it in range(1, max_iter + 1):
        posterior, row_ll, cells, totals = table.step(
            np.stack([runs[s]["weights"] for s in active]),
            np.stack([runs[s]["log_profiles"] for s in active]))
        still = []
        for b, s in enumerate(active):
            run = runs[s]
            log_post = counts @ row_ll[b] + (prior * run["log_profiles"]).sum()
            if run["history"]:
                # (a log posterior of 0, every feature one value, is converged, not 0 / 0)
                run["change"] = ((log_post - run["history"][-1])
                                 / max(abs(log_post), np.finfo(float).tiny))
            run["history"].append(log_post)
            run["converged"] = bool(run["change"] < tol)
            if run["converged"] or it == max_iter:
                run.update(log_likelihood=float(counts @ row_ll[b]),
                           log_posterior=float(log_post), row_log_likelihoods=row_ll[b],
                           posterior=posterior[:, b * c:(b + 1) * c].copy(), n_iter=it)
                continue
            run["weights"] = np.maximum(totals[b] / n, 1e-300)
            run["log_profiles"] = normalised_log(cells[b] + prior, sizes)
            still.append(s)
        active = still
        if not active:
            break
    return runs
