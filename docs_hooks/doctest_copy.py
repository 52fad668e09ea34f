"""What the copy button of a ```pycon doctest block copies: the Python a reader can run.

The transcript is read by Python's own ``doctest.DocTestParser``, as the tests read it: the
``>>>``/``...`` prompts go, the expected output goes. What is left pastes into a file, a
notebook and the plain ``python`` REPL alike:

- a statement that spans several lines is followed by a blank line, which the REPL needs to
  run it;
- a statement whose expected output is an exception is copied commented out, with the error
  named, so that the copy runs to the end::

      # k.view(1, 3, 2, 4)  # raises RuntimeError: shape '[1, 3, 2, 4]' is invalid ...

- a statement marked ``# doctest: +SKIP``, which the tests never run because it needs what
  they lack (the network, a library outside the package's dependencies), is copied commented
  out as well, so that copies, scripts and notebooks never run it either.

A block in the middle of a page uses what the blocks above it defined. Its copy runs alone:
``standalone`` puts before it the earlier examples of the page that it needs, found with
``ast`` (the names each example binds, changes in place and uses), in page order, under a
comment that says so. A read of the benchmark's results file, ``docs/bench-results/cpu.json``,
which a clone of the repository has and an installed package does not, becomes the measured
data it reads (``portable``).

The MkDocs hook docs_hooks/hooks/doctest_blocks.py puts this text into the block's ``data-copy``
attribute, which Material's copy button copies instead of the block's text; the page's script
and notebook (docs_hooks/page_examples.py) are made from the same copies.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_PARSER = doctest.DocTestParser()


def examples(transcript: str) -> list[doctest.Example]:
    """The ``>>>`` examples of a transcript, as doctest reads them."""
    return _PARSER.get_examples(transcript)


def raised(example: doctest.Example) -> str | None:
    """The error an example is expected to raise, ``"ValueError: ..."``, or None."""
    if example.exc_msg is None:
        return None
    lines = example.exc_msg.strip().splitlines()
    return lines[0] if lines else "an exception"


def skipped(example: doctest.Example) -> bool:
    """Whether an example is marked ``# doctest: +SKIP``: shown on the page, never run.

    >>> [skipped(e) for e in examples(">>> 1  # doctest: +SKIP\\n1\\n>>> 2\\n2\\n")]
    [True, False]
    >>> print(runnable(">>> import transformers  # doctest: +SKIP\\n>>> 1 + 1\\n2\\n"))
    # import transformers  # doctest: +SKIP
    1 + 1
    """
    return bool(example.options.get(doctest.SKIP))


def copy_of(example: doctest.Example) -> str:
    """One example's source as copied: commented out, with the error named, if it raises;
    commented out as it stands if it is skipped."""
    source = example.source.rstrip("\n")
    error = raised(example)
    if error is None and not skipped(example):
        return source
    lines = [f"# {line}" if line.strip() else "#" for line in source.splitlines()]
    if error is not None:
        lines[-1] += f"  # raises {error}"
    return "\n".join(lines)


def runnable(transcript: str) -> str:
    """The code of a doctest transcript, ready to paste: no prompts, no output.

    >>> print(runnable('''
    ... >>> x = [1, 2]
    ... >>> for i in x:
    ... ...     print(i)
    ... 1
    ... 2
    ... >>> x[5]
    ... Traceback (most recent call last):
    ...     ...
    ... IndexError: list index out of range
    ... >>> len(x)
    ... 2
    ... '''))
    x = [1, 2]
    for i in x:
        print(i)
    <BLANKLINE>
    # x[5]  # raises IndexError: list index out of range
    len(x)
    """
    return join([copy_of(example) for example in examples(transcript)])


# --- a page's copies: each block with the earlier lines it needs ----------------------------

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "bench-results" / "cpu.json"
# The line a page reads the benchmark's results with: the file exists in a clone of the
# repository, not in an installed attention_ref, so a copy writes the measured data out instead.
BENCH_READ = re.compile(
    r"^(?P<name>\w+) = pathlib\.Path\(attention_ref\.__file__\)\.parents\[1\] / "
    r'"docs/bench-results/cpu\.json"(?P<comment>[ \t]*#.*)?$'
)
WORDS = {
    "en": {
        "bench": "# The measured results the page reads, from the repository's "
        "docs/bench-results/cpu.json\n# (an installed attention_ref does not have that file):",
        "earlier": "# Earlier on the page: the lines this block needs",
        "block": "# This block",
    },
    "zh": {
        "bench": "# 本页读取的测量结果，取自代码仓库的 docs/bench-results/cpu.json\n"
        "#（安装的 attention_ref 不含这个文件）：",
        "earlier": "# 本页前文中这一块要用到的代码",
        "block": "# 这一块",
    },
}
# Calls on an imported module that change what later code does (the others only compute).
SETTINGS = frozenset(
    {
        "manual_seed",
        "seed",
        "set_printoptions",
        "set_default_dtype",
        "set_default_device",
        "set_num_threads",
        "use_deterministic_algorithms",
        "set_grad_enabled",
        "filterwarnings",
        "simplefilter",
    }
)
# Methods that change their object even when their value is shown (model.eval() prints it).
MUTATING = frozenset(
    {"eval", "train", "backward", "load_state_dict", "update", "append", "extend", "step"}
    | {"zero_grad", "pop", "insert", "add", "clear", "setdefault", "reset", "register_buffer"}
)
BUILTINS = frozenset(dir(builtins))


def bench_keys(sources: list[str]) -> list[str]:
    """The parts of the results file a page's code names (``"decode"``), in the file's order."""
    if not any(BENCH_READ.search(line) for s in sources for line in s.splitlines()):
        return []
    data = json.loads(BENCH.read_text(encoding="utf-8"))
    named = {
        node.value
        for source in sources
        for node in ast.walk(_parse(source) or ast.Module(body=[], type_ignores=[]))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    return [key for key in data if key in named]


def _bench_lines(name: str, keys: list[str], lang: str) -> str:
    """``name`` as a results file holding the measured parts ``keys``, written out here."""
    data = json.loads(BENCH.read_text(encoding="utf-8"))
    text = json.dumps({key: data[key] for key in keys}, separators=(",", ":"))
    pieces = [text[i : i + 80] for i in range(0, len(text), 80)]
    literal = "\n".join(f"    {piece!r}" for piece in pieces)
    return (
        f"{WORDS[lang]['bench']}\n"
        "import tempfile\n"
        f'{name} = pathlib.Path(tempfile.mkdtemp()) / "cpu.json"\n'
        f"_ = {name}.write_text(\n{literal},\n"
        '    encoding="utf-8",\n'
        ")"
    )


def portable(source: str, keys: list[str], lang: str = "en") -> str:
    """An example's code, with a read of the results file replaced by the data it reads."""
    lines = source.split("\n")
    for number, line in enumerate(lines):
        found = BENCH_READ.match(line)
        if found and keys:
            lines[number] = _bench_lines(found["name"], keys, lang)
    return "\n".join(lines)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _root(node: ast.AST) -> str | None:
    """``a`` for ``a``, ``a.b``, ``a[0].c``, ``a.b(...).c``: the name an expression starts at."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call | ast.Starred):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


@dataclass
class Unit:
    """One example of a page, as the copies see it: what it binds, changes and uses."""

    block: int
    copy: str
    binds: set[str] = field(default_factory=set)  # names it (re)defines
    changes: set[str] = field(default_factory=set)  # objects it changes in place
    uses: set[str] = field(default_factory=set)  # names it reads, defined before it
    shows: bool = False  # a line that only shows something: print(...), a bare expression


def _unit(block: int, example: doctest.Example, copy: str) -> Unit:
    unit = Unit(block, copy)
    tree = None if raised(example) or skipped(example) else _parse(example.source)
    if tree is None:  # copied commented out: it runs nothing
        unit.shows = True
        return unit
    modules = set()
    local = set()  # bound inside functions, lambdas and comprehensions: not the page's names
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            local |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            for inner in ast.walk(node) if not isinstance(node, ast.Lambda) else ():
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local.add(inner.id)
        elif isinstance(node, ast.comprehension):
            local |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                unit.binds.add(name)
                modules.add(name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            unit.binds.add(node.name)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                unit.uses.add(node.id)
            elif node.id not in local:
                unit.binds.add(node.id)
        elif isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Store):
            unit.changes.add(_root(node) or "")
        elif isinstance(node, ast.AugAssign):
            unit.changes.add(_root(node.target) or "")
    calls = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    ]
    for call in calls:  # a call made for what it does: model.eval(), x.add_(1), train(model)
        func, root = call.func, _root(call.func)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        arguments = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)} - {root}
        if root in modules or root in ("torch", "np", "numpy", "random", "warnings"):
            if name in SETTINGS:
                unit.changes.add(root)
            elif name.endswith("_"):  # nn.init.zeros_(w)
                unit.changes |= arguments
        elif root == "print" or (example.want and name not in MUTATING):
            continue  # print(x), or a value shown: f(x), x.sum()
        else:  # a method (loss.backward() fills its inputs' .grad), or f(model) unshown
            unit.changes |= arguments | ({root} if root else set())
    unit.uses -= local | BUILTINS
    unit.changes -= local | BUILTINS
    body = tree.body
    last = body[-1] if body else None
    unit.shows = (
        len(body) == 1
        and isinstance(last, ast.Expr)
        and not unit.changes
        and (
            bool(example.want)
            or not isinstance(last.value, ast.Call)
            or _root(last.value.func) == "print"
        )
    )
    return unit


def _units(transcripts: list[str], lang: str) -> list[list[Unit]]:
    keys = bench_keys([e.source for t in transcripts for e in examples(t)])
    return [
        [_unit(number, e, portable(copy_of(e), keys, lang)) for e in examples(transcript)]
        for number, transcript in enumerate(transcripts)
    ]


def join(copies: list[str]) -> str:
    """Copies one after another; a blank line after a statement of several lines (the REPL)."""
    out: list[str] = []
    for copy in copies:
        out.append(copy)
        if "\n" in copy:
            out.append("")
    return "\n".join(out).rstrip()


def page_copies(transcripts: list[str], lang: str = "en") -> list[list[str]]:
    """Each block's examples as copied (a read of the results file becomes its data)."""
    return [[unit.copy for unit in block] for block in _units(transcripts, lang)]


