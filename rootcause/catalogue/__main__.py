"""Print the entries' JSON Schema.

`python -m rootcause.catalogue > rootcause/catalogue/schema.json` rewrites the committed one.
"""

from rootcause.catalogue import json_schema_text

print(json_schema_text(), end="")
