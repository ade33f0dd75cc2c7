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
    # What confirming one anchor reads, in one tuple (scanner.confirm_one: a dense log has
    # hundreds of thousands of anchors, and a tuple is unpacked faster than fields are read).
    plan: Plan = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        plan = (
            self.confirm.match,
            self.som,
            "w" in self.confirm.groupindex,
            self.validate,
            self.word,
            self.entity,
            self.priority,
        )
        object.__setattr__(self, "plan", plan)
