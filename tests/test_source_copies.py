"""Every package-code block on the site copies a program that runs on its own.

For each ```python block of ``include:`` lines on every page (both languages), the copy button
copies docs_hooks.source_code's self-contained program (tests/e2e/test_copy_buttons.py checks that
the built pages carry exactly this text). Here each distinct copy is pasted line by line into an
interactive console and run as a file, in a fresh Python that sees only torch and numpy (and
what torch itself requires): not attention_ref, not the test tools. Then every object the block
shows is called on a small input (tests/copies/cases.py) and must give attention_ref's result.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata as metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from docs_hooks.source_code import FENCE, Include, source_block

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
COPIES = Path(__file__).parent / "copies"
sys.path.insert(0, str(COPIES))
import cases  # noqa: E402


def _blocks() -> dict[str, tuple[str, list[Include], list[str]]]:
    """Each distinct copy -> (its text, its includes, the pages that show it)."""
    found: dict[str, tuple[str, list[Include], list[str]]] = {}
    for page in sorted(DOCS.glob("*.md")):
        lang = "zh" if page.name.endswith(".zh.md") else "en"
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            lines = [line.strip() for line in match["body"].splitlines()]
            block = source_block(lines, lang)
            includes = [Include.parse(line.split("include:", 1)[1]) for line in lines]
            key = " + ".join(i.dotted for i in includes)
            found.setdefault(key, (block.copy, includes, []))[2].append(page.name)
    return found


BLOCKS = _blocks()


def _main_names(includes: list[Include]) -> list[str]:
    """The top-level objects a block shows (a method's class, an excerpt's function)."""
    names = []
    for include in includes:
        top = include.target.top
        name = top.name if hasattr(top, "name") else top.targets[0].id
        if name not in names:
            names.append(name)
    return names


def _requirements(name: str, seen: set[str]) -> None:
    """The distribution ``name`` and, recursively, what it requires (no extras)."""
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        return
    seen.add(key)
    for requirement in metadata.requires(name) or []:
        if "extra ==" in requirement:
            continue
        dependency = re.match(r"[A-Za-z0-9._-]+", requirement)[0]
        try:
            metadata.distribution(dependency)
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python
        _requirements(dependency, seen)


def _environment(directory: Path, distributions: list[str]) -> Path:
    """A folder that holds only these installed distributions (as links), for ``sys.path``."""
    seen: set[str] = set()
    for name in distributions:
        _requirements(name, seen)
    directory.mkdir()
    for name in seen:
        dist = metadata.distribution(name)
        for top in {Path(str(f)).parts[0] for f in dist.files or []}:
            source = Path(str(dist.locate_file(top)))
            if top.endswith((".dist-info", ".pth")) or top == ".." or not source.exists():
                continue
            if not (directory / top).exists():
                (directory / top).symlink_to(source)
    return directory


def _run(environment: Path, jobs: list[dict], folder: Path) -> dict:
    """Run the copies in one fresh Python that sees only ``environment`` beside the stdlib."""
    (folder / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    out = folder / "out.pt"
    arguments = [str(folder / "jobs.json"), str(COPIES / "cases.py"), str(out)]
    bootstrap = (
        "import sys, runpy; "
        f"sys.path.append({str(environment)!r}); "
        f"sys.argv = ['run_copy.py', *{arguments!r}]; "
        f"runpy.run_path({str(COPIES / 'run_copy.py')!r}, run_name='__main__')"
    )
    # -I: no user site, no PYTHONPATH, no current directory; -S: no site-packages at all.
    process = subprocess.run(
        [sys.executable, "-I", "-S", "-c", bootstrap],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 0, f"a copy failed in a fresh Python:\n{process.stderr[-4000:]}"
    return torch.load(out, weights_only=False)


def _jobs(needs_matplotlib: bool) -> list[dict]:
    jobs = []
    for key, (text, includes, _) in sorted(BLOCKS.items()):
        names = [n for n in _main_names(includes) if hasattr(cases, f"case_{n}")]
        if any(n in cases.NEEDS_MATPLOTLIB for n in names) == needs_matplotlib:
            jobs.append({"key": key, "copy": text, "names": names})
    return jobs


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every copy run: those that plot where matplotlib is installed too, the rest without."""
    results = {}
    for needs_matplotlib in (False, True):
        folder = tmp_path_factory.mktemp("copies")
        wanted = ["torch", "numpy", *(["matplotlib"] if needs_matplotlib else [])]
        environment = _environment(folder / "site", wanted)
        ran = _run(environment, _jobs(needs_matplotlib), folder)
        assert "attention_ref" not in ran["modules"], "a copy imports attention_ref"
        assert not {"pytest", "hypothesis", "docs_hooks"} & set(ran["modules"])
        if not needs_matplotlib:
            assert "matplotlib" not in ran["modules"]
        results.update(ran["results"])
    return results


def _same(actual, expected, where: str) -> None:
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=lambda m: f"{where}: {m}")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _same(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def test_every_shown_object_has_a_case():
    missing = {
        name
        for _, includes, _ in BLOCKS.values()
        for name in _main_names(includes)
        if not hasattr(cases, f"case_{name}")
    }
    assert not missing, f"add case_<name> to tests/copies/cases.py for {sorted(missing)}"


@pytest.mark.parametrize("key", sorted(BLOCKS))
def test_copy_runs_alone_and_matches_the_package(key, ran):
    _, includes, pages = BLOCKS[key]
    for name in _main_names(includes):
        module = importlib.import_module(
            next(i.target.module.name for i in includes if _main_names([i]) == [name])
        )
        expected = getattr(cases, f"case_{name}")(vars(module))
        pasted, as_file = ran[key][name]
        _same(pasted, expected, f"{key} ({', '.join(pages)}): {name}, pasted into the REPL")
        _same(as_file, expected, f"{key}: {name}, run as a file")


def test_copies_keep_no_markers_docstrings_or_inner_blank_lines():
    for key, (text, _, _) in BLOCKS.items():
        assert "--8<--" not in text, key
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                assert ast.get_docstring(node) is None, f"{key}: docstring of {node.name}"
        lines = text.splitlines()
        for number, line in enumerate(lines):
            if not line.strip():
                following = next((n for n in lines[number + 1 :] if n.strip()), "")
                assert not following.startswith((" ", "\t")), f"{key}: blank line in a block"
