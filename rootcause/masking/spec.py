"""What one masking pattern is: a Hyperscan anchor, a Python confirmation and a validator."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rootcause.masking.starts import StartOf

# (buffer, value start, value end, confirm match) -> the entity to report, None to reject, or
# (entity, end) for a shorter value than the pattern took.
Validator = Callable[[bytes, int, int, "re.Match[bytes]"], str | tuple[str, int] | None]


# Spec.plan: the confirmation's match, som, whether the pattern has a quoted value (group
# "w"), the validator, word, entity and priority.
Plan = tuple[
    Callable[[bytes, int, int], "re.Match[bytes] | None"],
    bool,
    bool,
    Validator | None,
    bool,
    str,
    int,
]


@dataclass(frozen=True)
class Spec:
    name: str
    entity: str
    hs: bytes
    confirm: re.Pattern[bytes]
    priority: int  # lower wins when two candidates cover the same span
    validate: Validator | None = None
    caseless: bool = False
    multiline: bool = False
    # The value must not touch an ASCII letter or digit on either side. Checked in Python
    # instead of a Hyperscan \b, which fails after '_' (ckpt_hf_..., run_10.0.0.1.log).
    word: bool = False
    # False: Hyperscan finds where the value ends, not where it starts (a start of match is
    # too costly for its pattern: the host names' thousand suffixes); ``confirm`` is then
    # searched in the bytes before that end and must end with ``$``.
    som: bool = True
    # Set: Hyperscan tracks no start of match for this pattern (costly for one that opens with
    # an unbounded repetition) and this gives, from the end, the leftmost start it would have
    # reported (starts.py); every scan's hits carry that start, as with ``som``.
    start: StartOf | None = None
    # Set: ``confirm`` with its connection-string alternative (a ';' that does not open a
    # "Name=") read as any other value byte, for a line where no ';' opens one: there the two
    # match alike, and a character class is matched in C a byte at a time where the
    # alternation goes through the regex engine's loop (``_or_plain``).
    plain: re.Pattern[bytes] | None = None
    # How many bytes before its anchor's start the confirmation and the validator may read
    # (a '\b' at the start reads one; validate_assignment the key name's 64): what an anchor's
    # verdict depends on before it (scanner._remembered). A validator that reads further back
    # must say so here, and a confirmation or validator must read nothing past the line break
    # after its value (or ``scanner._READ_AFTER`` past its window when the line runs on).
    context: int = 1
    # Whether what it reads before the anchor may run back past a line break (an address's
    # version context, "cudnn\n8.9.2.26"); if not, the bytes before the line break are no
    # part of its verdict.
    context_crosses_lines: bool = False
    # What confirming one anchor reads, in one tuple (scanner.confirm_one: a dense log has
    # hundreds of thousands of anchors, and a tuple is unpacked faster than fields are read).
    plan: Plan = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        plan = (
            self.confirm.match if self.plain is None else _or_plain(self.confirm, self.plain),
            self.som,
            "w" in self.confirm.groupindex,
            self.validate,
            self.word,
            self.entity,
            self.priority,
        )
        object.__setattr__(self, "plan", plan)


# A ';' that opens a connection string's next field (AccountKey=…==;EndpointSuffix=…).
_NAMED_FIELD = re.compile(rb";[A-Za-z][A-Za-z0-9]{0,39}=")


def _or_plain(
    confirm: re.Pattern[bytes], plain: re.Pattern[bytes]
) -> Callable[[bytes, int, int], re.Match[bytes] | None]:
    """``confirm.match``, by ``plain`` where no ';' in [start, end) opens a field (searched
    with the same end, so its look-ahead sees what ``confirm``'s would)."""
    full, fast, named = confirm.match, plain.match, _NAMED_FIELD.search

    def match(buf: bytes, start: int, end: int) -> re.Match[bytes] | None:
        if buf.find(b";", start, end) == -1 or named(buf, start, end) is None:
            return fast(buf, start, end)
        return full(buf, start, end)

    return match
