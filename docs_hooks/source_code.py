"""Package source by name, for the pages: what a block shows and what its copy button copies.

A page names an object of ``attention_ref`` (``attention_ref.masks.causal_mask``,
``attention_ref.multihead.MultiHeadAttention.forward``) and, optionally, which part of it to
show:

- ``code`` (the default): the object without its docstring;
- ``whole``: the object as written, docstring included;
- ``signature``: the ``def`` line(s) only; ``body``: the body only, without the docstring;
- any other word: the excerpt between ``# --8<-- [start:word]`` and ``# --8<-- [end:word]``
  inside the object (markers are only for excerpts inside a body).

What a reader copies runs on its own: :func:`self_contained` returns the imports the code needs,
the source of every ``attention_ref`` function, class or constant it uses (recursively, public
or private), then the enclosing top-level definition of what the block shows. No docstrings, no
marker comments and no blank lines inside indented blocks, so the text pastes into the plain
``python`` REPL as well as into a file or a notebook. Nothing here imports ``attention_ref``:
everything is read with :mod:`ast` from the source files.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_ref"
PARTS = ("code", "whole", "signature", "body")
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<body>(?:(?P=indent)include:[^\n]*\n)+)"
    r"(?P=indent)```[ \t]*$",
    re.M,
)
MARKER = re.compile(r"^\s*# --8<-- \[(?P<edge>start|end):(?P<name>[\w-]+)\]\s*$")
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class SourceError(ValueError):
    """An include names an object, part or excerpt that does not exist."""


@dataclass(frozen=True)
class Module:
    """One module of the package, parsed: its name, path, lines and syntax tree."""

    name: str  # attention_ref.masks
    path: Path
    lines: tuple[str, ...]
    tree: ast.Module

    @property
    def relative_path(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def segment(self, first: int, last: int) -> list[str]:
        """Source lines ``first``..``last`` (1-based, inclusive)."""
        return list(self.lines[first - 1 : last])


@cache
def load_module(name: str) -> Module:
    """Parse ``attention_ref.x`` from its file (no import)."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        raise SourceError(f"{name}: not a module of {PACKAGE}")
    path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
    if not path.is_file():
        path = ROOT.joinpath(*name.split("."), "__init__.py")
    if not path.is_file():
        raise SourceError(f"{name}: no such module")
    text = path.read_text(encoding="utf-8")
    return Module(name, path, tuple(text.splitlines()), ast.parse(text, str(path)))


def clear_cache() -> None:
    """Forget parsed modules (``mkdocs serve`` after an edit)."""
    load_module.cache_clear()


# --- finding an object -------------------------------------------------------------------------


def _bound_names(node: ast.stmt) -> list[str]:
    """The module-level names a statement binds (definitions and assignments)."""
    if isinstance(node, Definition):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else []
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _top_level(module: Module, name: str) -> ast.stmt | None:
    for node in module.tree.body:
        if name in _bound_names(node):
            return node
    return None


@dataclass(frozen=True)
class Target:
    """An object in a module: its statement, and the top-level statement that contains it."""

    module: Module
    qualname: str
    node: ast.stmt
    top: ast.stmt


def resolve(dotted: str) -> Target:
    """``attention_ref.multihead.MultiHeadAttention.forward`` -> its module and nodes."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name, qualname = ".".join(parts[:split]), parts[split:]
        try:
            module = load_module(module_name)
        except SourceError:
            continue
        top = node = _top_level(module, qualname[0])
        for attr in qualname[1:]:
            inner = node.body if isinstance(node, ast.ClassDef) else []
            node = next((n for n in inner if attr in _bound_names(n)), None)
        if node is None:
            raise SourceError(f"{dotted}: {'.'.join(qualname)} is not defined in {module_name}")
        return Target(module, ".".join(qualname), node, top)
    raise SourceError(f"{dotted}: no module of {PACKAGE} defines it")


# --- the part a page shows ---------------------------------------------------------------------


def _first_line(module: Module, node: ast.stmt) -> int:
    """The node's first line, with its decorators and the comment lines right above it."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    while first > 1 and module.lines[first - 2].strip().startswith("#"):
        if MARKER.match(module.lines[first - 2]):
            break
        first -= 1
    return first


def _docstring_node(node: ast.stmt) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if (
        isinstance(node, Definition)
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0]
    return None


def _without_markers(lines: list[str]) -> list[str]:
    return [line for line in lines if not MARKER.match(line)]


