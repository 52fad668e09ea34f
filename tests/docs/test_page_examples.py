"""Every page's examples as a reader takes them away: copied, or downloaded as script or notebook.

Each test takes a page's Markdown file, ``doc`` (``page`` is the built page in tests/e2e).

- The copy of a doctest block (docs_hooks/doctest_copy.py) is its code without prompts or
  output; a raising line is commented out with its error named; before it come the earlier
  lines of the page it needs. Every block's copy pastes into the plain ``python`` REPL
  (checked with the REPL's own compiler, ``codeop``) and runs alone in a fresh interpreter
  that has torch, numpy and the package (``test_every_copy_runs_alone``).
- The page's script, ``downloads/<page>.<lang>.py``, runs in a fresh process and prints what
  the page's doctests show.
- The page's notebook, ``downloads/<page>.<lang>.ipynb``, is valid nbformat 4 and runs in a
  real Jupyter kernel (nbclient + ipykernel), each cell printing what the page's doctest
  printed (whitespace normalised, as doctest's NORMALIZE_WHITESPACE does).
- Scripts, notebooks and copies run in a temporary folder, with the package as an installed
  copy has it (``attention_ref/`` alone, without the repository's docs/ beside it).
- When site/ holds a build newer than the page, its copy buttons' ``data-copy`` and its
  downloads are exactly these (tests/e2e runs the same checks after every build).

Scripts and notebooks are made from the Markdown alone, by the functions the site's build uses,
and run concurrently, as many at a time as there are CPUs.
"""

from __future__ import annotations

import asyncio
import atexit
import codeop
import difflib
import doctest
import functools
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs_hooks import doctest_copy, page_examples

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SITE = Path(os.environ.get("E2E_SITE", ROOT / "site")).resolve()
SITE_URL = "https://attention-ref.github.io/attention-ref/"
TIMEOUT = 300  # seconds for one page's script or notebook
COMPARE = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _lang(doc: Path) -> str:
    return "zh" if doc.name.endswith(".zh.md") else "en"


def _pages() -> list[Path]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        if page_examples.has_examples(doc.read_text(encoding="utf-8")):
            found.append(doc)
    return found


PAGES = _pages()
IDS = [doc.name for doc in PAGES]


def _kwargs(doc: Path, site_url: str = SITE_URL) -> dict[str, str]:
    return {"site_url": site_url, "src_uri": doc.name, "lang": _lang(doc)}


# --- the copy of one block ------------------------------------------------------------------


def test_copy_drops_prompts_and_output_and_comments_out_what_raises() -> None:
    transcript = (
        ">>> import torch\n"
        ">>> k = torch.zeros(1, 5, 8)\n"
        ">>> k.view(1, 3, 2, 4)  # the query's length\n"
        "Traceback (most recent call last):\n"
        "  ...\n"
        "RuntimeError: shape '[1, 3, 2, 4]' is invalid for input of size 40\n"
        ">>> def double(x):\n"
        "...     return 2 * x\n"
        ">>> double(k).shape\n"
        "torch.Size([1, 5, 8])\n"
    )
    assert doctest_copy.runnable(transcript) == (
        "import torch\n"
        "k = torch.zeros(1, 5, 8)\n"
        "# k.view(1, 3, 2, 4)  # the query's length  # raises RuntimeError: shape '[1, 3, 2, 4]'"
        " is invalid for input of size 40\n"
        "def double(x):\n"
        "    return 2 * x\n"
        "\n"
        "double(k).shape"
    )


def test_doctest_copy_examples() -> None:
    """doctest_copy's docstring examples pass, and there are some to pass (none would be 0/0)."""
    results = doctest.testmod(doctest_copy)
    assert results.attempted > 0, "no docstring example in docs_hooks/doctest_copy.py"
    assert results.failed == 0


def repl_problems(code: str) -> list[str]:
    """What the plain ``python`` REPL rejects when ``code`` is pasted, line by line.

    The REPL compiles what it has read after every line (``codeop``, as ``code.interact``
    does): a statement is run when it is complete, so a compound statement must end with a
    blank line before the next statement starts.
    """
    compile_line = codeop.CommandCompiler()
    problems, buffer = [], []
    for number, line in enumerate([*code.splitlines(), ""], start=1):
        buffer.append(line)
        try:
            compiled = compile_line("\n".join(buffer), "<stdin>", "single")
        except (SyntaxError, ValueError, OverflowError) as error:
            problems.append(f"line {number}: {line!r}: {error}")
            compiled = True
        if compiled is not None:
            buffer = []
    return problems


