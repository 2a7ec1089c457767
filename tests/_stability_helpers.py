"""A `StabilityClustering` fit and the `StabilityWarning`s it gave, for the looks' tests."""

import warnings

import graphclust as gc


def fit_warned(X, **kw):
    """``(model, warnings)``: `StabilityClustering(random_state=0, **kw)` fitted on X, and the
    `StabilityWarning`s (all of them, each told) that the fit gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0, **kw).fit(X)
    return model, [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
