"""Names and short texts that people and clients give us, made safe to show to others.

A file name, a job, a commit, a label, an organisation's or a token's name is shown back in pages,
the API and e-mails, to people other than whoever wrote it. Control characters there break lines
and terminals (a `commit` with CR/LF forges a second line in a log or a table), and
bidirectional overrides and invisible characters make a name read as another one
(`invoice\u202etxt.exe` shows as `invoiceexe.txt`, `Ac\u200bme` looks like `Acme`). So every such
field is neutralised once, where it comes in (the services that store it): controls become spaces,
the invisible and direction-changing characters are dropped.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL, and the Unicode line and paragraph separators: each one a space.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# The same, less newline and tab, in a text of several lines (a question, a request's message).
_CONTROLS_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# Characters that show nothing yet change what is shown: the soft hyphen, the Arabic letter mark,
# the Mongolian vowel separator, zero-width spaces and joiners, left-to-right and right-to-left
# marks, embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the invisible
# operators and deprecated format characters (U+2060-U+206F), the byte order mark, interlinear
# annotation marks, and the tag characters (U+E0000-U+E007F: invisible ASCII).
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)
_SPACES = re.compile(" {2,}")


def one_line(text: str) -> str:
    """`text` on one line, safe to show: controls (CR and LF included) are spaces, invisible and
    bidirectional formatting characters are gone, runs of spaces one space, the ends trimmed."""
    if not (text.isascii() and text.isprintable()):
        # Printable ASCII has no control, invisible or bidirectional character: the usual case,
        # one pass in C instead of three regular expressions.
        text = _INVISIBLE.sub("", _CONTROLS.sub(" ", text))
    return _SPACES.sub(" ", text).strip() if "  " in text else text.strip()


def several_lines(text: str) -> str:
    """`text` with its lines kept (CR LF and CR become LF; tabs stay), otherwise as one_line
    treats it: other controls are spaces, invisible and bidirectional characters are gone."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n")
    return _INVISIBLE.sub("", _CONTROLS_BUT_LINES.sub(" ", lines)).strip()
