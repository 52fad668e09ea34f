"""Package source by name, for the pages: what a block shows and what its copy button copies.

A page names an object of ``attention_ref`` (``attention_ref.masks.causal_mask``,
``attention_ref.multihead.MultiHeadAttention.forward``) and, optionally, which part of it to
show:

- ``code`` (the default): the object without its docstring;
- ``whole``: the object as written, docstring included;
- ``signature``: the ``def`` line(s) only; ``body``: the body only, without the docstring;
- any other word: the excerpt between ``# --8<-- [start:word]`` and ``# --8<-- [end:word]``
  inside the object (markers are only for excerpts inside a body).

Objects are found with griffe, the parser mkdocstrings reads the API page with, from the source
files (nothing here imports ``attention_ref``). What the copy button copies:

- A block that shows less than whole module-level definitions (a method, part of a body) is an
  **excerpt**: it copies exactly the lines it shows, dedented, nothing added. Its title says
  "excerpt of X" and links to X's full source.
- A block of whole module-level functions, classes or constants copies a **program** that runs
  alone with torch and numpy: the imports it needs, the package helpers it calls (recursively,
  without their docstrings), then the definitions as shown, docstrings included. Names used
  only in annotations are not dependencies (every module has ``from __future__ import
  annotations``, which the copy keeps). A helper class comes with every method but the
  classmethods that no line of the program names (see ``_definition``). Blank lines inside
  indented blocks go (outside strings), so the program also pastes into the plain ``python``
  REPL.

Tool comments (``# fmt: skip``, ``# type: ignore[...]``, ``# noqa``) never reach a reader.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import io
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import griffe

from docs_hooks.markdown import Block, code_blocks

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention_ref"
PARTS = ("code", "whole", "signature", "body")
MARKER = re.compile(r"^\s*# --8<-- \[(?P<edge>start|end):(?P<name>[\w-]+)\]\s*$")
TOOL_COMMENT = re.compile(
    r"[ \t]*#[ \t]*(?:fmt:[ \t]*(?:skip|off|on)|type:[ \t]*ignore\S*|noqa\S*)$"
)
BUILTINS = frozenset(dir(builtins))


class SourceError(ValueError):
    """An include names an object, part or excerpt that does not exist."""


# --- the package, read once per change ---------------------------------------------------------


@cache
def _load(stamp: tuple[tuple[str, int], ...]) -> griffe.Module:
    return griffe.load(PACKAGE, search_paths=[str(ROOT)], resolve_aliases=False)


def package() -> griffe.Module:
    """The package as griffe reads it; read again only when a file of it changed (``serve``)."""
    files = sorted((ROOT / PACKAGE).rglob("*.py"))
    return _load(tuple((str(path), path.stat().st_mtime_ns) for path in files))


def _lookup(path: str) -> griffe.Object:
    """The object a dotted path names, following re-exports (``from .x import y``)."""
    if path != PACKAGE and not path.startswith(PACKAGE + "."):
        raise SourceError(f"{path}: not an object of {PACKAGE}")
    seen = set()
    obj: griffe.Object | griffe.Alias = package()
    try:
        if path != PACKAGE:
            obj = package()[path.removeprefix(PACKAGE + ".")]
        while obj.is_alias:
            if obj.target_path in seen or not obj.target_path.startswith(PACKAGE + "."):
                raise SourceError(f"{path}: imported from outside {PACKAGE}")
            seen.add(obj.target_path)
            obj = package()[obj.target_path.removeprefix(PACKAGE + ".")]
    except KeyError:
        raise SourceError(f"{path}: no such object in {PACKAGE}") from None
    return obj


def _top(obj: griffe.Object) -> griffe.Object:
    """The module-level definition that holds ``obj`` (``obj`` itself for one)."""
    while obj.parent is not None and not obj.parent.is_module:
        obj = obj.parent
    return obj


@dataclass(frozen=True, eq=False)
class Target:
    """An object of the package and the module-level definition that holds it."""

    obj: griffe.Object
    top: griffe.Object

    @property
    def module(self) -> griffe.Module:
        return self.obj.module

    @property
    def lines(self) -> list[str]:
        return self.obj.module.lines

    @property
    def relative_path(self) -> str:
        return Path(self.obj.module.filepath).relative_to(ROOT).as_posix()

    @property
    def name(self) -> str:
        """The module-level name: ``MultiHeadAttention`` for its ``forward``."""
        return self.top.name


def resolve(dotted: str) -> Target:
    """``attention_ref.multihead.MultiHeadAttention.forward`` -> the object and its class."""
    obj = _lookup(dotted)
    if obj.is_module:
        raise SourceError(f"{dotted}: a module; include one of its objects")
    return Target(obj, _top(obj))


# --- the part a page shows ---------------------------------------------------------------------


def _first_line(obj: griffe.Object) -> int:
    """The object's first line, with its decorators and the comment lines right above it."""
    lines = obj.module.lines
    first = min([obj.lineno, *(d.lineno for d in getattr(obj, "decorators", []))])
    while first > 1 and lines[first - 2].strip().startswith("#"):
        if MARKER.match(lines[first - 2]):
            break
        first -= 1
    return first


