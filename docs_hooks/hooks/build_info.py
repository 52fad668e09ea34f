"""MkDocs hook: what the site was built with, for the footer of every page.

``config.extra.build`` holds the commit (``GITHUB_SHA`` in GitHub Actions, else ``git
rev-parse HEAD``; none outside a git checkout), the build date (UTC, or the date of
``SOURCE_DATE_EPOCH`` for a reproducible build) and the version of torch installed next to
MkDocs, which the figures are drawn with and, pinned by constraints.txt, the doctests run
against. overrides/partials/copyright.html writes them in the page's language.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from docs_hooks.constants import commit


def _date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return when.date().isoformat()


def _torch() -> str | None:
    try:
        return version("torch").split("+")[0]  # 2.13.0+cpu: the CPU build of 2.13.0
    except PackageNotFoundError:
        return None


def on_config(config):
    """Put ``{"commit", "date", "torch"}`` under ``config.extra.build``."""
    root = Path(config.config_file_path).parent
    config.extra["build"] = {"commit": commit(root), "date": _date(), "torch": _torch()}
    return config
