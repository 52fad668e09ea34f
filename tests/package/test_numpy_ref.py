import subprocess
import sys

import numpy as np
import torch
from hypothesis import given

from attention_ref import numpy_ref

from .strategies import attention_cases


@given(attention_cases(dtypes=(torch.float64,), allow_gqa=False))
def test_matches_torch_sdpa(case):
    mask = None if case.attn_mask is None else case.attn_mask.numpy()
    ours = numpy_ref.scaled_dot_product_attention(
        case.query.numpy(), case.key.numpy(), case.value.numpy(), mask, case.is_causal, case.scale
    )
    theirs = torch.nn.functional.scaled_dot_product_attention(
        case.query, case.key, case.value, **case.kwargs
    ).numpy()
    np.testing.assert_allclose(
        ours, theirs, rtol=0, atol=1e-10 * max(1, np.abs(theirs).max(initial=0))
    )


def test_softmax_matches_torch():
    x = np.random.default_rng(0).normal(size=(3, 7)) * 50
    np.testing.assert_allclose(numpy_ref.softmax(x), torch.softmax(torch.from_numpy(x), -1).numpy())


def test_imports_without_torch():
    code = (
        "import sys, importlib.util, pathlib\n"
        "sys.modules['torch'] = None  # any torch import now fails\n"
        f"spec = importlib.util.spec_from_file_location('nr', {numpy_ref.__file__!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "import numpy as np; print(m.softmax(np.zeros(2)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "0.5" in result.stdout
