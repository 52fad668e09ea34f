"""docs/includes/open-models.json is what from_hf builds today: regenerated here and compared,
so the page's table cannot drift from the modules (docs_hooks/open_models_table.py)."""

import pytest

pytest.importorskip("transformers")

from docs_hooks.open_models import DATA
from docs_hooks.open_models_table import dumps, generate, missing

REGENERATE = "PYTHONPATH=. .nox/interop/bin/python -m docs_hooks.open_models_table --write"


@pytest.fixture(scope="module")
def generated():
    return generate()


def test_the_committed_table_data_is_what_from_hf_builds(generated):
    committed = DATA.read_text(encoding="utf-8")
    assert dumps(generated) == committed, (
        f"{DATA.name} differs from what from_hf builds now (see the diff with "
        f"`python -m docs_hooks.open_models_table`); regenerate it: {REGENERATE}"
    )


def test_every_class_from_hf_takes_has_a_row(generated):
    assert not missing(generated), (
        f"from_hf supports {missing(generated)}, which no Family in "
        "docs_hooks/open_models_table.FAMILIES names: add the family's entry, then "
        f"{REGENERATE}"
    )
