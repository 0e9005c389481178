"""A griffe extension for the API reference pages: Sphinx roles in docstrings render as code.

Headwater's docstrings name other objects the Sphinx way (``:class:`SourceRecord```); mkdocstrings reads them as
Markdown, where such a role would show up literally. Loaded by the mkdocstrings handler in ``mkdocs.yml``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:attr|class|data|exc|func|meth|mod|obj):`~?([^`]+)`")


class SphinxRoles(griffe.Extension):
    """Rewrites ``:role:`name``` to ```name``` in every docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)