def test_repl_rejects_a_loop_without_its_blank_line() -> None:
    assert repl_problems("for i in range(2):\n    print(i)\n\nprint(3)") == []
    assert repl_problems("for i in range(2):\n    print(i)\nprint(3)") != []


def _standalone(doc: Path) -> list[str]:
    """What the doc's copy buttons copy (docs_hooks/hooks/doctest_blocks.py), from its Markdown."""
    blocks = page_examples.doctests(doc.read_text(encoding="utf-8"))
    return doctest_copy.standalone([block.transcript for block in blocks], _lang(doc))


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_page_copies_paste_into_the_repl(doc: Path) -> None:
    assert repl_problems(page_examples.page_copy(doc.read_text(encoding="utf-8"))) == []
    for number, copy in enumerate(_standalone(doc)):
        assert repl_problems(copy) == [], f"block {number}"


def test_copy_carries_the_lines_it_needs() -> None:
    """A block's copy starts with the earlier examples it needs, and only those."""
    blocks = [
        ">>> import torch\n>>> _ = torch.manual_seed(0)\n>>> a = torch.randn(2)\n"
        ">>> b = torch.ones(2)\n>>> a.shape\ntorch.Size([2])\n>>> c = 3\n",
        ">>> print(c)\n3\n>>> w = torch.nn.Linear(2, 2)\n>>> w.eval()  # doctest: +ELLIPSIS\n"
        "Linear(...)\n",
        ">>> w(a).shape\ntorch.Size([2])\n",
    ]
    copies = doctest_copy.standalone(blocks)
    assert copies[0] == doctest_copy.runnable(blocks[0])
    assert copies[2] == (
        "# Earlier on the page: the lines this block needs\n"
        "import torch\n_ = torch.manual_seed(0)\na = torch.randn(2)\n"
        "w = torch.nn.Linear(2, 2)\nw.eval()  # doctest: +ELLIPSIS\n\n"
        "# This block\nw(a).shape"
    )


def test_results_file_read_becomes_its_data() -> None:
    """A read of docs/bench-results/cpu.json becomes the parts the page reads, written out."""
    read = (
        ">>> import json, pathlib\n>>> import attention_ref\n"
        ">>> path = pathlib.Path(attention_ref.__file__).parents[1]"
        ' / "docs/bench-results/cpu.json"\n'
        '>>> decode = json.loads(path.read_text(encoding="utf-8"))["decode"]\n'
    )
    copy = doctest_copy.standalone([read])[0]
    assert "parents[1]" not in copy and '"decode"' in copy and '"apis"' not in copy
    namespace: dict = {}
    exec(copy, namespace)
    results = json.loads(doctest_copy.BENCH.read_text(encoding="utf-8"))
    assert namespace["decode"] == results["decode"]


# A fresh interpreter for each copy, fast: a server imports torch, numpy and the package once
# (what a copy's own imports would load), then forks a child for each copy, which runs it in an
# empty namespace, from an empty folder, and reports the exception it raised, if any.
FORK_SERVER = r"""
import json, os, signal, sys, traceback
import numpy, torch, attention_ref
beside = os.path.join(os.path.dirname(os.path.dirname(attention_ref.__file__)), "docs")
assert not os.path.exists(beside), f"{beside}: the package is not alone"
torch.set_num_threads(1)
copies, timeout, limit = json.load(sys.stdin), int(sys.argv[1]), int(sys.argv[2])
errors, running, waiting = {}, {}, list(range(len(copies)))
while waiting or running:
    while waiting and len(running) < limit:
        i = waiting.pop(0)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            status = 0
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1), os.dup2(null, 2)
            signal.alarm(timeout)
            try:
                exec(compile(copies[i], f"<copy {i}>", "exec"), {"__name__": "__main__"})
            except BaseException:
                os.write(write, traceback.format_exc()[-3000:].encode())
                status = 1
            os._exit(status)
        os.close(write)
        running[pid] = (i, read)
    pid, status = os.wait()
    i, read = running.pop(pid)
    message = os.read(read, 4000).decode(errors="replace")
    os.close(read)
    if status:
        errors[i] = message or f"ended with status {status} (killed after {timeout} s?)"
json.dump(errors, sys.stdout)
"""


