"""A Griffe extension for the API reference: the docstrings are written for reading in the source, the
reStructuredText way, and Python-Markdown reads two of their habits differently.

* A literal block is a paragraph ending in ``::`` and an indented block. Markdown already reads the indented
  block as code; the ``::`` becomes the ``:`` that reStructuredText displays (a lone ``::`` disappears).
* List items continue, and nest, with an indentation of two spaces; Python-Markdown needs four, and a blank
  line between the items of a list whose items hold several paragraphs.
"""

import re

import griffe

LITERAL_MARKER = re.compile(r"(\S?)[ \t]*::[ \t]*$", re.M)
BULLET = re.compile(r"[*-] ")


def literal_markers(text: str) -> str:
    return LITERAL_MARKER.sub(lambda m: m.group(1) + ":" if m.group(1) else "", text)


def list_indentation(text: str) -> str:
    """Re-indent list items from two spaces a level to Python-Markdown's four, keeping what is indented further
    inside an item (a literal block) at the same depth relative to the item's text."""
    out, levels, loose = [], [], False  # levels: (indentation of an item's text in the source, in the output)
    for line in text.split("\n"):
        n = len(line) - len(line.lstrip(" "))
        if not line.strip():
            loose = loose or bool(levels)
            out.append(line)
            continue
        while levels and n < levels[-1][0]:
            levels.pop()
        target = levels[-1][1] + n - levels[-1][0] if levels else n
        if BULLET.match(line.lstrip(" ")):
            if loose and out and out[-1].strip():  # a loose list's items are separated by blank lines
                out.append("")
            levels.append((n + 2, target + 4))
        elif not levels:
            loose = False
        out.append(" " * target + line.lstrip(" "))
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    def on_object(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = list_indentation(literal_markers(obj.docstring.value))
