"""Run copied programs as a reader would, then call what they define (in a fresh Python).

Usage: ``python run_copy.py JOBS.json CASES.py OUT.pt``. JOBS.json lists ``{"key", "copy",
"names"}``. Each copy, in a namespace of its own, is pasted line by line into an interactive
console (what the plain ``python`` REPL does with a paste) and also run as a file; any error
fails. Then ``case_<name>`` from CASES.py is called for each of its names with the copy's
globals, and every result is saved to OUT.pt with the list of modules that were imported.
"""

import code
import json
import sys

import torch


class PasteConsole(code.InteractiveConsole):
    """The REPL's reading of a paste, failing on the first error instead of printing it."""

    def showtraceback(self):
        raise RuntimeError("the pasted copy raised") from sys.exc_info()[1]

    def showsyntaxerror(self, filename=None, **kwargs):
        raise SyntaxError("the pasted copy is not valid in the REPL") from sys.exc_info()[1]


def pasted(text: str) -> dict:
    console = PasteConsole(locals={"__name__": "__main__"})
    more = False
    for line in text.splitlines():
        more = console.push(line)
    if more:
        console.push("")
    return console.locals


def as_file(text: str) -> dict:
    namespace: dict = {"__name__": "__main__"}
    exec(compile(text, "copy.py", "exec"), namespace)
    return namespace


def main(jobs_path: str, cases_path: str, out_path: str) -> None:
    cases: dict = {"__name__": "cases"}
    with open(cases_path, encoding="utf-8") as file:
        exec(compile(file.read(), cases_path, "exec"), cases)
    with open(jobs_path, encoding="utf-8") as file:
        jobs = json.load(file)
    results = {}
    for job in jobs:
        try:
            namespaces = pasted(job["copy"]), as_file(job["copy"])
            results[job["key"]] = {
                name: tuple(cases[f"case_{name}"](ns) for ns in namespaces) for name in job["names"]
            }
        except Exception as error:
            raise RuntimeError(f"{job['key']}: {error!r}") from error
    modules = sorted({m.split(".")[0] for m in sys.modules})
    torch.save({"results": results, "modules": modules}, out_path)


if __name__ == "__main__":
    main(*sys.argv[1:])
