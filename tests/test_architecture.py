"""The layout rules of docs/architecture.md, checked on the source: layers import only downward,
no module imports a private name of another subpackage, and files stay small."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "graphclust"

#: floor of each top-level part of the package (docs/architecture.md); higher may import lower
FLOORS = {
    "_validation": 0, "_progress": 0, "_persistence": 0, "_deprecation": 0, "_cli_args": 0,
    "threads": 0, "_hashing": 0, "_prefetch": 0,
    "io": 1, "metrics": 1,
    "graphs": 2, "kernels": 2, "datasets": 2,
    "cluster": 3, "manifold": 3,
    "pipeline": 4, "segmentation": 4, "_region_hierarchy": 4, "communities": 4, "plots": 4, "dask": 4,
    "_cli_cluster": 5, "_cli_criterion": 5, "_cli_apps": 5, "cli": 6,
}
MAX_LINES = 700


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "build" not in p.parts)


def _part(path):
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imports(path):
    """(imported top-level part, imported names, module path) of each package-relative import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(PACKAGE)
    depth = len(rel.parts) - 1  # 0 for graphclust/x.py, 1 for graphclust/sub/x.py
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            up = node.level - 1
            if up > depth:
                continue
            base = list(rel.parts[: depth - up])
            target = base + (node.module.split(".") if node.module else [])
            if target:
                yield target, [a.name for a in node.names]
            else:  # "from . import x" at the package root
                for a in node.names:
                    yield [a.name], []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_import_only_downward(path):
    if path.name == "__init__.py" and path.parent == PACKAGE:
        return  # the package's face re-exports everything
    part = _part(path)
    for target, _ in _imports(path):
        other = target[0].removesuffix(".py")
        if other == part or other not in FLOORS:
            continue
        assert FLOORS[other] <= FLOORS[part], (
            f"{path.relative_to(PACKAGE)} (floor {FLOORS[part]}) imports {'.'.join(target)} "
            f"(floor {FLOORS[other]}): a layer never imports a higher one")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_names_across_subpackages(path):
    part = _part(path)
    for target, names in _imports(path):
        if target[0] == part or target[0] in FLOORS and FLOORS[target[0]] == 0:
            continue  # within a subpackage, or the shared private base modules
        private_module = [t for t in target[1:] if t.startswith("_")]
        assert not private_module, (
            f"{path.relative_to(PACKAGE)} imports the private module {'.'.join(target)}")
        private_names = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private_names, (
            f"{path.relative_to(PACKAGE)} imports private names {private_names} from "
            f"{'.'.join(target)}")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_files_stay_small(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {n} lines (limit {MAX_LINES})"


def test_every_part_has_a_floor():
    parts = {_part(p) for p in _modules()} - {"__init__"}
    assert parts <= set(FLOORS), f"add {sorted(parts - set(FLOORS))} to FLOORS and the doc"
