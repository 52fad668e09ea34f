"""The bars the package is built to, checked on its source with ``ast`` (no torch needed).

``nox -s lint`` runs this file on its own. When a bar fails, change the design (split the class,
extract the helper into a module), never the bar.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "attention_ref"
LEGEND = ROOT / "docs" / "includes" / "shape-legend.yml"

MAX_CLASS_LINES = 250
MAX_MHA_LINES = 200
MAX_BODY_LINES = 60  # a function's body, its docstring excluded


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (``attention_ref.lab.training``)."""
    return {
        ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        ): path
        for path in sorted(package.rglob("*.py"))
    }


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """The package modules that ``name`` imports from, with the names it takes from each."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            found.append((target, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attention_ref"):
            found.append((node.module or "", [alias.name for alias in node.names]))
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names in _imports(name, path):
            for imported in names:  # `from . import x` imports the module x
                if f"{target}.{imported}" in modules:
                    graph[name].add(f"{target}.{imported}")
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if nxt.endswith("__init__") or nxt == "attention_ref":
                continue  # the package's own __init__ re-exports; importing it is no cycle
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def _classes(modules: dict[str, Path]) -> list[tuple[str, int]]:
    return [
        (f"{name}.{node.name}", node.end_lineno - node.lineno + 1)
        for name, path in modules.items()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None
    ]


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def _functions(modules: dict[str, Path]) -> list[tuple[str, int]]:
    return [
        (f"{name}.{node.name}:{node.lineno}", _body_lines(node))
        for name, path in modules.items()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _private_imports(modules: dict[str, Path]) -> list[str]:
    return [
        f"{name}: from {target} import {imported}"
        for name, path in modules.items()
        for target, names in _imports(name, path)
        for imported in names
        if imported.startswith("_") and not imported.startswith("__")
    ]


# What each letter of docs/includes/shape-legend.yml means, as words a module's legend must use
# for it (one of them), and words it must not use (the drift this guards against: E for one
# head's width, as PyTorch's SDPA documentation writes it).
MEANING = {
    "N": (r"batch", None),
    "L": (r"length|queries|tokens|position", None),
    "S": (r"key|memory|source|cached|held", None),
    "E": (r"d_model|model width|embed", r"query/key width|one head|head width|head_dim|d_k"),
    "H": (r"head", r"key/value heads"),
    "D": (r"head|d_k|query/key width", r"model width|d_model"),
    "Dv": (r"value", None),
    "H_kv": (r"key/value|num_kv_heads", None),
    "F": (r"feedforward|feed-forward", None),
}


def _legends(modules: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(module, letter, meaning) for each entry of each module docstring's shape legend."""
    entries = []
    for name, path in modules.items():
        doc = ast.get_docstring(_tree(path)) or ""
        match = re.search(r"Shape legend[^:\n]*(?:\([^)]*\))?[^:\n]*:(.*?)(?:\n\s*\n|$)", doc, re.S)
        if not match:
            continue
        for piece in re.split(r",\s*|\n\s*| {2,}", match.group(1)):
            found = re.match(r"\s*([A-Z][A-Za-z_]*)\b:?\s+(.+)", piece)
            if found:
                entries.append((name, found.group(1), found.group(2).strip()))
    return entries


def test_the_legend_letters_are_the_glossary_letters():
    letters = {
        code.split(";")[0].split(",")[0].strip()
        for row in yaml.safe_load(LEGEND.read_text(encoding="utf-8"))
        for code in ([row["code"]] if isinstance(row["code"], str) else row["code"].values())
    }
    assert {"N", "L", "S", "E", "H", "D", "H_kv", "F"} <= letters


def test_every_legend_letter_means_what_the_glossary_says():
    wrong = []
    for module, letter, meaning in _legends(_modules()):
        if letter not in MEANING:
            continue  # a module's own letter (T, V, R, B, W...)
        must, must_not = MEANING[letter]
        if not re.search(must, meaning, re.I) or (must_not and re.search(must_not, meaning, re.I)):
            wrong.append(f"{module}: {letter} = {meaning!r}")
    assert not wrong, "shape letters that drift from docs/includes/shape-legend.yml:\n" + "\n".join(
        wrong
    )


def test_the_legend_reader_reads_both_styles():
    assert len(_legends(_modules())) > 50  # every module that has a legend is read


def test_no_class_over_the_bar():
    sizes = dict(_classes(_modules()))
    assert sizes["attention_ref.multihead.MultiHeadAttention"] <= MAX_MHA_LINES
    over = {name: n for name, n in sizes.items() if n > MAX_CLASS_LINES}
    assert not over, f"classes over {MAX_CLASS_LINES} lines: {over}"


def test_no_function_body_over_the_bar():
    over = {name: n for name, n in _functions(_modules()) if n > MAX_BODY_LINES}
    assert not over, f"function bodies over {MAX_BODY_LINES} lines (docstring excluded): {over}"


def test_no_private_name_is_imported_between_modules():
    found = _private_imports(_modules())
    assert not found, "shared private helpers belong in a _-module, by a public name:\n" + (
        "\n".join(found)
    )


def test_no_import_cycle():
    assert _cycle(_graph(_modules())) is None


def test_checks_import_nothing_from_the_package():
    modules = _modules()
    imported = _graph(modules)["attention_ref._checks"]
    assert not imported, f"_checks.py is the leaf every module uses; it imports {imported}"


# The checks above must be able to fail: each is run on a small package written here.
BAD = {
    "__init__.py": '"""Shape legend: E one head\'s width, N batch."""\n',
    "a.py": "from .b import _helper\n\n\nclass Big:\n" + "    x = 1\n" * 300,
    "b.py": "from .a import Big\n\n\ndef _helper():\n" + "    y = 1\n" * 70,
    "_checks.py": "from .a import Big\n",
}


@pytest.fixture
def bad_package(tmp_path: Path) -> dict[str, Path]:
    package = tmp_path / "attention_ref"
    package.mkdir()
    for name, text in BAD.items():
        (package / name).write_text(text, encoding="utf-8")
    return _modules(package)


def test_the_checks_fail_on_a_package_that_breaks_every_bar(bad_package):
    assert dict(_classes(bad_package))["attention_ref.a.Big"] > MAX_CLASS_LINES
    assert max(n for _, n in _functions(bad_package)) > MAX_BODY_LINES
    assert _private_imports(bad_package) == ["attention_ref.a: from attention_ref.b import _helper"]
    assert _cycle(_graph(bad_package)) in (
        ["attention_ref.a", "attention_ref.b", "attention_ref.a"],
        ["attention_ref._checks", "attention_ref.a", "attention_ref.b", "attention_ref.a"],
    )
    assert _graph(bad_package)["attention_ref._checks"] == {"attention_ref.a"}
    assert ("attention_ref", "E", "one head's width") in _legends(bad_package)
