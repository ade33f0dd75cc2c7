"""bench.intake_instructions reads callgrind's dumps: a call's line repeats its callee's
inclusive cost, which must not be counted twice."""

from __future__ import annotations

from pathlib import Path

from bench.intake_instructions import instructions

DUMP = """# callgrind format
version: 1
positions: line
events: Ir
summary: 0

fn=(1) caller
10 100
+2 5
cfn=(2) callee
calls=1 20
+1 70
-3 1

fn=(2)
20 40
* 30
"""


def test_a_dump_counts_each_instruction_once(tmp_path: Path) -> None:
    dump = tmp_path / "cg.1.1"
    dump.write_text(DUMP)

    # caller's own 100 + 5 + 1, callee's 40 + 30; the call's 70 is the callee's again
    assert instructions(dump) == 176