def run_copies(copies: list[str], folder: Path, timeout: int = 120) -> dict[int, str]:
    """Run each copy alone in a fresh interpreter; the errors, by the copy's index."""
    process = subprocess.run(
        [sys.executable, "-c", FORK_SERVER, str(timeout), str(os.cpu_count() or 1)],
        input=json.dumps(copies),
        capture_output=True,
        text=True,
        cwd=folder,
        env=_env(),
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return {int(i): error for i, error in json.loads(process.stdout).items()}


def test_every_copy_runs_alone(tmp_path: Path) -> None:
    """Every doctest block's copy runs alone in a fresh Python with torch, numpy and the package.

    The English and Chinese copies of a block differ in their comments only (as
    tests/docs/test_docs_code_blocks.py checks): the same code is run once for both.
    """
    where: dict[str, tuple[str, list[str]]] = {}
    for doc in PAGES:
        for number, copy in enumerate(_standalone(doc)):
            key = _without_comments(copy)
            where.setdefault(key, (copy, []))[1].append(f"{doc.name} block {number}")
    copies = [copy for copy, _ in where.values()]
    names = [blocks for _, blocks in where.values()]
    errors = run_copies(copies, tmp_path)
    problems = [f"{names[i]}:\n{error}" for i, error in sorted(errors.items())]
    assert not problems, "\n\n".join(problems)


# --- the script and the notebook ------------------------------------------------------------


def test_install_cell_is_valid_in_ipython() -> None:
    """The notebook's `%pip` line, inside `except ImportError:`, is Python once IPython reads it."""
    from IPython.core.inputtransformer2 import TransformerManager

    for lang in page_examples.WORDS:
        cell = page_examples.install_cell(lang)
        python = TransformerManager().transform_cell(cell)
        assert "get_ipython().run_line_magic('pip'" in python
        compile(python, "<cell>", "exec")


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_script_is_the_page_copies(doc: Path) -> None:
    """The script's code is the page's copies, a value the page shows printed."""
    markdown = doc.read_text(encoding="utf-8")
    script = page_examples.script(markdown, **_kwargs(doc))
    code = [line for line in script.splitlines() if line.strip() and not line.startswith("# ")]
    copies = page_examples.page_copy(markdown, _lang(doc))
    copies = [line for line in copies.splitlines() if line.strip() and not line.startswith("# ")]
    unprinted = functools.partial(re.sub, r"print|repr|[()]", "")
    assert [unprinted(line) for line in code] == [unprinted(line) for line in copies]


def test_script_prints_a_shown_value() -> None:
    (shown,) = doctest_copy.examples(">>> x = 2\n>>> max(x,\n...     3)  # three\n3\n")[1:]
    assert page_examples.printing(shown, shown.source.rstrip()) == "print(max(x,\n    3))  # three"
    (text,) = doctest_copy.examples(">>> 'a' * 2\n'aa'\n")
    assert page_examples.printing(text, "'a' * 2") == "print(repr('a' * 2))"


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_notebook_is_valid_nbformat(doc: Path) -> None:
    import nbformat

    notebook = page_examples.notebook(doc.read_text(encoding="utf-8"), **_kwargs(doc))
    nbformat.validate(nbformat.reads(json.dumps(notebook), as_version=4))
    first = notebook["cells"][0]
    assert first["cell_type"] == "code" and "import attention_ref" in "".join(first["source"])
    markdown = "".join(
        line for c in notebook["cells"] if c["cell_type"] == "markdown" for line in c["source"]
    )
    assert not re.search(r"\{ *#[\w-]+ *\}|^ *(!!!|\?\?\?|===) ", markdown, re.M), "MkDocs syntax"
    assert not re.search(r"\]\((?!https?://)", markdown), "a relative link"


@dataclass
class Run:
    """What running a page's script or notebook gave."""

    error: str = ""  # the script's stderr, or the notebook's exception
    stdout: str = ""  # what the script printed
    outputs: list[list[dict]] | None = None  # notebook: each code cell's outputs, as executed


@functools.cache
def installed() -> Path:
    """A folder holding the package alone, as pip installs it: no docs/ beside attention_ref/.

    On the path before the editable install of the checkout (whose finder Python asks after
    the path), it is the attention_ref that scripts, notebooks and copies import.
    """
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"attention-ref-installed-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "attention_ref", folder / "attention_ref", ignore=ignore)
    return folder


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(installed())
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONWARNINGS", None)
    return env


async def _run_script(doc: Path, folder: Path, limit: asyncio.Semaphore) -> Run:
    path = folder / page_examples.download_name(doc.name, _lang(doc), ".py")
    path.write_text(page_examples.script(doc.read_text(encoding="utf-8"), **_kwargs(doc)))
    async with limit:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(path),
            cwd=folder,
            env=_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT)
        except TimeoutError:
            process.kill()
            return Run(error=f"no end after {TIMEOUT} s")
    return Run(error=stderr.decode() if process.returncode else "", stdout=stdout.decode())


