#!/usr/bin/env bash
# Run the test suite against the oldest declared versions of every core dependency, as
# scikit-learn's CI does: a fresh venv, `pip install -c ci/constraints-oldest.txt .[test]`, pytest.
#
#   ci/oldest.sh [VENV_DIR] [pytest args...]
#
# VENV_DIR defaults to .venv-oldest (rebuilt from scratch each run). GRAPHCLUST_DATA, when set,
# enables the tests on real data as in the normal run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$here/.venv-oldest}"
shift || true
python="${PYTHON:-python3}"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# build from a copy: an in-tree build would leave build/ and *.egg-info in the working tree
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
tar --exclude=.git --exclude='.venv*' --exclude=build --exclude='*.egg-info' -C "$here" -cf - . | tar -C "$src" -xf -
"$venv/bin/python" -m pip install --quiet -c "$here/ci/constraints-oldest.txt" "$src[test]"
echo "--- installed (core dependencies at their declared minimum):"
"$venv/bin/python" -m pip list 2>/dev/null | grep -i -E '^(numpy|scipy|numba|llvmlite|pynndescent|scikit-learn|networkx|threadpoolctl) '
# a non-editable install: test the installed package, not the working tree
cd "$here/tests"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
"$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$here" -c "$here/pyproject.toml" "$@" .
