"""DRF's JSON parser, with a nesting too deep for Python's parser answered 400, not 500.

`json.load` recurses once per level of nesting and raises RecursionError (not the ValueError DRF
turns into a ParseError) on a body of 200,000 `[`, which DRF then let through as an
unhandled error. It is the caller's malformed body like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    # DRF's signature: the parsed document is any JSON value, the context DRF's own dict
    def parse(
        self,
        stream: IO[Any],  # as DRF declares it
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,  # as above
    ) -> Any:  # any JSON value
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
