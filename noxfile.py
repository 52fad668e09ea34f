"""Sessions for attention-ref: `nox` runs lint, tests and docs; `nox -l` lists them all.

Every session installs with the constraints file, which pins torch to the CPU build.
"""

from __future__ import annotations

import nox

nox.needs_version = ">=2025.2.9"
nox.options.sessions = ["lint", "tests", "docs"]
nox.options.default_venv_backend = "venv"

PYPROJECT = nox.project.load_toml("pyproject.toml")
CONSTRAINTS = ("-c", "constraints.txt")
DOCS_ENV = {"NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}


def _install(session: nox.Session, *groups: str, package: bool = True) -> None:
    """Install dependency groups from pyproject.toml (and the package), under the constraints."""
    requirements = [r for g in groups for r in nox.project.dependency_groups(PYPROJECT, g)]
    if package:
        requirements += ["-e", "."]
    session.install(*requirements, *CONSTRAINTS)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint and check the formatting."""
    _install(session, "lint", package=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def tests(session: nox.Session) -> None:
    """Tests against PyTorch, the package doctests and the pages' doctests (both languages)."""
    _install(session, "test")
    session.run("pytest", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the two-language site into site/ with `mkdocs build --strict`."""
    _install(session, "docs")
    session.run("mkdocs", "build", "--strict", *session.posargs, env=DOCS_ENV)


@nox.session(default=False)
def serve(session: nox.Session) -> None:
    """Live preview of the site at http://127.0.0.1:8000/."""
    _install(session, "docs")
    session.run("mkdocs", "serve", *session.posargs, env=DOCS_ENV)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Measure attention's time and memory; writes JSON and plots under docs/bench-results/."""
    _install(session, "test")
    session.run("python", "-m", "attention_ref.bench", *session.posargs)
