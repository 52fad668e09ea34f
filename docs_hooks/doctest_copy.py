"""What the copy button of a ```pycon doctest block copies: the Python a reader can run.

The transcript is read by Python's own ``doctest.DocTestParser``, as the tests read it: the
``>>>``/``...`` prompts go, the expected output goes. What is left pastes into a file, a
notebook and the plain ``python`` REPL alike:

- a statement that spans several lines is followed by a blank line, which the REPL needs to
  run it;
- a statement whose expected output is an exception is copied commented out, with the error
  named, so that the copy runs to the end::

      # k.view(1, 3, 2, 4)  # raises RuntimeError: shape '[1, 3, 2, 4]' is invalid ...

The MkDocs hook docs_hooks/hooks/doctest_blocks.py puts this text into the block's ``data-copy``
attribute, which Material's copy button copies instead of the block's text.
"""

from __future__ import annotations

import doctest

_PARSER = doctest.DocTestParser()


def examples(transcript: str) -> list[doctest.Example]:
    """The ``>>>`` examples of a transcript, as doctest reads them."""
    return _PARSER.get_examples(transcript)


def raised(example: doctest.Example) -> str | None:
    """The error an example is expected to raise, ``"ValueError: ..."``, or None."""
    if example.exc_msg is None:
        return None
    lines = example.exc_msg.strip().splitlines()
    return lines[0] if lines else "an exception"


def copy_of(example: doctest.Example) -> str:
    """One example's source as copied: commented out, with the error named, if it raises."""
    source = example.source.rstrip("\n")
    error = raised(example)
    if error is None:
        return source
    lines = [f"# {line}" if line.strip() else "#" for line in source.splitlines()]
    lines[-1] += f"  # raises {error}"
    return "\n".join(lines)


def runnable(transcript: str) -> str:
    """The code of a doctest transcript, ready to paste: no prompts, no output.

    >>> print(runnable('''
    ... >>> x = [1, 2]
    ... >>> for i in x:
    ... ...     print(i)
    ... 1
    ... 2
    ... >>> x[5]
    ... Traceback (most recent call last):
    ...     ...
    ... IndexError: list index out of range
    ... >>> len(x)
    ... 2
    ... '''))
    x = [1, 2]
    for i in x:
        print(i)
    <BLANKLINE>
    # x[5]  # raises IndexError: list index out of range
    len(x)
    """
    parts = []
    for example in examples(transcript):
        copy = copy_of(example)
        parts.append(copy)
        if "\n" in copy:
            parts.append("")
    return "\n".join(parts).rstrip()
