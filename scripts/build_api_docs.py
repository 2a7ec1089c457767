"""Write docs/api.md, the API reference, from the docstrings of graphclust's public names.

    python scripts/build_api_docs.py            # rewrite docs/api.md
    python scripts/build_api_docs.py --check    # exit 1 if docs/api.md is stale

Every name in the ``__all__`` of the documented modules (`MODULES`, which together cover
``graphclust.__all__``) gets its signature, the summary line of its docstring and its numpydoc
Parameters / Returns / Yields / Raises / Attributes sections rendered as Markdown; classes also
get their public methods and properties (those defined in graphclust, not inherited from
scikit-learn). A name exported by several modules is documented under the first and linked from
the others. The numpydoc sections are parsed here (`parse_docstring`), with no dependency beyond
the standard library. The output depends only on the code: names are sorted, memory addresses
and set orders are normalised, so two runs give the same file.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's graphclust, installed or not
OUTPUT = ROOT / "docs" / "api.md"

#: The documented modules, in the order of the reference: the three layers, the pipeline, the
#: applications, then files, data sets and metrics.
MODULES = (
    "graphclust.graphs",
    "graphclust.kernels",
    "graphclust.cluster",
    "graphclust.pipeline",
    "graphclust.communities",
    "graphclust.segmentation",
    "graphclust.dask",
    "graphclust.manifold",
    "graphclust.plots",
    "graphclust.io",
    "graphclust.threads",
    "graphclust.datasets",
    "graphclust.metrics",
)

#: numpydoc sections rendered as lists of entries (others, such as Notes and Examples, stay in
#: the docstrings).
ENTRY_SECTIONS = ("Parameters", "Returns", "Yields", "Raises", "Attributes")

_HEADER = re.compile(r"^(?P<title>[A-Z][A-Za-z ]+)\n(?P<rule>-{3,})$", re.M)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_BULLET = re.compile(r"^(?:[-*+] |\d+[.)] )")


# ------------------------------------------------------------------------ numpydoc parsing
def parse_docstring(doc):
    """Split a numpydoc docstring into its summary and sections.

    Parameters
    ----------
    doc : str or None
        A cleaned docstring (`inspect.getdoc`).

    Returns
    -------
    summary : str
        The first paragraph, on one line.
    sections : dict
        Section title -> list of ``(head, description lines)`` entries for the titles in
        `ENTRY_SECTIONS`, and -> raw text for the other sections.
    """
    if not doc:
        return "", {}
    doc = doc.expandtabs()
    matches = list(_HEADER.finditer(doc))
    matches = [m for m in matches if len(m.group("rule")) >= len(m.group("title").strip())]
    body_end = matches[0].start() if matches else len(doc)
    paragraphs = [p for p in re.split(r"\n\s*\n", doc[:body_end].strip()) if p.strip()]
    summary = " ".join(line.strip() for line in paragraphs[0].splitlines()) if paragraphs else ""
    sections = {}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(doc)
        title = m.group("title").strip()
        text = doc[m.end() : end].strip("\n")
        sections[title] = _parse_entries(text) if title in ENTRY_SECTIONS else text
    return summary, sections


def _parse_entries(text):
    """``name : type`` lines at the left margin, each followed by its indented description."""
    entries = []
    for line in text.splitlines():
        if not line.strip():
            if entries:
                entries[-1][1].append("")
            continue
        if not line.startswith(" "):
            entries.append((line.strip(), []))
        elif entries:
            entries[-1][1].append(line)
    out = []
    for head, lines in entries:
        while lines and not lines[-1].strip():
            lines.pop()
        indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
        out.append((head, [x[indent:] for x in lines]))
    return out


# ------------------------------------------------------------------------ rendering
def _md(text):
    """reST inline markup to Markdown: ``code`` -> `code`."""
    return text.replace("``", "`")


def _render_description(lines):
    """Description lines as the indented continuation of a Markdown list item."""
    out, current = [], None
    for line in lines + [""]:
        stripped = line.strip()
        if not stripped:
            if current is not None:
                out.append(current)
                current = None
            if out and out[-1] != "":
                out.append("")
            continue
        if _BULLET.match(stripped) or current is None:
            if current is not None:
                out.append(current)
            current = stripped
        else:
            current += " " + stripped
    while out and out[-1] == "":
        out.pop()
    return ["  " + _md(x) if x else "" for x in out]


def _render_entries(title, entries):
    lines = [f"**{title}**", ""]
    for head, desc in entries:
        name, sep, kind = head.partition(" : ")
        if sep:
            item = f"- `{name.strip()}` : {_md(kind.strip())}"
        else:
            item = f"- {_md(head) if title in ('Returns', 'Yields', 'Raises') else f'`{head}`'}"
        lines.append(item)
        body = _render_description(desc)
        if body:
            lines[-1] += "  "  # a hard line break before the description
            lines.extend(body)
    lines.append("")
    return lines


def _render_doc(doc):
    summary, sections = parse_docstring(doc)
    lines = [_md(summary) if summary else "*No docstring.*", ""]
    for title in ENTRY_SECTIONS:
        if sections.get(title):
            lines.extend(_render_entries(title, sections[title]))
    return lines


def _clean(text):
    return _ADDRESS.sub("", text)


def _signature(obj, *, drop_first=False):
    """``(a, b=1, *, c=None)`` without annotations (they are in the docstrings), or None."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    if drop_first and params and params[0].name in ("self", "cls"):
        params = params[1:]
    sig = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return _clean(str(sig))


