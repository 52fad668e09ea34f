"""Running ``python -m benchmarks`` in a test, over a saved ``cpu.json``."""

import json

from benchmarks import cli


def run(tmp_path, saved, *argv):
    """``python -m benchmarks ARGV --out tmp_path`` over a ``cpu.json`` that holds ``saved``:
    the results it leaves there."""
    (tmp_path / "cpu.json").write_text(json.dumps(saved))
    assert cli.main([*argv, "--out", str(tmp_path)]) == 0
    return json.loads((tmp_path / "cpu.json").read_text())


def run_alone(tmp_path, saved, key, *argv):
    """`run`, checked to leave every part but ``key`` as saved: the results."""
    results = run(tmp_path, saved, *argv)
    assert {k: v for k, v in results.items() if k != key} == saved
    return results
