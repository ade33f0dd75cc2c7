"""The diagnosis engine: masked log chunks in, a DiagnosisResult (rootcause.result) out.

`scanning` reads a log in one pass and keeps a bounded state, `rules` decides which entry it shows
and which rank failed first, `report` builds the result, and `core` holds the compiled catalogue
(Engine) that runs them.
"""

from rootcause.engine.core import Engine, get_engine

__all__ = ["Engine", "get_engine"]
