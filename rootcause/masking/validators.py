"""Validators that reject the look-alikes logs are full of, and the word lists they use.

Each gets (buffer, value start, value end, confirm match) and returns the entity to report (it
may re-type, e.g. a host= value that is an IP), or None to reject.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

Validator = Callable[[bytes, int, int, "re.Match[bytes]"], str | None]

# Python package names that share a dotted shape with host names (sklearn.cluster, tf.io).
_MODULE_HEADS = frozenset(
    b"torch torchvision torchaudio sklearn tf tensorflow jax flax numpy np scipy pandas pd os sys "
    b"threading self transformers datasets accelerate deepspeed megatron keras lightning "
    b"pytorch_lightning apex triton xformers nn cls args config cfg model data io".split()
)
# Public documentation and package hosts: naming them identifies nobody and helps the diagnosis.
_PUBLIC_DOMAINS = (
    b"pytorch.org",
    b"github.com",
    b"githubusercontent.com",
    b"huggingface.co",
    b"hf.co",
    b"nvidia.com",
    b"python.org",
    b"pypi.org",
    b"readthedocs.io",
    b"wandb.ai",
    b"wandb.me",
    b"tensorflow.org",
    b"microsoft.com",
    b"google.com",
    b"anaconda.org",
    b"conda.io",
)
_LOOPBACK_NAMES = frozenset([b"localhost", b"localhost.localdomain", b"ip6-localhost"])
_VERSION_CONTEXT = re.compile(
    rb"(?i)(?:cudnn|nccl|cuda|cublas|driver|version|release|ver|==|>=|<=|~=|\bv)[\s:=_-]*$"
)
_SPECIAL_TOKEN_KEYS = frozenset(
    b"pad_token bos_token eos_token unk_token sep_token cls_token mask_token "
    b"additional_special_token chat_token".split()
)
# Words that follow "host" in English messages ("pinned host memory", "host to device").
_HOST_WORDS = frozenset(
    b"a an and or the to is was are be in on of for from with memory buffer buffers side "
    b"device devices code tensor tensors allocation allocator machine name names process "
    b"processes ram cpu thread threads only copy copies transfer transfers pointer pointers "
    b"address addresses port ports key keys file files system os info configuration "
    b"mode call calls function functions data sync synchronization timeout not".split()
)
_PLACEHOLDER_VALUES = frozenset(
    b"none null nil true false yes no undefined redacted masked hidden secret password token "
    b"your_token your_api_key xxx xxxx *** ****".split()
)


def _has_digit(value: bytes) -> bool:
    return any(48 <= c <= 57 for c in value)


def _has_alpha(value: bytes) -> bool:
    return any(65 <= c <= 90 or 97 <= c <= 122 for c in value)


def _ip_entity(value: bytes) -> str | None:
    try:
        address = ipaddress.ip_address(value.decode("ascii"))
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified:
        return None
    return "IP_ADDRESS"


def validate_ipv4(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    before = buf[max(0, start - 24) : start]
    after = buf[end : end + 2]
    # 1.2.3.4.5 is a version or an OID, 8.9.2.26 after "cudnn" is a version.
    if before.endswith(b".") or (after[:1] == b"." and after[1:2].isdigit()):
        return None
    if _VERSION_CONTEXT.search(before):
        return None
    return _ip_entity(buf[start:end])


def validate_ipv6(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    if buf[start - 1 : start] == b":" or buf[end : end + 1] == b":":
        return None
    return _ip_entity(buf[start:end])


def _is_public(host: bytes) -> bool:
    return any(host == d or host.endswith(b"." + d) for d in _PUBLIC_DOMAINS)


def validate_fqdn(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    host = buf[start:end].lower()
    prev = buf[start - 1 : start]
    nxt = buf[end : end + 2]
    # sklearn.cluster.KMeans, path/to/foo.io/bar: part of a longer dotted or path name.
    if prev in (b".", b"_") or (nxt[:1] in (b".", b"_") and nxt[1:2].isalnum()):
        return None
    if nxt[:1] == b"(":  # a call: threading.local()
        return None
    if host.split(b".", 1)[0] in _MODULE_HEADS or host in _LOOPBACK_NAMES or _is_public(host):
        return None
    return "HOSTNAME"


def validate_host_value(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end].lower()
    if value in _LOOPBACK_NAMES or value.startswith(b"<") or not _has_alpha(value):
        # An all-numeric value is an IP (handled by the IP pattern) or a node index.
        return _ip_entity(value) if b"." in value or b":" in value else None
    if re.fullmatch(rb"(?:rank|default|local_rank|cuda|device)\d*", value):
        return None
    return "HOSTNAME"


def validate_host_word(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # "host vm" at the end of a record is a name; "host memory is low" is English. Without a
    # key=value shape, accept only names with a digit, '-' or '.', or that end the record.
    value = buf[start:end]
    tail = buf[end : end + 2]
    if value.lower() in _HOST_WORDS:
        return None
    plain = not (_has_digit(value) or b"-" in value or b"." in value)
    if plain and tail[:1] not in (b"\n", b"\r", b"", b"|", b",", b";") and tail != b" |":
        return None
    return validate_host_value(buf, start, end, m)


def validate_line_prefix_host(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # pdsh/srun label lines "node-2: ..."; module loggers "torch.distributed.run: " end in a
    # letter, host names in clusters end in a digit.
    if not buf[end - 1 : end].isdigit():
        return None
    return validate_host_value(buf, start, end, m)


def validate_user(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    if value.startswith((b"<", b"$", b"%")) or value in (b".", b".."):
        return None
    return "USERNAME"


def _is_key_char(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in (45, 95)  # 0-9 A-Z a-z - _


def _full_key(buf: bytes, start: int) -> bytes:
    # The anchor starts at "token"/"password"; the variable around it may be longer
    # (HF_TOKEN, pad_token, --hf-token), and the whole name decides.
    i = start
    while i > 0 and start - i < 64 and _is_key_char(buf[i - 1]):
        i -= 1
    j = start
    while j < len(buf) and j - start < 64 and _is_key_char(buf[j]):
        j += 1
    return buf[i:j].lower().lstrip(b"-")


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def validate_assignment(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    key = _full_key(buf, m.start())
    if key in _SPECIAL_TOKEN_KEYS or key.endswith((b"_token_id", b"tokens")):
        return None
    low = value.lower().strip(b".")
    if not low or low in _PLACEHOLDER_VALUES or value.startswith((b"<", b"$", b"%", b"{", b"*")):
        return None
    if b"pass" in key or b"pwd" in key:
        return "SECRET" if len(value) >= 3 else None
    # Tokens and keys are long and mixed; "token: 512", "secret=true" or the source line
    # "token = self.tokenizer.encode(x)" in a traceback are not secrets.
    if len(value) < 8 or b"(" in value or b"[" in value:
        return None
    if _IDENTIFIER.fullmatch(value) and not _has_digit(value):
        return None
    if not (_has_alpha(value) and _has_digit(value)) and len(value) < 20:
        return None
    return "SECRET"


def validate_openai(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # sk-some-long-hyphenated-words is prose; real keys mix digits and letters.
    value = buf[start + 3 : end]
    return "OPENAI_API_KEY" if _has_digit(value) and _has_alpha(value) else None


def _luhn(digits: bytes) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = c - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def validate_card(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    digits = bytes(c for c in buf[start:end] if 48 <= c <= 57)
    if not 13 <= len(digits) <= 19 or not _luhn(digits):
        return None
    if buf[start - 1 : start] in (b".", b"=", b"x") or buf[end : end + 1] == b".":
        return None  # 0.1234567890123 or seed=..., not a card
    # Issuer prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners): epoch timestamps in ms/ns
    # and random seeds rarely start like a card.
    if re.match(rb"4|5[1-5]|2[2-7]|3[47]|6011|65|64[4-9]|35|3[068]", digits):
        return "CREDIT_CARD"
    return None


def validate_phone(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    prev = buf[start - 1 : start]
    if prev.isalnum() or prev in (b".", b"e", b"E", b"-", b"+"):
        return None  # 3.0e+05 12 34: scientific notation, not a phone
    ndigits = sum(1 for c in value if 48 <= c <= 57)
    return "PHONE_NUMBER" if 8 <= ndigits <= 15 else None
