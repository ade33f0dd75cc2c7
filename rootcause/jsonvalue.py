"""Names for JSON data: what `json.loads` and `msgspec.to_builtins` return, typed.

Used where data really is arbitrary JSON (a stored entry, an API payload), rather than leaving it
untyped.
"""

from __future__ import annotations

from typing import TypeAlias

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"
