"""The built site in a real browser: served on 127.0.0.1, driven by Playwright in Debian's Chromium.

`nox -s e2e` builds the site and runs these tests; they are kept out of the plain `pytest` run
(``--ignore=tests/e2e`` in pyproject.toml). By hand, after a build into site/, with the e2e
dependency group installed (Playwright, and axe-core as axe-playwright-python bundles it)::

    pytest tests/e2e

The site is served as GitHub Pages serves a project site: under the path of the address it was
built for (``nox -s e2e`` builds for https://example.github.io/attention-ref/ into
.cache/site-e2e, set as E2E_SITE, and serves it under ``/attention-ref/``), with its 404 page
for any unknown path. Every page (each ``index.html``, English at the root, Chinese under
``zh/``) is opened once, in a fresh browser context; what the tests assert on is gathered
during that visit (`visit.py`), the first time a test asks for it. The session prints the
pages' weights and every accessibility finding, and leaves screenshots of every page (desktop
light, desktop dark, phone) under screenshots/, which git ignores.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from . import visit
from .site_pages import SCREENSHOTS, SITE, base_path, pages

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_configure(config: pytest.Config) -> None:
    if not (SITE / "index.html").is_file():
        raise pytest.UsageError(f"no built site at {SITE}: run `nox -s e2e`, which builds it")
    if not Path(CHROMIUM).is_file():
        raise pytest.UsageError(
            f"{CHROMIUM} is missing: `apt-get install chromium fonts-noto-cjk` (as root), "
            "or point E2E_CHROMIUM at a Chromium"
        )
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)


class _StaticHost(http.server.SimpleHTTPRequestHandler):
    """site/ as GitHub Pages serves a project site: under the path of ``site_url``
    (``/attention-ref/``), text gzip-compressed, the site's own 404.html for any unknown path."""

    COMPRESSED = (".html", ".css", ".js", ".json", ".svg", ".xml", ".txt")

    def translate_path(self, path: str) -> str:
        """Only paths under the site's base path name files; anything else is not found."""
        base = base_path()
        url_path = path.split("?", 1)[0].split("#", 1)[0]
        if not (url_path + "/").startswith(base):
            return str(SITE / ".not-found")
        return super().translate_path("/" + url_path.removeprefix(base))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """Not found: status 404 with the site's 404 page, as GitHub Pages answers."""
        page = SITE / "404.html"
        if code != 404 or not page.is_file():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):
            path = path / "index.html"
        accepts_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts_gzip and path.suffix in self.COMPRESSED and path.is_file()):
            return super().send_head()
        body = _gzip(path, path.stat().st_mtime_ns)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A browser context closed mid-transfer is no error of the site's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@functools.cache
def _gzip(path: Path, mtime_ns: int) -> bytes:
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """site/ served on 127.0.0.1, on a free port, under the path of the site's address."""
    handler = functools.partial(_StaticHost, directory=str(SITE))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def visits(browser: Browser, base_url: str) -> visit.Visits:
    """Each page's visits, made once and shared by the tests."""
    return visit.Visits(browser, base_url)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``page``: every page of the built site; ``slug``: every page name, either language."""
    if "page" in metafunc.fixturenames:
        found = pages()
        metafunc.parametrize("page", found, ids=[p.id for p in found])
    if "slug" in metafunc.fixturenames:
        slugs = sorted({p.slug for p in pages()})
        metafunc.parametrize("slug", slugs, ids=[s or "home" for s in slugs])


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The pages' weights and every accessibility finding, and where the screenshots are."""
    report = visit.REPORT
    if not report.weights and not report.axe:
        return
    write = terminalreporter.write_line
    if report.weights:
        terminalreporter.section("page weight (bytes transferred, first visit, no cache)")
        table = visit.weight_table(report.weights)
        for line in table.splitlines():
            write(line)
        (SCREENSHOTS / "page-weights.md").write_text(table + "\n", encoding="utf-8")
    terminalreporter.section("axe-core findings (all impacts)")
    if not report.axe:
        write("none")
    for line in sorted(report.axe):
        write(line)
    write(f"screenshots: {SCREENSHOTS}/")