def _without_docstrings(module: Module, node: ast.stmt, first: int, last: int) -> list[str]:
    """Lines ``first..last`` with every docstring inside ``node`` removed."""
    drop: set[int] = set()
    for inner in ast.walk(node):
        if (doc := _docstring_node(inner)) is not None:
            drop.update(range(doc.lineno, doc.end_lineno + 1))
    return [
        line
        for number, line in enumerate(module.segment(first, last), start=first)
        if number not in drop
    ]


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _excerpt(target: Target, name: str) -> tuple[int, int]:
    module, node = target.module, target.node
    start = end = None
    last = node.end_lineno  # an end marker may follow the last statement
    while last < len(module.lines) and (
        not module.lines[last].strip() or MARKER.match(module.lines[last])
    ):
        last += 1
    for number in range(node.lineno, last + 1):
        marker = MARKER.match(module.lines[number - 1])
        if marker and marker["name"] == name:
            if marker["edge"] == "start":
                start = number
            else:
                end = number
    if start is None or end is None or end < start:
        raise SourceError(
            f"{module.name}.{target.qualname}: no excerpt {name!r} (expected the comments "
            f"'# --8<-- [start:{name}]' and '# --8<-- [end:{name}]' inside it)"
        )
    return start + 1, end - 1


def _part(target: Target, part: str) -> tuple[int, int, list[str]]:
    """The first and last line of ``part`` of ``target`` in its file, and the lines shown."""
    module, node = target.module, target.node
    first, last = _first_line(module, node), node.end_lineno
    if part == "whole":
        return first, last, module.segment(first, last)
    if part == "code":
        return first, last, _without_docstrings(module, node, first, last)
    if part in ("signature", "body"):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            raise SourceError(f"{module.name}.{target.qualname}: {part} of a non-function")
        doc = _docstring_node(node)
        statements = node.body[1:] if doc else node.body
        body_start = statements[0].lineno if statements else node.end_lineno + 1
        body_start = min(
            [body_start, *(_first_line(module, s) for s in statements[:1])]
        )  # comments above the first statement belong to the body
        if part == "signature":
            last = (doc.lineno if doc else body_start) - 1
        else:
            first = body_start
        return first, last, module.segment(first, last)
    first, last = _excerpt(target, part)
    return first, last, module.segment(first, last)


def shown(target: Target, part: str = "code") -> str:
    """The source a page shows for ``part`` of ``target``, dedented."""
    text = textwrap.dedent("\n".join(_without_markers(_part(target, part)[2])))
    return "\n".join(_trim_blank(text.splitlines())) + "\n"


# --- what the copy button copies ---------------------------------------------------------------


def _loaded_names(node: ast.AST) -> set[str]:
    """Names a piece of code reads, minus those it binds itself (arguments, locals)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            (loaded if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, Definition) and inner is not node:
            bound.add(inner.name)
        annotation = getattr(inner, "annotation", None) or getattr(inner, "returns", None)
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            loaded.update(_names_in(annotation.value))  # a quoted annotation: "Axes | None"
    return loaded - bound


def _names_in(expression: str) -> set[str]:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


@dataclass
class _Import:
    """One imported name and the statement that imports it (``import torch.nn.functional as F``)."""

    statement: str
    order: int
    type_checking: bool = False


@dataclass
class _Copy:
    """What a copy needs, collected while walking the dependencies."""

    future: bool = False
    imports: dict[str, _Import] = field(default_factory=dict)  # bound name -> import
    helpers: dict[tuple[str, str], ast.stmt] = field(default_factory=dict)  # (module, name)
    order: list[tuple[str, str]] = field(default_factory=list)  # dependencies first


def _module_imports(module: Module) -> dict[str, tuple[ast.stmt, bool]]:
    """Names the module binds by import -> (the import statement, under TYPE_CHECKING?)."""
    found: dict[str, tuple[ast.stmt, bool]] = {}

    def visit(statements: list[ast.stmt], type_checking: bool) -> None:
        for node in statements:
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    found[bound] = (node, type_checking)
            elif isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                visit(node.body, True)

    visit(module.tree.body, False)
    return found


def _import_line(node: ast.Import | ast.ImportFrom, bound: str) -> str:
    """The import statement for one bound name, in the module's own spelling."""
    for alias in node.names:
        if (alias.asname or alias.name.split(".")[0]) != bound:
            continue
        alias_text = alias.name + (f" as {alias.asname}" if alias.asname else "")
        if isinstance(node, ast.Import):
            return f"import {alias_text}"
        return f"from {'.' * node.level}{node.module or ''} import {alias_text}"
    raise KeyError(bound)


