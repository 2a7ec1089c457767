"""Every example marked runnable in docs/*.md and README.md runs.

A fenced block whose info string is ``python runnable`` is executed as Python; ``console
runnable`` blocks hold ``graphclust ...`` command lines, each run through `graphclust.cli.main`
and required to exit with 0. The blocks of one file run in order, in one namespace, inside a
temporary working directory (so the files they write vanish). Other fenced blocks are prose.
"""

import os
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


def runnable_blocks(path):
    """[(kind, first line number, code)] of the runnable blocks of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        info = m.group(1).split()
        if len(info) >= 2 and info[1] == "runnable" and info[0] in ("python", "console"):
            line = text.count("\n", 0, m.start(2)) + 1
            out.append((info[0], line, m.group(2)))
    return out


DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
WITH_EXAMPLES = [p for p in DOCS if p.exists() and runnable_blocks(p)]


def test_the_user_guide_has_runnable_examples():
    blocks = runnable_blocks(ROOT / "docs" / "user_guide.md")
    kinds = [k for k, _, _ in blocks]
    assert kinds.count("python") >= 10 and kinds.count("console") >= 1


def test_block_extraction(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n```python runnable\na = 1\n```\n```python\nnot run\n```\n"
                  "```console runnable\ngraphclust --help\n```\n")
    assert runnable_blocks(md) == [("python", 3, "a = 1\n"),
                                   ("console", 9, "graphclust --help\n")]


def _run_console(code, where):
    from graphclust.cli import main

    for offset, line in enumerate(code.splitlines()):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        argv = shlex.split(line)
        assert argv[0] == "graphclust", f"{where}+{offset}: only graphclust commands run here"
        assert main(argv[1:]) == 0, f"{where}+{offset}: `{line}` failed"


@pytest.mark.parametrize("path", WITH_EXAMPLES, ids=lambda p: p.name)
def test_examples_run(path, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{path.stem}"}
    for kind, line, code in runnable_blocks(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        if kind == "python":
            exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the docs' own examples
        else:
            _run_console(code, where)
    import matplotlib.pyplot as plt

    plt.close("all")
    assert os.getcwd() == str(tmp_path)


def _modules_with_examples():
    import importlib
    import importlib.util
    import pkgutil

    import graphclust

    names = []
    for info in pkgutil.walk_packages(graphclust.__path__, "graphclust."):
        if info.name == "graphclust.dask" and importlib.util.find_spec("dask") is None:
            continue  # the optional `dask` extra is not installed
        module = importlib.import_module(info.name)
        if ">>>" in (module.__doc__ or "") or ">>>" in Path(module.__file__).read_text():
            names.append(info.name)
    return names


@pytest.mark.parametrize("module", _modules_with_examples())
def test_docstring_examples(module, monkeypatch, tmp_path):
    """Every seeded example in every docstring of the package runs and prints what it says."""
    import doctest
    import importlib

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