def _syntax(obj: griffe.Object) -> tuple[ast.stmt, int]:
    """The object's statement (parsed from its dedented lines), and the offset of its lines."""
    first = min([obj.lineno, *(d.lineno for d in getattr(obj, "decorators", []))])
    text = textwrap.dedent("\n".join(obj.module.lines[first - 1 : obj.endlineno]))
    return ast.parse(text).body[0], first - 1


def _docstring_lines(node: ast.AST, offset: int) -> set[int]:
    """The file lines of every docstring inside ``node`` (nested definitions included)."""
    drop: set[int] = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if (
            isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            drop.update(range(body[0].lineno + offset, body[0].end_lineno + offset + 1))
    return drop


def _clean(lines: list[str]) -> list[str]:
    """Without excerpt markers and tool comments, and without blank lines at either end."""
    lines = [TOOL_COMMENT.sub("", line) for line in lines if not MARKER.match(line)]
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _segment(
    obj: griffe.Object, first: int, last: int, docstrings: bool, skip: set[int] | None = None
) -> list[str]:
    """File lines ``first..last`` (1-based, inclusive), with or without the docstrings, and
    without the lines ``skip``."""
    drop = (set() if docstrings else _docstring_lines(*_syntax(obj))) | (skip or set())
    return [
        line
        for number, line in enumerate(obj.module.lines[first - 1 : last], start=first)
        if number not in drop
    ]


def _excerpt(obj: griffe.Object, name: str) -> tuple[int, int]:
    lines = obj.module.lines
    start = end = None
    last = obj.endlineno  # an end marker may follow the last statement
    while last < len(lines) and (not lines[last].strip() or MARKER.match(lines[last])):
        last += 1
    for number in range(obj.lineno, last + 1):
        marker = MARKER.match(lines[number - 1])
        if marker and marker["name"] == name:
            if marker["edge"] == "start":
                start = number
            else:
                end = number
    if start is None or end is None or end < start:
        raise SourceError(
            f"{obj.path}: no excerpt {name!r} (expected the comments "
            f"'# --8<-- [start:{name}]' and '# --8<-- [end:{name}]' inside it)"
        )
    return start + 1, end - 1


def _part(target: Target, part: str) -> tuple[int, int, list[str]]:
    """The first and last line of ``part`` of ``target`` in its file, and the lines shown."""
    obj = target.obj
    first, last = _first_line(obj), obj.endlineno
    if part in ("whole", "code"):
        return first, last, _segment(obj, first, last, docstrings=part == "whole")
    if part in ("signature", "body"):
        if not obj.is_function:
            raise SourceError(f"{obj.path}: {part} of a non-function")
        node, offset = _syntax(obj)
        statements = node.body
        if obj.docstring is not None:
            statements = statements[1:]
        body_start = statements[0].lineno + offset if statements else last + 1
        while body_start > 1 and obj.module.lines[body_start - 2].strip().startswith("#"):
            body_start -= 1  # comments above the first statement belong to the body
        if part == "signature":
            last = (obj.docstring.lineno if obj.docstring else body_start) - 1
        else:
            first = body_start
        return first, last, obj.module.lines[first - 1 : last]
    first, last = _excerpt(obj, part)
    return first, last, obj.module.lines[first - 1 : last]


def shown(target: Target, part: str = "code") -> str:
    """The source a page shows for ``part`` of ``target``, dedented."""
    text = textwrap.dedent("\n".join(_part(target, part)[2]))
    return "\n".join(_clean(text.splitlines())) + "\n"


def shown_lines(target: Target, part: str = "code") -> tuple[int, int]:
    """The lines of the file that ``part`` of ``target`` shows (1-based, inclusive)."""
    first, last, _ = _part(target, part)
    return first, last


# --- what a program needs ----------------------------------------------------------------------


def _loaded_names(node: ast.AST, annotations: bool) -> set[str]:
    """Names a definition reads at run time, minus those it binds itself (arguments, locals).

    Without ``annotations`` (a module with ``from __future__ import annotations``), names that
    only annotations use are not read: they are never evaluated.
    """
    loaded: set[str] = set()
    bound: set[str] = set()
    skip: set[int] = set()
    for inner in ast.walk(node):
        if not annotations:
            for child in (getattr(inner, "annotation", None), getattr(inner, "returns", None)):
                if child is not None:
                    skip.update(id(n) for n in ast.walk(child))
        if id(inner) in skip:
            continue
        if isinstance(inner, ast.Name):
            (loaded if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, ast.alias):
            bound.add(inner.asname or inner.name.split(".")[0])
        elif isinstance(inner, ast.ExceptHandler | ast.FunctionDef | ast.ClassDef) and (
            inner.name and inner is not node  # except E as name; def name; class name
        ):
            bound.add(inner.name)
    return loaded - bound


def _import_statement(name: str, path: str) -> str:
    """The import that binds ``name`` to ``path``: ``import torch.nn.functional as F``."""
    parent, _, last = path.rpartition(".")
    if name == path:
        return f"import {path}"
    if parent and last == name:
        return f"from {parent} import {name}"
    return f"import {path} as {name}"


def _import_block(statements: list[str]) -> list[str]:
    """Import statements sorted as isort does: standard library, then the rest; ``import x``
    before ``from x import y`` in each group; one ``from`` line per module."""
    plain: set[str] = set()
    from_names: dict[str, set[str]] = {}
    for statement in statements:
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


def _future_annotations(module: griffe.Module) -> bool:
    return module.imports.get("annotations") == "__future__.annotations"


CONVERTERS = frozenset({"to_torch"})  # methods kept only in a program that names them


@dataclass
class _Needs:
    """What a program needs, collected while walking the dependencies."""

    future: bool = False
    imports: set[str] = field(default_factory=set)  # import statements
    order: list[tuple[griffe.Object, list[str]]] = field(default_factory=list)  # needs first
    seen: set[str] = field(default_factory=set)  # paths of the objects visited
    named: frozenset[str] = frozenset()  # names the program uses: classmethods it keeps


def _definition(obj: griffe.Object, docstrings: bool, named: frozenset[str] | None) -> list[str]:
    """A definition as a program carries it: a shown one whole with its docstrings, a helper
    without them and, for a class, without the classmethods that ``named`` does not hold.

    A helper class keeps its other methods: its objects may reach code outside the program
    (the ``KVCache`` that ``generate`` makes is updated by the reader's model), and that code
    may call any method of an object. A classmethod is called on the class, by its name
    (``MultiHeadAttention.from_torch(module)``, ``cls.from_torch``), so one that no line of
    the program names is never called: ``from_torch`` and the converters it needs stay out
    of every copy that does not convert a PyTorch module. The same holds for the methods of
    ``CONVERTERS`` (``to_torch``): a program that converts names them, and one that does not
    never calls them. ``named=None`` keeps them all.
    """
    skip: set[int] = set()
    for member in obj.members.values() if named is not None and obj.is_class else ():
        converter = "classmethod" in member.labels or member.name in CONVERTERS
        if not member.is_alias and converter and member.name not in named:
            skip.update(range(_first_line(member), member.endlineno + 1))
    lines = _segment(obj, _first_line(obj), obj.endlineno, docstrings, skip)
    return _repl_safe(_clean(lines))


def _annotated(node: ast.AST) -> bool:
    """Whether ``node`` holds an annotation (what ``from __future__ import annotations`` is for)."""
    for child in ast.walk(node):
        if isinstance(child, ast.AnnAssign):
            return True
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            args = child.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if child.returns or any(a is not None and a.annotation for a in every):
                return True
    return False


def _collect(obj: griffe.Object, needs: _Needs, main: bool = False) -> None:
    """Add ``obj`` (a module-level definition) after what it needs to ``needs``."""
    if obj.path in needs.seen:
        return
    needs.seen.add(obj.path)
    module = obj.module
    future = _future_annotations(module)
    lines = _definition(obj, docstrings=main, named=None if main else needs.named)
    node = ast.parse("\n".join(lines)).body[0]
    needs.future |= future and _annotated(node)  # a constant copies without the import
    for name in sorted(_loaded_names(node, annotations=not future)):
        member = module.members.get(name)
        if member is not None and not member.is_alias and not member.is_module:
            _collect(member, needs)  # defined in the same module
        elif name in module.imports:
            path = module.imports[name]
            if path == PACKAGE or path.startswith(PACKAGE + "."):
                _collect(_lookup(path), needs)  # from .attention import attention_weights
            elif not path.startswith("__future__."):
                needs.imports.add(_import_statement(name, path))
        # else: a builtin, or a name the definition binds in a way not tracked above
    for other, _ in needs.order:
        if other.name == obj.name and other.path != obj.path:
            raise SourceError(
                f"{obj.name}: defined in both {other.module.path} and {module.path}; "
                "a copy needs one"
            )
    needs.order.append((obj, lines))


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


@dataclass(frozen=True)
class Copy:
    """What a copy button copies, and what it adds to the code the block shows."""

    text: str
    helpers: tuple[str, ...] = ()  # names of the package objects whose source it adds
    imports: tuple[str, ...] = ()  # the import statements (``from __future__`` excluded)


def _names(source: str) -> set[str]:
    """Every name, attribute and string constant in ``source`` and in the examples of its
    docstrings (they run against the copy): what it may call by name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
            for example in doctest.DocTestParser().get_examples(node.value):
                try:
                    names |= _names(example.source)
                except SyntaxError:
                    names.update(re.findall(r"\w+", example.source))  # every word of it
    return names


def _needs(mains: list[griffe.Object], named: frozenset[str]) -> _Needs:
    needs = _Needs(named=named)
    for obj in mains:
        needs.seen.discard(obj.path)  # shown here, even where an earlier one needs it
        _collect(obj, needs, main=True)
    return needs


def program(tops: list[griffe.Object]) -> Copy:
    """Imports, helpers, then the definitions ``tops`` with their docstrings: a program."""
    mains = list({obj.path: obj for obj in tops}.values())
    named: frozenset[str] = frozenset()
    while True:  # helpers without classmethods, until every name the program uses is kept
        needs = _needs(mains, named)
        used = named.union(*(_names("\n".join(lines)) for _, lines in needs.order))
        if used == named:
            break
        named = used
    main_paths = {obj.path for obj in mains}
    helpers = [(obj, lines) for obj, lines in needs.order if obj.path not in main_paths]
    imports = _import_block(sorted(needs.imports))
    head = ["from __future__ import annotations", ""] if needs.future else []
    chunks = [head + imports] if head or imports else []
    chunks += [lines for _, lines in helpers]
    chunks += [lines for obj, lines in needs.order if obj.path in main_paths]
    text = "\n\n\n".join("\n".join(chunk).strip("\n") for chunk in chunks) + "\n"
    return Copy(text, tuple(obj.name for obj, _ in helpers), tuple(i for i in imports if i))


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
        """True when the block shows less than a whole module-level definition."""
        target = self.target
        return self.part not in ("code", "whole") or target.obj is not target.top


# --- a block of include lines, as a page shows it -----------------------------------------------

WORDS = {
    "en": {
        "excerpt": "excerpt of {name}",
        "full": "the whole of {name}, {path} lines {first} to {last}, in the repository",
        "copy": "the copy adds the imports",
        "helpers": "the copy adds the imports and {names}",
        "many": "the copy adds the imports and {n} helpers",
        "link": "{path}, lines {first} to {last}, in the repository",
    },
    "zh": {
        "excerpt": "{name} 的节选",
        "full": "仓库中 {name} 的完整代码：{path} 第 {first}–{last} 行",
        "copy": "复制时另含导入语句",
        "helpers": "复制时另含导入语句和 {names}",
        "many": "复制时另含导入语句和 {n} 个辅助定义",
        "link": "仓库中的 {path} 第 {first}–{last} 行",
    },
}


@dataclass(frozen=True)
class Excerpt:
    """The module-level definition an excerpt comes from: its name and lines."""

    name: str
    first: int
    last: int


@dataclass(frozen=True)
class SourceBlock:
    """One rendered include: the code shown, the copy, and the title's parts."""

    shown: str
    copy: str
    path: str
    first: int
    last: int
    note: str  # what the copy adds (a program); empty for an excerpt
    excerpt_of: tuple[Excerpt, ...] = ()  # empty for a program

    @property
    def is_excerpt(self) -> bool:
        return bool(self.excerpt_of)


def _note(copy: Copy, lang: str) -> str:
    words = WORDS.get(lang, WORDS["en"])
    helpers = list(copy.helpers)
    if len(helpers) > 3:
        return words["many"].format(n=len(helpers))
    if helpers:
        return words["helpers"].format(names=", ".join(helpers))
    if copy.imports or copy.text.startswith("from __future__"):
        return words["copy"]
    return ""


def include_blocks(markdown: str) -> list[Block]:
    """The package-code blocks of a page, in order: ```python blocks of ``include:`` lines."""
    return [
        block
        for block in code_blocks(markdown)
        if block.language == "python"
        and block.lines
        and all(line.strip().startswith("include:") for line in block.lines)
    ]


def include_lines(markdown: str) -> list[list[str]]:
    """The ``include:`` lines of each package-code block of a page, in order."""
    return [[line.strip() for line in block.lines] for block in include_blocks(markdown)]


def source_block(lines: list[str], lang: str) -> SourceBlock:
    """What one ```python block of ``include:`` lines shows and copies."""
    includes = [Include.parse(line.split("include:", 1)[1]) for line in lines]
    targets = [include.target for include in includes]
    paths = {target.relative_path for target in targets}
    if len(paths) != 1:
        raise SourceError(f"one block includes from one file, got {sorted(paths)}")
    code = "\n".join(shown(t, i.part) for t, i in zip(targets, includes, strict=True))
    spans = [shown_lines(t, i.part) for t, i in zip(targets, includes, strict=True)]
    block = {"shown": code, "path": paths.pop()}
    block["first"] = min(first for first, _ in spans)
    block["last"] = max(last for _, last in spans)
    if any(include.is_excerpt for include in includes):
        tops = {t.top.path: t.top for t in targets}.values()
        excerpt_of = tuple(Excerpt(top.name, _first_line(top), top.endlineno) for top in tops)
        return SourceBlock(copy=code, note="", excerpt_of=excerpt_of, **block)
    copy = program([t.top for t in targets])
    return SourceBlock(copy=copy.text, note=_note(copy, lang), **block)