def _value_repr(value, limit=100):
    if isinstance(value, (set, frozenset)):
        text = "{" + ", ".join(sorted(repr(v) for v in value)) + "}"
    else:
        text = _clean(repr(value))
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _constant_comment(module, name):
    """The ``#:`` comment lines above ``name = ...`` in the module's (or package's) sources."""
    path = Path(getattr(module, "__file__", "") or "")
    files = sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path]
    pattern = re.compile(rf"^{re.escape(name)}\s*(?::[^=]*)?=")
    for file in files:
        lines = file.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if pattern.match(line):
                comment = []
                j = i - 1
                while j >= 0 and lines[j].startswith("#:"):
                    comment.insert(0, lines[j][2:].strip())
                    j -= 1
                return " ".join(comment)
    return ""


def _members(cls):
    """Public methods and properties of `cls` defined in graphclust, sorted by name."""
    out = []
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        func = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
        if isinstance(raw, property):
            func = raw.fget
        func = getattr(func, "fn", func)  # scikit-learn's available_if descriptor
        if not callable(func) or not getattr(func, "__module__", "").startswith("graphclust"):
            continue
        out.append((name, raw))
    return out


def _is_private(cls):
    """A class users do not meet: a private name, or an implementation base of a private
    module of graphclust that its package does not export (its own bases are shown instead)."""
    if cls.__name__.startswith("_"):
        return True
    parts = cls.__module__.split(".")
    if parts[0] != "graphclust" or not any(p.startswith("_") for p in parts[1:]):
        return False
    package = importlib.import_module(".".join(p for p in parts if not p.startswith("_")))
    return cls.__name__ not in getattr(package, "__all__", ())


def _public_bases(cls):
    """Names of the base classes, private ones replaced by their own public bases."""
    out = []
    for base in cls.__bases__:
        if base is object:
            continue
        if _is_private(base):
            out.extend(b for b in _public_bases(base) if b not in out)
            continue
        top = base.__module__.split(".")[0]
        name = base.__qualname__ if top in ("graphclust", "builtins") else f"{top}.{base.__qualname__}"
        if name not in out:
            out.append(name)
    return out


def _anchor(module, name):
    return f"{module}.{name}"


