"""Sessions for attention-ref: `nox` runs lint, tests and docs; `nox -l` lists them all.

Every session installs with the constraints file, which pins torch to the CPU build.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright's own download is not used
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")  # fonts-noto-cjk
AXE = Path(".cache/npm/node_modules/axe-core")  # npm's axe-core, major version 4


@nox.session(default=False)
def e2e(session: nox.Session) -> None:
    """The built site in a real browser: every page in both languages, served on 127.0.0.1.

    Builds the site, then drives Debian's Chromium with Playwright (tests/e2e): no console error,
    no request to another host, math typeset, figures with alt text in the page's language, the
    language menu there and back, copy buttons, search, links and anchors, dark mode, phone
    width, axe-core (no serious violation) and page weight (< 1.5 MB). Prints the pages' weights
    and the accessibility findings; screenshots go to screenshots/ (git-ignored).
    Chromium and npm come from apt when missing (as root); axe-core from npm into .cache/npm.
    Pass pytest options after `--`, e.g. `nox -s e2e -- -k masks`.
    """
    _install(session, "docs", "e2e")
    _system_packages(session)
    if not (AXE / "axe.min.js").is_file():
        session.run(
            *("npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"),
            *("--prefix", ".cache/npm", "axe-core@4"),
            external=True,
        )
    session.run("mkdocs", "build", "--strict", env=DOCS_ENV)
    session.run(
        "pytest",
        "tests/e2e",
        *(session.posargs or ["--tb=short"]),
        env={"E2E_AXE": str((AXE / "axe.min.js").resolve()), "E2E_CHROMIUM": str(CHROMIUM)},
    )


def _system_packages(session: nox.Session) -> None:
    """Chromium and a CJK font for the browser tests, npm for axe-core: apt-get them as root."""
    missing = [
        package
        for package, present in (
            ("chromium", CHROMIUM.is_file()),
            ("fonts-noto-cjk", CJK_FONT.is_file()),
            ("npm", shutil.which("npm") is not None),
        )
        if not present
    ]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        session.error(
            f"the browser tests need {', '.join(missing)}: "
            f"`sudo apt-get install {' '.join(missing)}` (Debian/Ubuntu), then run again"
        )
    session.run("apt-get", "update", "-qq", external=True)
    session.run(
        "apt-get",
        "install",
        "-y",
        "-qq",
        *missing,
        external=True,
        env={"DEBIAN_FRONTEND": "noninteractive"},
    )


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
