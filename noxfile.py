"""Sessions for attention-ref: `nox` runs lint, tests and docs; `nox -l` lists them all.

Every session installs with the constraints file, which pins torch to the CPU build.
`tests` runs on the lowest and the highest supported Python (`nox -s tests-3.11` for one); a
Python that is not installed, or for which the pinned torch would come with CUDA, is skipped
with a message.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.sessions = ["lint", "tests", "docs"]
nox.options.default_venv_backend = "venv"
# With CI set, nox fails on a Python it cannot find; `tests` skips it instead (and says so).
nox.options.error_on_missing_interpreters = False

PYPROJECT = nox.project.load_toml("pyproject.toml")
CONSTRAINTS = ("-c", "constraints.txt")
# PYTHONPATH: the hooks import docs_hooks (not installed: the wheel holds attention_ref only)
# from the checkout, as pytest does (pythonpath in pyproject.toml).
DOCS_ENV = {"NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg", "PYTHONPATH": "."}
# The lowest supported Python (mkdocs-material 9.8 needs 3.11) and the highest.
PYTHONS = ["3.11", "3.14"]
WORKFLOWS = Path(".github/workflows")


def _install(session: nox.Session, *groups: str, package: bool = True) -> None:
    """Install dependency groups from pyproject.toml (and the package), under the constraints."""
    requirements = [r for g in groups for r in nox.project.dependency_groups(PYPROJECT, g)]
    if package:
        requirements += ["-e", "."]
    session.install(*requirements, *CONSTRAINTS)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff (lint, formatting); the GitHub workflows: actionlint, zizmor, their JSON schema;
    the package's bars (tests/package/test_house.py: sizes, imports, shape letters); mypy on
    attention_ref ([tool.mypy] in pyproject.toml), which needs torch: skipped, as
    `tests` is, where only the CUDA build of the pinned torch is in reach."""
    _install(session, "lint", package=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    workflows = sorted(str(path) for path in WORKFLOWS.glob("*.yml"))
    session.run("actionlint", *workflows)
    session.run("zizmor", "--offline", "--min-severity", "low", str(WORKFLOWS))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    # The house's bars (class and function sizes, imports, the shape legend): ast, no torch.
    session.run(
        *("pytest", "tests/package/test_house.py", "--noconftest", "-p", "no:cacheprovider"),
        *("-o", "addopts=-ra --strict-markers"),
    )
    _skip_unless_cpu_torch(session)
    session.install("-e", ".[plot]", *CONSTRAINTS)  # the annotations of torch, numpy, matplotlib
    session.run("mypy")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Tests against PyTorch, the package doctests and the pages' doctests (both languages)."""
    _skip_unless_cpu_torch(session)
    _install(session, "test")
    # On every core, a test file at a time per worker: a file's fixtures (the copies it runs,
    # a page's namespace) are made once, in one worker.
    session.run("pytest", "-n", "auto", "--dist", "loadfile", *session.posargs)


@nox.session(python=PYTHONS[0], default=False)
def interop(session: nox.Session) -> None:
    """Tests against Hugging Face's transformers: from_hf on every family, the table, masks.

    tests/interop, with the transformers pinned in constraints.txt: attention_ref.from_hf on each
    supported family's attention module and decoder layer (test_from_hf_*.py, a test per quirk),
    the open-models table regenerated and compared with docs/includes/open-models.json, multi-head
    latent attention, attention with sink logits, masking_utils' masks.

    Not part of the plain `pytest` run, which needs only torch and numpy. Here nothing may be
    skipped: ATTENTION_REF_INTEROP=1 makes tests/interop/conftest.py fail a test or module that
    skips (transformers missing, a module renamed). Pass pytest options after `--`.
    """
    _skip_unless_cpu_torch(session)
    _install(session, "interop")
    session.run("pytest", "tests/interop", *session.posargs, env={"ATTENTION_REF_INTEROP": "1"})


def _skip_unless_cpu_torch(session: nox.Session) -> None:
    """Skip the session if the pinned torch would come as the multi-GB CUDA build.

    pip resolves torch under the constraints without installing anything (PyPI and pip's own
    configuration, e.g. a local wheel folder or PIP_EXTRA_INDEX_URL set to PyTorch's CPU index);
    any nvidia-* package in the answer means CUDA.
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        session.run(
            *("python", "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"),
            *("--report", str(report), "torch", *CONSTRAINTS),
            silent=True,
        )
        names = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    if cuda := sorted(n for n in names if n.lower().startswith(("nvidia-", "cuda-"))):
        session.skip(
            f"torch for Python {session.python} would come with CUDA ({', '.join(cuda[:3])}, ...):"
            " no CPU build of the pinned torch in reach. Set "
            "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu to use PyTorch's CPU wheels."
        )


@nox.session
def docs(session: nox.Session) -> None:
    """Build the two-language site into site/ with `mkdocs build --strict`, then print the core
    path's reading time (docs_hooks/reading_time.py; the bars are a browser test's, not this)."""
    _install(session, "docs")
    session.run("mkdocs", "build", "--strict", *session.posargs, env=DOCS_ENV)
    args = list(session.posargs)
    flag = next((f for f in ("--site-dir", "-d") if f in args), None)
    site = args[args.index(flag) + 1] if flag and args.index(flag) + 1 < len(args) else "site"
    session.run("python", "-m", "docs_hooks.reading_time", site, env=DOCS_ENV)


# Debian's Chromium (E2E_CHROMIUM names another, e.g. Google Chrome on GitHub's Ubuntu runners);
# Playwright's own browser download is not used.
CHROMIUM = Path(os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium"))
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")  # fonts-noto-cjk
# The browser tests see the site as GitHub Pages serves a project site: under a path, from
# another address than the one it is served on, unknown paths answered with its 404 page.
E2E_SITE_URL = "https://example.github.io/attention-ref/"
E2E_SITE = Path(".cache/site-e2e")


@nox.session(default=False)
def e2e(session: nox.Session) -> None:
    """The built site in a real browser: every page in both languages, served on 127.0.0.1.

    Builds the site for https://example.github.io/attention-ref/ into .cache/site-e2e, serves it
    under /attention-ref/ as GitHub Pages would (404 page for unknown paths), then drives
    Debian's Chromium with Playwright (tests/e2e): no console error,
    no request to another host, math typeset, figures with alt text in the page's language, the
    language menu there and back, copy buttons, search, links and anchors, dark mode, phone
    width, axe-core (no serious violation) and page weight (< 1.5 MB). Prints the pages' weights
    and the accessibility findings; screenshots go to screenshots/ (git-ignored).
    Chromium and a CJK font come from apt when missing (as root); axe-core with the e2e group
    (axe-playwright-python bundles it).
    Pass pytest options after `--`, e.g. `nox -s e2e -- -k masks`.
    """
    _install(session, "docs", "e2e")
    _system_packages(session)
    session.run(
        *("mkdocs", "build", "--strict", "--site-dir", str(E2E_SITE)),
        env={**DOCS_ENV, "SITE_URL": E2E_SITE_URL},
    )
    session.run(
        "pytest",
        "tests/e2e",
        *(session.posargs or ["--tb=short"]),
        env={
            "E2E_CHROMIUM": str(CHROMIUM),
            "E2E_SITE": str(E2E_SITE.resolve()),
        },
    )


def _system_packages(session: nox.Session) -> None:
    """Chromium and a CJK font for the browser tests: apt-get them as root."""
    missing = [
        package
        for package, present in (
            ("chromium", CHROMIUM.is_file()),
            ("fonts-noto-cjk", CJK_FONT.is_file()),
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


@nox.session(name="docs-properdocs", default=False)
def docs_properdocs(session: nox.Session) -> None:
    """Build the site with ProperDocs, the maintained MkDocs 1.x, and compare it with MkDocs'.

    ProperDocs builds into site-properdocs/, MkDocs into .cache/site-mkdocs/ (site/ is left
    alone); tests/builds checks that both have the same pages, search entries and figures.
    """
    _install(session, "properdocs")
    session.run(
        *("properdocs", "build", "--strict", "--config-file", "mkdocs.yml"),
        *("--site-dir", "site-properdocs"),
        env=DOCS_ENV,
    )
    session.run("mkdocs", "build", "--strict", "--site-dir", ".cache/site-mkdocs", env=DOCS_ENV)
    session.run(
        *("pytest", "tests/builds", "--noconftest", "-p", "no:cacheprovider", *session.posargs),
        env={"MKDOCS_SITE": ".cache/site-mkdocs", "PROPERDOCS_SITE": "site-properdocs"},
    )


@nox.session(default=False)
def serve(session: nox.Session) -> None:
    """Live preview of the site at http://127.0.0.1:8000/attention-ref/ (the path of site_url)."""
    _install(session, "docs")
    session.run("mkdocs", "serve", *session.posargs, env=DOCS_ENV)


@nox.session(default=False)
def translations(session: nox.Session) -> None:
    """List the Chinese pages whose English page changed since their translation, with a diff.

    docs_hooks/translations.py; each x.zh.md records the English text it follows in its front
    matter. After bringing a page in line: `nox -s translations -- --record docs/x.zh.md`
    (`-- --record-all` records every page). Fails while a page is stale.
    """
    session.run("python", "-m", "docs_hooks.translations", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Run benchmarks/ (time, memory, low-precision accuracy, decoding) into docs/bench-results/.

    Not a default session: timings need a quiet machine. Pass options after `--`, e.g.
    `nox -s bench -- --parts low-precision` or `-- --help`; the site draws the figures.
    """
    _install(session, "bench")
    session.run("python", "-m", "benchmarks", *session.posargs)
