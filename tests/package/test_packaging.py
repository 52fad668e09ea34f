"""What a wheel holds: every package of attention_ref, as setuptools reads pyproject.toml.

A package that the configuration leaves out is missing from a wheel (``pip install .``, not
``-e``), and ``import attention_ref`` fails there, while every test in the checkout passes.
The configuration is resolved here as setuptools resolves it (a list in
``[tool.setuptools] packages``, or ``[tool.setuptools.packages.find]``'s include and exclude
patterns, matched with ``fnmatchcase`` on dotted names): no build, no setuptools needed.
"""

from __future__ import annotations

import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "attention_ref"


def _packages_on_disk(where: Path, namespaces: bool) -> set[str]:
    """Dotted names of the directories under ``where`` that are packages, walked as
    setuptools' ``find_packages`` walks them (with ``namespaces``, any directory whose name
    has no dot is one)."""
    found, stack = set(), [where]
    while stack:
        for directory in sorted(p for p in stack.pop().iterdir() if p.is_dir()):
            if "." in directory.name:
                continue
            if not namespaces and not (directory / "__init__.py").is_file():
                continue
            found.add(".".join(directory.relative_to(where).parts))
            stack.append(directory)
    return found


def _configured_packages() -> set[str]:
    """The packages a wheel built from pyproject.toml holds."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    packages = setuptools.get("packages", {"find": {}})
    if isinstance(packages, list):
        return set(packages)
    find = packages["find"]
    include, exclude = find.get("include", ["*"]), find.get("exclude", [])
    namespaces = find.get("namespaces", True)
    return {
        name
        for where in find.get("where", ["."])
        for name in _packages_on_disk(ROOT / where, namespaces)
        if any(fnmatchcase(name, p) for p in include)
        and not any(fnmatchcase(name, p) for p in exclude)
    }


def test_every_package_of_attention_ref_is_in_the_wheel():
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / PACKAGE).rglob("__init__.py")
    }
    assert {PACKAGE, f"{PACKAGE}.open_models"} <= on_disk  # the walk below sees subpackages
    missing = on_disk - _configured_packages()
    assert not missing, f"pyproject.toml: packages left out of the wheel: {sorted(missing)}"


def test_the_wheel_holds_attention_ref_only():
    """Not the docs hooks, the benchmarks or the tests, nor a __pycache__ folder."""
    packaged = _configured_packages()
    assert PACKAGE in packaged
    others = {name for name in packaged if name.split(".")[0] != PACKAGE or "__" in name}
    assert not others, f"pyproject.toml: not part of the package: {sorted(others)}"
