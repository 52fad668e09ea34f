"""Run copied programs as a reader would, then their docstring examples (in a fresh Python).

Usage: ``python run_copy.py JOBS.json CASES.py ROOT OUT.pt``. JOBS.json lists ``{"key",
"copy", "names"}``: a program and the module-level definitions it shows. Each program, in a
namespace of its own, is pasted line by line into an interactive console (what the plain
``python`` REPL does with a paste) and also run as a file; any error fails. The modules imported
so far are written down: only what the programs import (torch, numpy).

Then, in each namespace, the docstring examples of every definition the block shows (its
methods' included) run as doctests. An example's ``from attention_ref import a, b`` takes the
names the program defines from the program; only the others come from attention_ref, found in
ROOT, whose modules meanwhile see the program's definitions in place of their own (so that
attention_ref's ``TinyDecoder`` checks its caches against the program's ``KVCache``).
``case_<name>`` from CASES.py, where there is one, is called with the program's globals.
Saved to OUT.pt: the modules, and per program the examples attempted and the cases' results.
"""

import ast
import code
import contextlib
import doctest
import importlib
import json
import pkgutil
import sys

import torch

PACKAGE = "attention_ref"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class PasteConsole(code.InteractiveConsole):
    """The REPL's reading of a paste, failing on the first error instead of printing it."""

    def showtraceback(self):
        raise RuntimeError("the pasted copy raised") from sys.exc_info()[1]

    def showsyntaxerror(self, filename=None, **kwargs):
        raise SyntaxError("the pasted copy is not valid in the REPL") from sys.exc_info()[1]


def pasted(text: str) -> dict:
    console = PasteConsole(locals={"__name__": "__main__"})
    more = False
    for line in text.splitlines():
        more = console.push(line)
    if more:
        console.push("")
    return console.locals


def as_file(text: str) -> dict:
    namespace: dict = {"__name__": "__main__"}
    exec(compile(text, "copy.py", "exec"), namespace)
    return namespace


def docstrings(text: str, names: list[str]) -> list[tuple[str, str, int]]:
    """(qualified name, docstring, line) of each shown definition and everything inside it."""
    found = []
    for top in ast.parse(text).body:
        if getattr(top, "name", None) not in names:
            continue
        stack = [(top, top.name)]
        while stack:
            node, name = stack.pop()
            docstring = ast.get_docstring(node, clean=True)
            if docstring:
                found.append((name, docstring, node.lineno))
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    stack.append((inner, f"{name}.{inner.name}"))
    return found


def from_the_copy(source: str, namespace: dict) -> str:
    """``from attention_ref import a, b`` without the names the program defines."""
    tree = ast.parse(source)
    changed = False
    for i, node in enumerate(tree.body):
        if not (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."))
        ):
            continue
        kept = [a for a in node.names if (a.asname or a.name) not in namespace]
        if len(kept) != len(node.names):
            changed = True
            node.names = kept
            if not kept:
                tree.body[i] = ast.Pass()
    return ast.unparse(tree) + "\n" if changed else source


def package_modules() -> list:
    """attention_ref and all its modules, imported (those that need more than is installed
    here, such as matplotlib, are left out)."""
    package = importlib.import_module(PACKAGE)
    modules = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=PACKAGE + "."):
        with contextlib.suppress(ImportError):
            modules.append(importlib.import_module(info.name))
    return modules


@contextlib.contextmanager
def the_package_sees(text: str, namespace: dict):
    """attention_ref's modules with the program's module-level definitions in place of theirs."""
    defined = {
        target.id if isinstance(target, ast.Name) else getattr(node, "name", None)
        for node in ast.parse(text).body
        for target in getattr(node, "targets", [node])
    } - {None}
    saved = []
    for module in package_modules():
        for name in defined & set(vars(module)):
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, namespace[name])
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def run_examples(text: str, names: list[str], namespace: dict) -> int:
    """Run the examples of the shown definitions in ``namespace``; the number attempted."""
    parser, attempted = doctest.DocTestParser(), 0
    for name, docstring, line in docstrings(text, names):
        test = parser.get_doctest(docstring, dict(namespace), name, "copy.py", line)
        for example in test.examples:
            example.source = from_the_copy(example.source, namespace)
        torch.set_printoptions(profile="default")
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        report: list[str] = []
        result = runner.run(test, out=report.append, clear_globs=True)
        if result.failed:
            raise AssertionError(f"{name}: a docstring example failed\n{''.join(report)}")
        attempted += result.attempted
    return attempted


def main(jobs_path: str, cases_path: str, root: str, out_path: str) -> None:
    cases: dict = {"__name__": "cases"}
    with open(cases_path, encoding="utf-8") as file:
        exec(compile(file.read(), cases_path, "exec"), cases)
    with open(jobs_path, encoding="utf-8") as file:
        jobs = json.load(file)
    namespaces = {}
    for job in jobs:
        try:
            namespaces[job["key"]] = pasted(job["copy"]), as_file(job["copy"])
        except Exception as error:
            raise RuntimeError(f"{job['key']}: {error!r}") from error
    modules = sorted({m.split(".")[0] for m in sys.modules})
    sys.path.append(root)  # attention_ref, for what an example imports besides the program
    results = {}
    for job in jobs:
        try:
            attempted = []
            for ns in namespaces[job["key"]]:
                with the_package_sees(job["copy"], ns):
                    attempted.append(run_examples(job["copy"], job["names"], ns))
            results[job["key"]] = {
                "examples": min(attempted),
                "cases": {
                    name: tuple(cases[f"case_{name}"](ns) for ns in namespaces[job["key"]])
                    for name in job["names"]
                    if f"case_{name}" in cases
                },
            }
        except Exception as error:
            raise RuntimeError(f"{job['key']}: {error!r}") from error
    torch.save({"results": results, "modules": modules}, out_path)


if __name__ == "__main__":
    main(*sys.argv[1:])
