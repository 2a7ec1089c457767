"""docs/api.md is generated from the docstrings by scripts/build_api_docs.py and kept current."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
API_MD = ROOT / "docs" / "api.md"


@pytest.fixture(scope="module")
def builder():
    if importlib.util.find_spec("dask") is None:
        pytest.skip("docs/api.md documents graphclust.dask: needs the `dask` extra "
                    "(pip install -e .[test])")
    return load_script("build_api_docs")


@pytest.fixture(scope="module")
def rendered(builder):
    return builder.render()


def test_api_md_is_current(rendered):
    current = API_MD.read_text(encoding="utf-8") if API_MD.exists() else ""
    if current != rendered:
        pytest.fail("docs/api.md is stale (it differs from the docstrings): run "
                    "python scripts/build_api_docs.py", pytrace=False)


def test_every_public_name_is_documented(builder, rendered):
    import graphclust

    documented = set(re.findall(r'<a id="(graphclust\.[\w.]+)"></a>', rendered))
    exported = {}
    for module_name in builder.MODULES:
        for name in importlib.import_module(module_name).__all__:
            exported.setdefault(name, module_name)
            assert f"{module_name}.{name}" in documented or (
                f"{exported[name]}.{name}" in documented
            ), f"{module_name}.{name} is missing from the API reference"
            assert f"### {name}\n" in rendered
    missing = sorted(set(graphclust.__all__) - set(exported))
    assert not missing, f"graphclust exports {missing}, which no module in MODULES lists"
    # the table of contents links every documented name, and every link has its target
    for target in re.findall(r"\]\(#(graphclust\.[\w.]+)\)", rendered):
        assert target in documented, target
    toc = rendered.split("<a id=")[0]
    for anchor in documented:
        assert f"(#{anchor})" in toc, anchor


def test_estimators_show_their_methods_and_sections(rendered):
    section = rendered.split('<a id="graphclust.cluster.AHKClustering"></a>')[1].split("<a id=")[0]
    assert "class AHKClustering(n_clusters=8, *, normalization='lbn'" in section
    assert "Bases: `sklearn.ClusterMixin`, `sklearn.BaseEstimator`" in section
    for heading in ("**Parameters**", "**Attributes**", "#### AHKClustering.predict",
                    "#### AHKClustering.save", "classmethod AHKClustering.load(path)"):
        assert heading in section, heading
    assert "- `verbose` : bool, default False  \n  Progress lines on stderr" in section
    assert "get_params" not in section  # inherited from scikit-learn, not documented here
    assert "#### Pipeline.predict" in rendered  # behind scikit-learn's available_if


def test_numpydoc_parser(builder):
    doc = """Do a thing
    on two lines.

    More text that is not the summary.

    Parameters
    ----------
    x : int
        The first
        argument.

        A second paragraph:

        - one bullet
        - another, continued
          here
    y, z
        No type.

    Returns
    -------
    float
        The result.

    Notes
    -----
    Stays out.
    """
    import inspect

    summary, sections = builder.parse_docstring(inspect.cleandoc(doc))
    assert summary == "Do a thing on two lines."
    assert [head for head, _ in sections["Parameters"]] == ["x : int", "y, z"]
    assert sections["Notes"] == "Stays out."
    lines = builder._render_entries("Parameters", sections["Parameters"])
    assert lines[:9] == [
        "**Parameters**",
        "",
        "- `x` : int  ",
        "  The first argument.",
        "",
        "  A second paragraph:",
        "",
        "  - one bullet",
        "  - another, continued here",
    ]
    assert lines[9:11] == ["- `y, z`  ", "  No type."]
    assert builder._render_entries("Returns", sections["Returns"])[2:4] == [
        "- float  ", "  The result."]
    assert builder.parse_docstring(None) == ("", {})


def test_output_is_deterministic(builder):
    assert builder._value_repr(frozenset({"b", "a", "c"})) == "{'a', 'b', 'c'}"
    assert builder._clean("<function f at 0x7f00ab12>") == "<function f>"
    assert builder._value_repr("x" * 300).endswith(" ...")


def test_check_mode_reports_a_stale_file(builder, tmp_path, monkeypatch, capsys):
    out = tmp_path / "api.md"
    monkeypatch.setattr(builder, "OUTPUT", out)
    monkeypatch.setattr(builder, "ROOT", tmp_path)
    out.write_text("old\n")
    assert builder.main(["--check"]) == 1
    assert "api.md is stale: run python scripts/build_api_docs.py" in capsys.readouterr().err
    assert builder.main([]) == 0
    assert builder.main(["--check"]) == 0


def test_user_guide_links_the_reference():
    guide = (ROOT / "docs" / "user_guide.md").read_text(encoding="utf-8")
    assert "(api.md)" in guide