def _render_name(module_name, module, name, obj):
    anchor = _anchor(module_name, name)
    lines = [f'<a id="{anchor}"></a>', "", f"### {name}", ""]
    if inspect.isclass(obj):
        sig = _signature(obj)
        lines += ["```python", f"class {name}{sig or ''}", "```", ""]
        bases = _public_bases(obj)
        if bases:
            lines += ["Bases: " + ", ".join(f"`{b}`" for b in bases), ""]
        lines += _render_doc(inspect.getdoc(obj))
        members = _members(obj)
        if members:
            lines += ["**Methods and properties**", ""]
            for mname, raw in members:
                lines += [f"#### {name}.{mname}", ""]
                if isinstance(raw, property):
                    lines += ["*property*", ""]
                    lines += _render_doc(inspect.getdoc(raw))
                    continue
                member = getattr(obj, mname)
                drop = not isinstance(raw, (classmethod, staticmethod))
                kind = "classmethod " if isinstance(raw, classmethod) else (
                    "staticmethod " if isinstance(raw, staticmethod) else "")
                lines += ["```python", f"{kind}{name}.{mname}{_signature(member, drop_first=drop)}",
                          "```", ""]
                lines += _render_doc(inspect.getdoc(member))
    elif callable(obj):
        lines += ["```python", f"{name}{_signature(obj)}", "```", ""]
        lines += _render_doc(inspect.getdoc(obj))
    else:
        lines += ["```python", f"{name} = {_value_repr(obj)}", "```", ""]
        comment = _constant_comment(module, name)
        lines += [_md(comment) if comment else f"*Constant ({type(obj).__name__}).*", ""]
    return lines


def _kind_order(obj):
    return 0 if inspect.isclass(obj) else (1 if callable(obj) else 2)


def collect():
    """[(module name, module, [(name, object)])], each object under the first module exporting it."""
    out = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = sorted(set(getattr(module, "__all__", ())), key=lambda s: (s.lower(), s))
        items = []
        for name in names:
            obj = getattr(module, name)
            items.append((name, obj))
        out.append((module_name, module, items))
    seen = {}
    for module_name, _, items in out:
        for name, obj in items:
            seen.setdefault((name, id(obj)), (module_name, name))
    return out, seen


def render():
    """The whole of docs/api.md as a string."""
    modules, first = collect()
    toc = ["## Contents", ""]
    body = []
    for module_name, module, items in modules:
        own = [(n, o) for n, o in items if first[(n, id(o))][0] == module_name]
        elsewhere = [(n, first[(n, id(o))][0]) for n, o in items
                     if first[(n, id(o))][0] != module_name]
        own.sort(key=lambda item: (_kind_order(item[1]), item[0].lower(), item[0]))
        links = ", ".join(f"[{n}](#{_anchor(module_name, n)})" for n, _ in own)
        toc.append(f"- [`{module_name}`](#{module_name}): {links}")
        summary, _ = parse_docstring(inspect.getdoc(module))
        body += [f'<a id="{module_name}"></a>', "", f"## {module_name}", ""]
        if summary:
            body += [_md(summary), ""]
        if elsewhere:
            refs = ", ".join(f"[{n}](#{_anchor(m, n)}) (`{m}`)" for n, m in elsewhere)
            body += [f"Also exported here, documented where first listed: {refs}.", ""]
        for name, obj in own:
            body += _render_name(module_name, module, name, obj)
    head = [
        "# API reference",
        "",
        "Generated from the docstrings by `python scripts/build_api_docs.py` (do not edit by "
        "hand; `tests/test_api_docs.py` fails when this file is stale). Every name below is also "
        "importable from `graphclust` itself, except those of `graphclust.io`, "
        "`graphclust.datasets`, `graphclust.metrics` and `graphclust.plots`. The full docstrings (Notes, Examples) are "
        "available with `help(name)`.",
        "",
    ]
    text = "\n".join(head + toc + [""] + body)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip("\n") + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if docs/api.md differs from the docstrings")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python scripts/build_api_docs.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
