"""MkDocs hook: the attention explorer's data, computed from attention_ref at build time.

``docs_hooks.explorer.explorer_json()`` trains the site's toy models (seeded, a few seconds on
one CPU thread) and writes their weights, and the mask gallery's, into
``.cache/explorer/attention.json`` (git-ignored), which the site serves as
``explorer/attention.json``. The file is kept with a key, a hash of what it is computed from
(attention_ref's and docs_hooks' code and the torch version): a build whose key is unchanged
reuses it and trains nothing. docs/javascripts/explorer.js finds it next to itself and draws it
where a page holds ``<div class="attention-explorer">`` (docs/visualizing.md).
"""

from __future__ import annotations

import hashlib
from importlib.metadata import version
from pathlib import Path

from mkdocs.structure.files import File

from docs_hooks.explorer import DATA_PATH, explorer_json


def _key(root: Path) -> str:
    """A hash of the code the data comes from, and of the torch that runs it."""
    digest = hashlib.sha256(version("torch").encode())
    sources = [*(root / "attention_ref").rglob("*.py"), *(root / "docs_hooks").rglob("*.py")]
    for path in sorted(sources):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def on_files(files, config):
    """Compute the explorer's data, unless the cache holds it for this code, and add it."""
    root = Path(config.config_file_path).parent
    path = root / ".cache" / DATA_PATH
    key_file = path.with_suffix(".key")
    key = _key(root)
    if not (path.is_file() and key_file.is_file() and key_file.read_text() == key):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(explorer_json(), encoding="utf-8")
        key_file.write_text(key)
    files.append(File.generated(config, DATA_PATH, abs_src_path=str(path)))
    return files
