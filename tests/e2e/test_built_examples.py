"""The built site's copy buttons and downloads are the pages' examples (no browser needed).

The plain test session runs these checks only when site/ holds a build newer than the page;
`nox -s e2e` builds the site first, so here they always run. The checks themselves live in
tests/docs/test_page_examples.py.
"""

from tests.docs.test_page_examples import (
    test_built_copy_buttons_copy_the_page_copies,
    test_built_downloads_are_the_page_examples,
)

__all__ = [
    "test_built_copy_buttons_copy_the_page_copies",
    "test_built_downloads_are_the_page_examples",
]
