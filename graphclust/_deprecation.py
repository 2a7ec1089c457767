"""Names that moved to another module stay importable from the old one, with a warning."""

from __future__ import annotations

import importlib
import warnings

__all__ = ["moved_names"]


def moved_names(module, moved, adapters=None):
    """A module-level ``__getattr__`` serving names that moved elsewhere (PEP 562).

    Parameters
    ----------
    module : str
        The old module's name (``__name__``).
    moved : dict
        Old name -> ``"new.module.name"`` (the last dotted part is the name in the new module).
    adapters : dict, optional
        Old name -> (callable(new object) -> the object to return, note): for a name whose old
        contract differs from the new one (e.g. its return type), the old contract is kept and
        the warning adds the note (how the new name differs).

    Returns
    -------
    callable
        ``__getattr__(name)``: for a moved name, warns ``DeprecationWarning`` naming the new
        location and returns the object; otherwise raises AttributeError.
    """
    adapters = dict(adapters or {})

    def __getattr__(name):
        target = moved.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_module, _, new_name = target.rpartition(".")
        adapt, note = adapters.get(name, (None, ""))
        where = f"{target} ({note})" if note else target
        warnings.warn(
            f"{module}.{name} has moved to {where}: import it from {new_module}; the old "
            "location will be removed in a future release.",
            DeprecationWarning,
            stacklevel=2,
        )
        obj = getattr(importlib.import_module(new_module), new_name)
        return obj if adapt is None else adapt(obj)

    return __getattr__