def _package_module(node: ast.ImportFrom, module: Module) -> str | None:
    """The absolute module name of ``from .x import y`` inside the package, else None."""
    if node.level == 0:
        name = node.module or ""
        return name if name == PACKAGE or name.startswith(PACKAGE + ".") else None
    base = module.name.split(".")
    if module.path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _collect(module: Module, node: ast.stmt, copy: _Copy, seen: set[tuple[str, str]]) -> None:
    """Add what ``node`` (a top-level statement of ``module``) needs to ``copy``."""
    if any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in module.tree.body):
        copy.future = True
    imports = _module_imports(module)
    for name in sorted(_loaded_names(node)):
        if name in imports:
            statement, type_checking = imports[name]
            source = (
                _package_module(statement, module)
                if isinstance(statement, ast.ImportFrom)
                else None
            )
            if source is not None:  # from .attention import attention_weights: its source
                original = next(a.name for a in statement.names if (a.asname or a.name) == name)
                _add_helper(load_module(source), original, copy, seen)
            else:
                line = _import_line(statement, name)
                order = statement.lineno + (10_000 if type_checking else 0)
                copy.imports.setdefault(name, _Import(line, order, type_checking))
        elif _top_level(module, name) is not None:
            _add_helper(module, name, copy, seen)


def _add_helper(module: Module, name: str, copy: _Copy, seen: set[tuple[str, str]]) -> None:
    key = (module.name, name)
    if key in seen:
        return
    seen.add(key)
    node = _top_level(module, name)
    if node is None:
        raise SourceError(f"{module.name}: {name} is imported but not defined there")
    for other_module, other in copy.helpers:
        if other == name and other_module != module.name:
            raise SourceError(
                f"{name}: defined in both {other_module} and {module.name}; a copy needs one"
            )
    _collect(module, node, copy, seen)
    copy.helpers[key] = node
    copy.order.append(key)


def _repl_safe(lines: list[str]) -> list[str]:
    """Drop blank lines inside indented blocks (outside strings): the REPL ends a block there."""
    text = "\n".join(lines) + "\n"
    in_string: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            in_string.update(range(token.start[0] + 1, token.end[0] + 1))
    kept = []
    for number, line in enumerate(lines, start=1):
        if line.strip() or number in in_string:
            kept.append(line)
            continue
        following = next((n for n in lines[number:] if n.strip()), "")
        if following[:1] not in (" ", "\t"):  # the next statement is at the top level
            kept.append(line)
    return kept


def _import_block(statements: list[str]) -> list[str]:
    """Import statements sorted as isort does: standard library, then the rest; ``import x``
    before ``from x import y`` in each group; one ``from`` line per module."""
    plain: set[str] = set()
    from_names: dict[str, set[str]] = {}
    for statement in filter(None, statements):
        if statement.startswith("from "):
            module, names = statement.removeprefix("from ").split(" import ")
            from_names.setdefault(module, set()).update(n.strip() for n in names.split(","))
        else:
            plain.add(statement)

    def group(module: str) -> int:
        return 0 if module.split(".")[0] in sys.stdlib_module_names else 1

    lines = [(group(s.split()[1]), 0, s.split()[1], s) for s in plain]
    for module, names in from_names.items():
        joined = ", ".join(sorted(names, key=_name_order))
        lines.append((group(module), 1, module, f"from {module} import {joined}"))
    ordered, previous = [], None
    for section, *_, line in sorted(lines):
        if previous is not None and section != previous:
            ordered.append("")
        ordered.append(line)
        previous = section
    return ordered