def needed_before(units: list[list[Unit]], block: int) -> list[Unit]:
    """The earlier examples of the page that block ``block`` needs, in page order.

    Walking back from the block: an example is needed when it binds or changes a name that
    is used later and not bound in between; once one example of a block is needed, so are the
    examples above it in that block (a seed, the tensors drawn before), except those that only
    show something.
    """
    needed: set[str] = set()
    for unit in reversed(units[block]):
        needed = (needed - unit.binds) | unit.uses
    taken: list[Unit] = []
    started: set[int] = set()
    for unit in reversed([u for earlier in units[:block] for u in earlier]):
        if unit.shows:
            continue
        if unit.block in started or (unit.binds | unit.changes) & needed:
            taken.append(unit)
            started.add(unit.block)
            needed = (needed - (unit.binds - unit.changes)) | unit.uses
    return taken[::-1]


def standalone(transcripts: list[str], lang: str = "en") -> list[str]:
    """What each block's copy button copies: the block, after the earlier lines it needs.

    A block that needs nothing from above copies as it is; the others start with the
    examples of the page it needs (``needed_before``), under a comment saying so.
    """
    units = _units(transcripts, lang)
    words = WORDS.get(lang, WORDS["en"])
    copies = []
    for number, block in enumerate(units):
        own = join([unit.copy for unit in block])
        before = needed_before(units, number)
        if not before:
            copies.append(own)
            continue
        earlier = join([unit.copy for unit in before])
        copies.append(f"{words['earlier']}\n{earlier}\n\n{words['block']}\n{own}")
    return copies
