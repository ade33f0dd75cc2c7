"""The masking patterns: a Hyperscan anchor, a Python confirmation and a validator for each.

Every Hyperscan expression ends in an explicit terminator (``\\b``, a consumed delimiter or a
fixed-length tail) so that one occurrence reports one or a few ends, never one per character of
an open-ended repetition. Hyperscan only finds *where* something may be; the bounded Python
``confirm`` regex, run with ``match()`` at the reported start on the rest of that line, decides
what exactly is replaced (its group ``v``), and ``validate`` rejects the look-alikes logs are full
of (version strings, loopback addresses, Python module paths, step counters).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

# Entity types whose identity matters inside one log get numbered pseudonyms (<HOST_1>);
# everything else is replaced by a fixed token.
PSEUDONYM_PREFIX = {"HOSTNAME": "HOST", "IP_ADDRESS": "IP", "EMAIL_ADDRESS": "EMAIL"}
FIXED_TOKEN = {
    "USERNAME": "<USER>",
    "HF_TOKEN": "<HF_TOKEN>",
    "WANDB_API_KEY": "<WANDB_API_KEY>",
    "AWS_ACCESS_KEY": "<AWS_ACCESS_KEY>",
    "AWS_SECRET_KEY": "<AWS_SECRET_KEY>",
    "GITHUB_TOKEN": "<GITHUB_TOKEN>",
    "OPENAI_API_KEY": "<OPENAI_API_KEY>",
    "ANTHROPIC_API_KEY": "<ANTHROPIC_API_KEY>",
    "SLACK_TOKEN": "<SLACK_TOKEN>",
    "STRIPE_KEY": "<STRIPE_KEY>",
    "NGC_API_KEY": "<NGC_API_KEY>",
    "JWT": "<JWT>",
    "PRIVATE_KEY": "<PRIVATE_KEY>",
    "URL_CREDENTIALS": "<URL_CREDENTIALS>",
    "SECRET": "<SECRET>",
    "PHONE_NUMBER": "<PHONE>",
    "CREDIT_CARD": "<CREDIT_CARD>",
}
ENTITIES = sorted([*PSEUDONYM_PREFIX, *FIXED_TOKEN])

# A validator gets (buffer, value start, value end, confirm match) and returns the entity to
# report (it may re-type, e.g. a host= value that is an IP), or None to reject.
Validator = Callable[[bytes, int, int, "re.Match[bytes]"], str | None]


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


def _c(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    return re.compile(pattern, flags)


_SECRET_TAIL = rb"(?:[^A-Za-z0-9_\-]|$)"  # terminator for tokens that may contain '-'

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
    b"example.org",
)
_HOST_TLDS = (
    rb"com|net|org|io|ai|internal|local|lan|cluster|localdomain|intra|corp|edu|gov|cloud|"
    rb"co|uk|de|fr|cn|jp|ch|nl|us|ca|au"
)
_LOOPBACK_NAMES = frozenset([b"localhost", b"localhost.localdomain", b"ip6-localhost"])
_VERSION_CONTEXT = re.compile(
    rb"(?i)(?:cudnn|nccl|cuda|cublas|driver|version|release|ver|==|>=|<=|~=|\bv)[\s:=_-]*$"
)
_SPECIAL_TOKEN_KEYS = frozenset(
    b"pad_token bos_token eos_token unk_token sep_token cls_token mask_token "
    b"additional_special_token chat_token".split()
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


def _validate_ipv4(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    before = buf[max(0, start - 24) : start]
    after = buf[end : end + 2]
    # 1.2.3.4.5 is a version or an OID, 8.9.2.26 after "cudnn" is a version.
    if before.endswith(b".") or (after[:1] == b"." and after[1:2].isdigit()):
        return None
    if _VERSION_CONTEXT.search(before):
        return None
    return _ip_entity(buf[start:end])


def _validate_ipv6(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    if buf[start - 1 : start] == b":" or buf[end : end + 1] == b":":
        return None
    return _ip_entity(buf[start:end])


def _is_public(host: bytes) -> bool:
    return any(host == d or host.endswith(b"." + d) for d in _PUBLIC_DOMAINS)


def _validate_fqdn(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
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


def _validate_host_value(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end].lower()
    if value in _LOOPBACK_NAMES or value.startswith(b"<") or not _has_alpha(value):
        # An all-numeric value is an IP (handled by the IP pattern) or a node index.
        return _ip_entity(value) if b"." in value or b":" in value else None
    if re.fullmatch(rb"(?:rank|default|local_rank|gpu|cuda|device)\d*", value):
        return None
    return "HOSTNAME"


def _validate_line_prefix_host(
    buf: bytes, start: int, end: int, m: re.Match[bytes]
) -> str | None:
    # pdsh/srun label lines "node-2: ..."; module loggers "torch.distributed.run: " end in a
    # letter, host names in clusters end in a digit.
    if not buf[end - 1 : end].isdigit():
        return None
    return _validate_host_value(buf, start, end, m)


def _validate_user(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
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


def _validate_assignment(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
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


def _validate_mixed_token(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    return None if not (_has_digit(value) and _has_alpha(value[3:])) else "_"


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


def _validate_card(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
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


def _validate_phone(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    prev = buf[start - 1 : start]
    if prev.isalnum() or prev in (b".", b"e", b"E", b"-", b"+"):
        return None  # 3.0e+05 12 34: scientific notation, not a phone
    ndigits = sum(1 for c in value if 48 <= c <= 57)
    return "PHONE_NUMBER" if 8 <= ndigits <= 15 else None


def _retype(entity: str, check: Validator) -> Validator:
    def validate(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
        return entity if check(buf, start, end, m) else None

    return validate


_I = re.IGNORECASE

SPECS: tuple[Spec, ...] = (
    Spec(
        "hf_token",
        "HF_TOKEN",
        rb"\b(?:hf|api_org)_[A-Za-z0-9]{30,}\b",
        _c(rb"(?P<v>(?:hf|api_org)_[A-Za-z0-9]{30,})"),
        1,
    ),
    Spec(
        "wandb_v1",
        "WANDB_API_KEY",
        rb"\bwandb_v1_[A-Za-z0-9_]{20,}\b",
        _c(rb"(?P<v>wandb_v1_[A-Za-z0-9_]{20,})"),
        1,
    ),
    Spec(
        "wandb_hex",
        "WANDB_API_KEY",
        rb"wandb[^\n]{0,80}\b[0-9a-f]{40}\b",
        _c(rb"wandb[^\n]{0,80}?\b(?P<v>[0-9a-f]{40})\b", _I),
        1,
        caseless=True,
    ),
    Spec(
        "aws_access_key",
        "AWS_ACCESS_KEY",
        rb"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b",
        _c(rb"(?P<v>[A-Z0-9]{20})"),
        1,
    ),
    Spec(
        "aws_secret_key",
        "AWS_SECRET_KEY",
        rb"aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]",
        _c(
            rb"aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?"
            rb"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            _I,
        ),
        1,
        caseless=True,
    ),
    Spec(
        "github_token",
        "GITHUB_TOKEN",
        rb"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})\b",
        _c(rb"(?P<v>(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        1,
    ),
    Spec(
        "anthropic_key",
        "ANTHROPIC_API_KEY",
        rb"\bsk-ant-[A-Za-z0-9_\-]{20,}" + _SECRET_TAIL,
        _c(rb"(?P<v>sk-ant-[A-Za-z0-9_\-]{20,})"),
        0,
        multiline=True,
    ),
    Spec(
        "openai_key",
        "OPENAI_API_KEY",
        rb"\bsk-[A-Za-z0-9_\-]{20,}" + _SECRET_TAIL,
        _c(rb"(?P<v>sk-[A-Za-z0-9_\-]{20,})"),
        1,
        _retype("OPENAI_API_KEY", _validate_mixed_token),
        multiline=True,
    ),
    Spec(
        "slack_token",
        "SLACK_TOKEN",
        rb"\b(?:xox[abpr]|xapp)-[A-Za-z0-9\-]{10,}(?:[^A-Za-z0-9\-]|$)",
        _c(rb"(?P<v>(?:xox[abpr]|xapp)-[A-Za-z0-9\-]{10,})"),
        1,
        multiline=True,
    ),
    Spec(
        "stripe_key",
        "STRIPE_KEY",
        rb"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})\b",
        _c(rb"(?P<v>(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
        1,
    ),
    Spec(
        "ngc_key",
        "NGC_API_KEY",
        rb"\bnvapi-[A-Za-z0-9_\-]{30,}" + _SECRET_TAIL,
        _c(rb"(?P<v>nvapi-[A-Za-z0-9_\-]{30,})"),
        1,
        multiline=True,
    ),
    Spec(
        "jwt",
        "JWT",
        rb"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _SECRET_TAIL,
        _c(rb"(?P<v>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"),
        1,
        multiline=True,
    ),
    Spec(
        "bearer",
        "SECRET",
        rb"\bbearer\s+[A-Za-z0-9._~+/=\-]{16}",
        _c(rb"bearer\s+(?P<v>[A-Za-z0-9._~+/=\-]{16,})", _I),
        4,
        caseless=True,
    ),
    Spec(
        "url_credentials",
        "URL_CREDENTIALS",
        rb"\b[a-z][a-z0-9+.\-]{1,15}://[^\s/@:]{0,128}:[^\s/@]{1,256}@",
        _c(rb"[a-z][a-z0-9+.\-]{1,15}://(?P<v>[^\s/@:]{0,128}:[^\s/@]{1,256})@", _I),
        2,
        caseless=True,
    ),
    Spec(
        "assignment",
        "SECRET",
        rb"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key|"
        rb"auth[_\-]?key|private[_\-]?key|signature|credentials?)[\"']?\s*[:=]\s*[\"']?[^\s\"'<]",
        _c(
            rb"[a-z_\-]*?(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key|"
            rb"auth[_\-]?key|private[_\-]?key|signature|credentials?)[\"']?\s*[:=]\s*[\"']?"
            rb"(?P<v>[^\s\"',;&)}\]]{1,512})",
            _I,
        ),
        5,
        _validate_assignment,
        caseless=True,
    ),
    Spec(
        "cli_secret_flag",
        "SECRET",
        rb"--[a-z_\-]*(?:password|token|api[_\-]?key|secret)[ =][\"']?[^\s\"'<\-]",
        _c(
            rb"--[a-z_\-]*(?:password|token|api[_\-]?key|secret)[ =][\"']?"
            rb"(?P<v>[^\s\"',;]{1,512})",
            _I,
        ),
        5,
        _validate_assignment,
        caseless=True,
    ),
    Spec(
        "email",
        "EMAIL_ADDRESS",
        rb"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}\b",
        _c(rb"(?P<v>[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,24})\b"),
        6,
    ),
    Spec(
        "home_path_user",
        "USERNAME",
        rb"/(?:home|Users)/[^/\\\s\"'<>:;,()\[\]]{1,64}(?:[/\\\s\"'<>:;,()\[\]]|$)",
        _c(rb"/(?:home|Users)/(?P<v>[^/\\\s\"'<>:;,()\[\]]{1,64})"),
        7,
        _validate_user,
    ),
    Spec(
        "windows_home_user",
        "USERNAME",
        rb"\b[a-z]:(?:\\\\?)Users(?:\\\\?)[^\\/\s\"'<>:]{1,64}(?:[\\/\s\"'<>:]|$)",
        _c(rb"[a-z]:\\\\?Users\\\\?(?P<v>[^\\/\s\"'<>:]{1,64})", _I),
        7,
        _validate_user,
        caseless=True,
    ),
    Spec(
        "user_variable",
        "USERNAME",
        rb"\b[A-Z_]*(?:USER|USERNAME|LOGNAME|USER_NAME)=[\"']?[A-Za-z_]",
        _c(rb"[A-Z_]*(?:USER|USERNAME|LOGNAME|USER_NAME)=[\"']?(?P<v>[A-Za-z_][A-Za-z0-9._\-]{0,63})"),
        7,
        _validate_user,
    ),
    Spec(
        "host_assignment",
        "HOSTNAME",
        rb"\b(?:hostname|host|master_addr|slurmd_nodename|nodename|node_name|hostaddr)"
        rb"[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9]",
        _c(
            rb"[a-z_]+[\"']?\s*[=:]\s*[\"']?(?P<v>[A-Za-z0-9][A-Za-z0-9.\-_]*[A-Za-z0-9]|[A-Za-z])",
            _I,
        ),
        8,
        _validate_host_value,
        caseless=True,
    ),
    Spec(
        "host_on",
        "HOSTNAME",
        rb"\bon (?:host|node|machine) [A-Za-z0-9]",
        _c(rb"on (?:host|node|machine) (?P<v>[A-Za-z0-9][A-Za-z0-9.\-_]*[A-Za-z0-9])", _I),
        8,
        _validate_host_value,
        caseless=True,
    ),
    Spec(
        "slurm_nodelist",
        "HOSTNAME",
        rb"\b(?:SLURM_JOB_NODELIST|SLURM_NODELIST|SLURM_STEP_NODELIST|NODELIST)=[A-Za-z0-9]",
        _c(rb"[A-Z_]*NODELIST=(?P<v>[A-Za-z0-9][A-Za-z0-9.\-_\[\],]*[A-Za-z0-9\]])"),
        8,
        _validate_host_value,
    ),
    Spec(
        "nccl_prefix",
        "HOSTNAME",
        rb"\b[A-Za-z][A-Za-z0-9._\-]*:\d+:\d+ \[\d+\]",
        _c(rb"(?P<v>[A-Za-z][A-Za-z0-9._\-]*):\d+:\d+ \[\d+\]"),
        8,
        _validate_host_value,
    ),
    Spec(
        "bracket_host_port",
        "HOSTNAME",
        rb"\[[A-Za-z][A-Za-z0-9._\-]*\]:\d",
        _c(rb"\[(?P<v>[A-Za-z][A-Za-z0-9._\-]*)\]:\d"),
        8,
        _validate_host_value,
    ),
    Spec(
        "line_prefix_host",
        "HOSTNAME",
        rb"^[a-z][a-z0-9]*(?:[.\-][a-z0-9]+)+: ",
        _c(rb"(?P<v>[a-z][a-z0-9]*(?:[.\-][a-z0-9]+)+): "),
        8,
        _validate_line_prefix_host,
        multiline=True,
    ),
    Spec(
        "ipv4",
        "IP_ADDRESS",
        rb"\b(?:\d{1,3}\.){3}\d{1,3}\b",
        _c(rb"(?P<v>(?:\d{1,3}\.){3}\d{1,3})"),
        9,
        _validate_ipv4,
    ),
    Spec(
        "ipv6",
        "IP_ADDRESS",
        rb"\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b|\b(?:[0-9a-f]{1,4}:){1,6}:[0-9a-f]{1,4}"
        rb"(?::[0-9a-f]{1,4}){0,5}\b",
        _c(
            rb"(?P<v>(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}:){1,6}:[0-9a-f]{1,4}"
            rb"(?::[0-9a-f]{1,4}){0,5})\b",
            _I,
        ),
        9,
        _validate_ipv6,
        caseless=True,
    ),
    Spec(
        "fqdn",
        "HOSTNAME",
        rb"\b[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)*\.(?:" + _HOST_TLDS + rb")\b",
        _c(rb"(?P<v>[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)*\.(?:" + _HOST_TLDS + rb"))\b", _I),
        10,
        _validate_fqdn,
        caseless=True,
    ),
    Spec(
        "phone_international",
        "PHONE_NUMBER",
        rb"\+\d{1,3}[ .\-]?\(?\d{1,4}\)?[ .\-]\d{2,4}[ .\-]\d{2,4}(?:[ .\-]\d{2,4})?\b",
        _c(rb"(?P<v>\+\d{1,3}[ .\-]?\(?\d{1,4}\)?[ .\-]\d{2,4}[ .\-]\d{2,4}(?:[ .\-]\d{2,4})?)\b"),
        11,
        _validate_phone,
    ),
    Spec(
        "phone_context",
        "PHONE_NUMBER",
        rb"\b(?:phone|tel|mobile|cell)\b[^\d\n]{0,12}\+?\(?\d[\d ().\-]{6,18}\d\b",
        _c(rb"(?:phone|tel|mobile|cell)\b[^\d\n]{0,12}(?P<v>\+?\(?\d[\d ().\-]{6,18}\d)\b", _I),
        11,
        _validate_phone,
        caseless=True,
    ),
    Spec(
        "credit_card",
        "CREDIT_CARD",
        rb"\b(?:\d{4}[ \-]){3}\d{1,7}\b|\b\d{13,19}\b",
        _c(rb"(?P<v>(?:\d{4}[ \-]){3}\d{1,7}|\d{13,19})\b"),
        12,
        _validate_card,
    ),
)

# Private key blocks span lines and are handled by the masker with state across chunks.
PRIVATE_KEY_BEGIN = re.compile(
    rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
)
PRIVATE_KEY_END = re.compile(rb"-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_HS = rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