def _name_order(name: str) -> tuple[int, str]:
    """isort's order by type: CONSTANTS, then Classes, then functions and modules."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _definition_source(module: Module, node: ast.stmt) -> list[str]:
    lines = _without_docstrings(module, node, _first_line(module, node), node.end_lineno)
    return _repl_safe(_trim_blank(_without_markers(lines)))


@dataclass(frozen=True)
class Copy:
    """A self-contained program: its text, and what it adds to the code a page shows."""

    text: str
    helpers: tuple[str, ...]  # names of the package objects whose source it adds
    imports: tuple[str, ...]  # the import statements (``from __future__`` excluded)


def self_contained(targets: list[Target]) -> Copy:
    """Imports, helpers, then the top-level definitions of ``targets``: a program that runs."""
    copy = _Copy()
    seen: set[tuple[str, str]] = set()
    mains: list[tuple[str, str]] = []
    for target in targets:
        name = _bound_names(target.top)[0]
        key = (target.module.name, name)
        if key not in mains:
            mains.append(key)
            seen.discard(key)
            _add_helper(target.module, name, copy, seen)
    helpers = [key for key in copy.order if key not in mains]
    plain = _import_block([i.statement for i in copy.imports.values() if not i.type_checking])
    guarded = _import_block([i.statement for i in copy.imports.values() if i.type_checking])
    if guarded and "TYPE_CHECKING" not in copy.imports:
        plain = _import_block([*plain, "from typing import TYPE_CHECKING"])
    imports = tuple(line for line in [*plain, *guarded] if line)
    chunks: list[list[str]] = []
    head = ["from __future__ import annotations", ""] if copy.future else []
    head += plain
    if guarded:
        head += ["", "if TYPE_CHECKING:", *(f"    {line}" for line in guarded if line)]
    if head:
        chunks.append(head)
    for key in [*helpers, *mains]:
        chunks.append(_definition_source(load_module(key[0]), copy.helpers[key]))
    text = "\n\n\n".join("\n".join(chunk) for chunk in chunks) + "\n"
    return Copy(text, tuple(name for _, name in helpers), imports)


# --- one include -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Include:
    """One ``include:`` line of a page: an object and the part of it to show."""

    dotted: str
    part: str = "code"

    @classmethod
    def parse(cls, line: str) -> Include:
        """``attention_ref.masks.causal_mask`` or ``attention_ref.attention.attention_weights
        masking`` (object, then an optional part)."""
        words = line.split()
        if not 1 <= len(words) <= 2 or not words[0].startswith(PACKAGE + "."):
            raise SourceError(f"include: expected 'OBJECT [PART]', got {line!r}")
        return cls(*words)

    @property
    def target(self) -> Target:
        return resolve(self.dotted)

    @property
    def is_excerpt(self) -> bool:
        """True when the block shows less than the whole definition that its copy holds."""
        target = self.target
        return self.part not in ("code", "whole") or target.node is not target.top


def shown_lines(target: Target, part: str = "code") -> tuple[int, int]:
    """The lines of the file that ``part`` of ``target`` shows (1-based, inclusive)."""
    first, last, _ = _part(target, part)
    return first, last


# --- a block of include lines, as a page shows it -----------------------------------------------

WORDS = {
    "en": {
        "excerpt": "excerpt of {name}",
        "copy": "the copy adds the imports",
        "helpers": "the copy adds the imports and {names}",
        "many": "the copy adds the imports and {n} helpers",
        "link": "{path}, lines {first} to {last}, in the repository",
    },
    "zh": {
        "excerpt": "{name} 的节选",
        "copy": "复制时另含导入语句",
        "helpers": "复制时另含导入语句和 {names}",
        "many": "复制时另含导入语句和 {n} 个辅助定义",
        "link": "仓库中的 {path} 第 {first}–{last} 行",
    },
}


@dataclass(frozen=True)
class SourceBlock:
    """One rendered include: the code shown, the copy, and the title's parts."""

    shown: str
    copy: str
    path: str
    first: int
    last: int
    note: str


def _note(includes: list[Include], copy: Copy, lang: str) -> str:
    words = WORDS.get(lang, WORDS["en"])
    parts = []
    for include in includes:
        if include.is_excerpt:
            name = _bound_names(include.target.top)[0]
            parts.append(words["excerpt"].format(name=name))
    parts = list(dict.fromkeys(parts))
    helpers = list(copy.helpers)
    if len(helpers) > 3:
        parts.append(words["many"].format(n=len(helpers)))
    elif helpers:
        parts.append(words["helpers"].format(names=", ".join(helpers)))
    elif copy.imports or copy.text.startswith("from __future__"):
        parts.append(words["copy"])
    return " · ".join(parts)


def include_lines(markdown: str) -> list[list[str]]:
    """The ``include:`` lines of each package-code block of a page, in order."""
    return [
        [line.strip() for line in match["body"].splitlines()] for match in FENCE.finditer(markdown)
    ]


def source_block(lines: list[str], lang: str) -> SourceBlock:
    """What one ```python block of ``include:`` lines shows and copies."""
    includes = [Include.parse(line.split("include:", 1)[1]) for line in lines]
    targets = [include.target for include in includes]
    modules = {target.module.relative_path for target in targets}
    if len(modules) != 1:
        raise SourceError(f"one block includes from one file, got {sorted(modules)}")
    code = "\n".join(shown(t, i.part) for t, i in zip(targets, includes, strict=True))
    copy = self_contained(targets)
    spans = [shown_lines(t, i.part) for t, i in zip(targets, includes, strict=True)]
    return SourceBlock(
        shown=code,
        copy=copy.text,
        path=modules.pop(),
        first=min(first for first, _ in spans),
        last=max(last for _, last in spans),
        note=_note(includes, copy, lang),
    )