async def _run_notebook(doc: Path, folder: Path, limit: asyncio.Semaphore) -> Run:
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as error:
        return Run(error=f"{error}: install the test group (nbformat, nbclient, ipykernel)")

    made = page_examples.notebook(doc.read_text(encoding="utf-8"), **_kwargs(doc))
    notebook = nbformat.reads(json.dumps(made), as_version=4)  # as read from the file
    client = NotebookClient(
        notebook,
        timeout=TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    async with limit:
        try:
            await client.async_execute(env=_env())
        except Exception as error:  # a cell that raised: nbclient names it
            return Run(error=f"{type(error).__name__}: {error}")
    return Run(outputs=[cell.outputs for cell in notebook.cells if cell.cell_type == "code"])


def _without_comments(code: str) -> str:
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    code = tokenize.untokenize(t for t in tokens if t.type != tokenize.COMMENT)
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def _what_runs(test: str, doc: Path) -> str:
    """What a run depends on: the code without its comments (and the outputs it must give)."""
    markdown = doc.read_text(encoding="utf-8")
    if test == "test_script_runs_in_a_fresh_interpreter":
        return _without_comments(page_examples.script(markdown, **_kwargs(doc)))
    cells = page_examples.notebook(markdown, **_kwargs(doc))["cells"]
    code = [
        (_without_comments("".join(c["source"])), c["outputs"])
        for c in cells
        if c["cell_type"] == "code"
    ]
    return json.dumps(code)


@pytest.fixture(scope="session")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every script and notebook this session's tests ask for, run concurrently, once.

    A page's English and Chinese scripts (and notebooks) differ in their comments and prose
    only, as tests/docs/test_docs_code_blocks.py checks: the same code, giving the same outputs,
    is run once for both.
    """
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's own future default
    wanted = {
        (item.originalname, item.callspec.params["doc"])
        for item in request.session.items
        if getattr(item, "originalname", "") in RUNNERS and hasattr(item, "callspec")
    }

    async def run_all() -> dict:
        limit = asyncio.Semaphore(os.cpu_count() or 1)
        jobs, same = {}, {}
        for test, doc in sorted(wanted):
            code = (test, _what_runs(test, doc))
            if code not in jobs:
                folder = tmp_path_factory.mktemp(f"{doc.stem}-{test[5:12]}")
                jobs[code] = asyncio.create_task(RUNNERS[test](doc, folder, limit))
            same[test, doc] = jobs[code]
        return {key: await job for key, job in same.items()}

    return asyncio.run(run_all())


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_script_runs_in_a_fresh_interpreter(doc: Path, runs: dict) -> None:
    """The script runs, and prints what the page's doctests show, in order."""
    run = runs["test_script_runs_in_a_fresh_interpreter", doc]
    assert not run.error, run.error[-3000:]
    blocks = page_examples.doctests(doc.read_text(encoding="utf-8"))
    shown = "".join(
        re.sub(r"(?m)^<BLANKLINE>$", "", example.want)
        for block in blocks
        for example in doctest_copy.examples(block.transcript)
        if doctest_copy.raised(example) is None
    )
    assert run.stdout.strip(), "the script prints nothing"
    checker = doctest.OutputChecker()
    if not checker.check_output(shown, run.stdout, COMPARE):
        diff = difflib.unified_diff(shown.splitlines(), run.stdout.splitlines(), "page", "script")
        pytest.fail("the script does not print what the page shows:\n" + "\n".join(diff)[:4000])


def _printed(outputs: list[dict]) -> tuple[list[str], str]:
    """A cell's output kinds and its text, as a reader sees it (a print may come in pieces)."""
    kinds, text = [], ""
    for output in outputs:
        if not (kinds and kinds[-1] == output["output_type"] == "stream"):
            kinds.append(output["output_type"])
        if output["output_type"] == "stream":
            text += "".join(output["text"])
        elif output["output_type"] == "error":
            text += f"{output['ename']}: {output['evalue']}\n"
        else:
            text += "".join(output.get("data", {}).get("text/plain", "")) + "\n"
    return kinds, text


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_notebook_runs_and_prints_what_the_page_shows(doc: Path, runs: dict) -> None:
    run = runs["test_notebook_runs_and_prints_what_the_page_shows", doc]
    assert not run.error, run.error[-3000:]
    made = page_examples.notebook(doc.read_text(encoding="utf-8"), **_kwargs(doc))
    code_cells = [cell for cell in made["cells"] if cell["cell_type"] == "code"]
    checker = doctest.OutputChecker()
    problems = []
    for made, outputs in zip(code_cells, run.outputs, strict=True):
        (want_kinds, want), (got_kinds, got) = _printed(made["outputs"]), _printed(outputs)
        if want_kinds != got_kinds or not checker.check_output(want, got, COMPARE):
            source = "".join(made["source"])
            problems.append(f"{source}\n  page: {want_kinds} {want!r}\n  ran:  {got_kinds} {got!r}")
    assert not problems, "\n\n".join(problems)


RUNNERS = {
    "test_script_runs_in_a_fresh_interpreter": _run_script,
    "test_notebook_runs_and_prints_what_the_page_shows": _run_notebook,
}


# --- the built site -------------------------------------------------------------------------


def built_page(doc: Path) -> Path:
    lang_dir = "" if _lang(doc) == "en" else f"{_lang(doc)}/"
    return SITE / lang_dir / page_examples.page_path(doc.name) / "index.html"


def _built_or_skip(doc: Path) -> str:
    built = built_page(doc)
    if not built.is_file():
        pytest.skip(f"no built site at {SITE} (`nox -s docs` builds it)")
    sources = [doc, *(doc.parent / "includes").iterdir()]  # a page may include those files
    newest = max(sources, key=lambda source: source.stat().st_mtime)
    if built.stat().st_mtime < newest.stat().st_mtime:
        pytest.skip(f"{built.relative_to(SITE)} is older than {newest.name}: rebuild the site")
    return built.read_text(encoding="utf-8")


def _site_url() -> str:
    """The ``site_url`` the site was built with: the home page's canonical link."""
    found = re.search(r'<link rel="canonical" href="([^"]+)"', (SITE / "index.html").read_text())
    assert found, "the home doc has no canonical link"
    return found[1]


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_built_copy_buttons_copy_the_page_copies(doc: Path) -> None:
    built = _built_or_skip(doc)
    copied = [
        html.unescape(match["copy"])
        for match in re.finditer(
            r'<div class="(?P<cls>[^"]*)">(?:(?!<div ).)*?<code data-copy="(?P<copy>[^"]*)"',
            built,
            re.S,
        )
        if "source-include-" not in match["cls"]  # package code: tests/docs/test_source_copies.py
    ]
    assert copied == _standalone(doc)


@pytest.mark.parametrize("doc", PAGES, ids=IDS)
def test_built_downloads_are_the_page_examples(doc: Path) -> None:
    """The doc links its notebook and script, and they are the ones made from its Markdown."""
    built = _built_or_skip(doc)
    markdown = doc.read_text(encoding="utf-8")
    kwargs = _kwargs(doc, site_url=_site_url())
    for suffix in (".ipynb", ".py"):
        name = page_examples.download_name(doc.name, _lang(doc), suffix)
        link = re.search(rf'<a download href="(?P<href>[^"]*/{re.escape(name)})"', built)
        assert link, f"the doc does not link {name}"
        file = (built_page(doc).parent / link["href"]).resolve()
        text = file.read_text(encoding="utf-8")
        if suffix == ".py":
            assert text == page_examples.script(markdown, **kwargs)
        else:
            assert json.loads(text) == page_examples.notebook(markdown, **kwargs)
