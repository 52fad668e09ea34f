"""Every package-code block on the site copies what docs_hooks/source_code.py's contract says.

For each ```python block of ``include:`` lines on every page (both languages; the copy button
copies docs_hooks.source_code's text, and tests/e2e/test_copy_buttons.py checks that the built
pages carry exactly it):

- an **excerpt** (a method, part of a body) copies exactly the lines it shows;
- a block of whole module-level definitions copies a **program**: pasted line by line into an
  interactive console and run as a file, in a fresh Python that sees only torch and numpy (and
  what torch itself requires), not attention_ref nor the test tools. Then the docstring
  examples of every definition it shows run against it (tests/docs/copies/run_copy.py), and a
  program must attempt some: a copy carries its definitions' docstrings. Only what a docstring
  cannot express (private helpers without examples) has a case in tests/docs/copies/cases.py, which
  must give attention_ref's own result.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata as metadata
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from docs_hooks.source_code import TOOL_COMMENT, Include, SourceBlock, include_lines, source_block

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COPIES = Path(__file__).parent / "copies"
CASES = COPIES / "cases.py"
MAX_ADDED = 500  # lines a program may add to what its block shows: a fixed price, never raised
MAX_CASES = 12


@dataclass
class Block:
    """One distinct block: what it shows and copies, its includes, the pages that show it."""

    block: SourceBlock
    includes: list[Include]
    pages: list[str]

    @property
    def names(self) -> list[str]:
        """The module-level definitions the block shows (a method's class, for an excerpt)."""
        return list(dict.fromkeys(include.target.name for include in self.includes))

    @property
    def module(self) -> str:
        return self.includes[0].target.module.path


def _blocks() -> dict[str, Block]:
    found: dict[str, Block] = {}
    for page in sorted(DOCS.glob("*.md")):
        lang = "zh" if page.name.endswith(".zh.md") else "en"
        for lines in include_lines(page.read_text(encoding="utf-8")):
            includes = [Include.parse(line.split("include:", 1)[1]) for line in lines]
            key = " + ".join(f"{i.dotted} {i.part}" for i in includes)
            if key not in found:
                found[key] = Block(source_block(lines, lang), includes, [])
            found[key].pages.append(page.name)
    return found


BLOCKS = _blocks()
PROGRAMS = {key: block for key, block in BLOCKS.items() if not block.block.is_excerpt}
EXCERPTS = {key: block for key, block in BLOCKS.items() if block.block.is_excerpt}


def _cases() -> dict:
    namespace: dict = {"__name__": "cases"}
    exec(compile(CASES.read_text(encoding="utf-8"), str(CASES), "exec"), namespace)
    return {name: value for name, value in namespace.items() if name.startswith("case_")}


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
    """Run the programs in one fresh Python that sees only ``environment`` beside the stdlib."""
    (folder / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    out = folder / "out.pt"
    arguments = [str(folder / "jobs.json"), str(CASES), str(ROOT), str(out)]
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


def needs_matplotlib(text: str) -> bool:
    return "matplotlib" in text


def run_programs(programs: dict[str, tuple[str, list[str]]], folder: Path) -> dict:
    """Each program (key -> its text and shown names) run alone: those that plot with
    matplotlib installed too, the rest without. Key -> examples attempted and cases' results."""
    results = {}
    for plots in (False, True):
        jobs = [
            {"key": key, "copy": text, "names": names}
            for key, (text, names) in sorted(programs.items())
            if needs_matplotlib(text) == plots
        ]
        if not jobs:
            continue
        here = folder / f"matplotlib-{plots}"
        here.mkdir()
        wanted = ["torch", "numpy", *(["matplotlib"] if plots else [])]
        ran = _run(_environment(here / "site", wanted), jobs, here)
        assert "attention_ref" not in ran["modules"], "a copy imports attention_ref"
        assert not {"pytest", "hypothesis", "docs_hooks"} & set(ran["modules"])
        if not plots:
            assert "matplotlib" not in ran["modules"]
        results.update(ran["results"])
    return results


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    programs = {key: (b.block.copy, b.names) for key, b in PROGRAMS.items()}
    return run_programs(programs, tmp_path_factory.mktemp("copies"))


def _same(actual, expected, where: str) -> None:
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=lambda m: f"{where}: {m}")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _same(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def test_the_site_shows_programs_and_excerpts():
    assert len(PROGRAMS) >= 20 and len(EXCERPTS) >= 5, (len(PROGRAMS), len(EXCERPTS))


@pytest.mark.parametrize("key", sorted(EXCERPTS))
def test_excerpt_copies_what_it_shows(key):
    block = EXCERPTS[key].block
    assert block.copy == block.shown, key
    assert block.note == "" and block.excerpt_of


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_program_runs_alone_and_passes_its_examples(key, ran):
    program = PROGRAMS[key]
    result = ran[key]
    cases = _cases()
    where = f"{key} ({', '.join(program.pages)})"
    assert result["examples"] > 0 or result["cases"], (
        f"{where}: no docstring example ran against the copy; give the definition one (or, "
        "for a private helper, a case in tests/docs/copies/cases.py)"
    )
    module = vars(importlib.import_module(program.module))
    for name, (pasted, as_file) in result["cases"].items():
        expected = cases[f"case_{name}"](module)
        _same(pasted, expected, f"{where}: {name}, pasted into the REPL")
        _same(as_file, expected, f"{where}: {name}, run as a file")


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_program_carries_its_definitions_as_written(key):
    """Docstrings included; no excerpt markers, tool comments or blank lines inside a block."""
    program = PROGRAMS[key]
    text = program.block.copy
    assert "--8<--" not in text, key
    assert not any(TOOL_COMMENT.search(line) for line in text.splitlines()), key
    tree = {getattr(n, "name", None): n for n in ast.parse(text).body}
    for include in program.includes:
        obj = include.target.obj
        if obj.docstring is not None:
            node = tree[obj.name]
            assert ast.get_docstring(node) == ast.get_docstring(ast.parse(obj.source).body[0]), (
                f"{key}: {obj.name} without its docstring"
            )
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.strip():
            following = next((n for n in lines[number + 1 :] if n.strip()), "")
            assert not following.startswith((" ", "\t")) or _in_string(text, number + 1), key


def _in_string(text: str, line: int) -> bool:
    """Whether line ``line`` (1-based) of ``text`` lies inside a multi-line string."""
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.lineno < line <= node.end_lineno)
        ):
            return True
    return False


def _added() -> dict[str, int]:
    return {
        key: len(b.block.copy.splitlines()) - len(b.block.shown.splitlines())
        for key, b in PROGRAMS.items()
    }


def test_generate_copies_little():
    """``generate`` carries KVCache, not the model its annotation names."""
    added = next(n for key, n in _added().items() if key.startswith("attention_ref.decoding.gen"))
    assert added <= 60, added


def test_copies_stay_small():
    """A program adds at most MAX_ADDED lines to what its block shows."""
    added = _added()
    too_big = {key: n for key, n in added.items() if n > MAX_ADDED}
    assert not too_big, f"copies that add more than {MAX_ADDED} lines: {too_big}"


def test_cases_are_few_and_used():
    cases = {name.removeprefix("case_") for name in _cases()}
    assert len(cases) <= MAX_CASES, f"{len(cases)} cases: a docstring example says it better"
    shown = {name for b in PROGRAMS.values() for name in b.names}
    assert cases <= shown, f"cases for objects no program shows: {sorted(cases - shown)}"
