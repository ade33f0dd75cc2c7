"""Validators that reject the look-alikes logs are full of, and the word lists they use.

Each gets (buffer, value start, value end, confirm match) and returns the entity to report (it
may re-type, e.g. a host= value that is an IP), or None to reject, or (entity, end) to report a
shorter value than the pattern took.
"""

from __future__ import annotations

import ipaddress
import os
import re
from functools import lru_cache
from itertools import pairwise

from rootcause.masking.suffixes import COMMON_TLDS, PRIVATE_TLDS

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
    b"nvcr.io",
    b"docker.io",
    b"ghcr.io",
    b"quay.io",
    # services whose host names no one in particular: the secret is in their path (masked)
    b"hooks.slack.com",
    b"slack.com",
    b"core.windows.net",
    b"googleapis.com",
    b"npmjs.org",
    b"openai.com",
    # public forges and CI services: a run's URL stays linkable (the project and run in its
    # path are kept, a token in its query or credentials before the host are not)
    b"gitlab.com",
    b"bitbucket.org",
    b"codeberg.org",
    b"circleci.com",
    b"dev.azure.com",
    b"buildkite.com",
    b"travis-ci.com",
    b"travis-ci.org",
    b"app.codecov.io",
    b"codecov.io",
    b"sourceforge.net",
)
# More hosts that name no one in particular, for the operator and the command line alike:
# comma-separated host names, each kept with its subdomains.
PUBLIC_HOSTS_ENV = "MASKING_PUBLIC_HOSTS"
_HOST_NAME = re.compile(rb"(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9\-]{0,62}")


def parse_public_hosts(value: str) -> tuple[bytes, ...]:
    """The host names of ``MASKING_PUBLIC_HOSTS`` ("ci.acme.com, jenkins.example.org");
    ValueError naming the first that is not a host name with a dot."""
    hosts = []
    for item in value.split(","):
        host = item.strip().lower().rstrip(".")
        if not host:
            continue
        name = host.encode("ascii", "replace")
        if _HOST_NAME.fullmatch(name) is None:
            raise ValueError(f"{item.strip()!r} is not a host name (name.domain)")
        hosts.append(name)
    return tuple(hosts)


# What follows a host name in a file name: gpu-node-17.corp.acme.internal.log
_FILE_EXTENSIONS = frozenset(
    b"log txt out err json jsonl yaml yml csv tsv pt pth bin ckpt safetensors npz npy h5 pkl "
    b"gz tar zip tgz bz2 xz zst trace prof nsys-rep qdrep sqlite db html md sh".split()
)
# Words before a dot that make the dotted numbers after it a version: libcudnn.so.8.9.2.26
_VERSION_WORDS = frozenset(b"so dll dylib v ver version post dev rc a b".split())
_LOOPBACK_NAMES = frozenset([b"localhost", b"localhost.localdomain", b"ip6-localhost"])
_VERSION_CONTEXT = re.compile(
    # pkg==9.1.0.70, but not a "====== " banner nor a comparison "addr == " before an address
    rb"(?i)(?:(?:cudnn|nccl|cuda|cublas|driver|version|release|ver|\bv)[\s:=_-]*|"
    rb"[^=<>~\s](?:==|>=|<=|~=)\s*)$"
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


# Every byte but a digit, every byte but an ASCII letter: deleting them (one C call) leaves
# the digits or letters (a generator over the bytes cost a tenth of the validators' time).
_NOT_DIGITS = bytes(c for c in range(256) if not 48 <= c <= 57)
_NOT_LETTERS = bytes(c for c in range(256) if not (65 <= c <= 90 or 97 <= c <= 122))
_NOT_UPPER = bytes(c for c in range(256) if not 65 <= c <= 90)
_NOT_LOWER = bytes(c for c in range(256) if not 97 <= c <= 122)


def count_digits(value: bytes) -> int:
    return len(value.translate(None, _NOT_DIGITS))


def _has_digit(value: bytes) -> bool:
    return bool(value.translate(None, _NOT_DIGITS))


def _has_alpha(value: bytes) -> bool:
    return bool(value.translate(None, _NOT_LETTERS))


def _ip_entity(value: bytes) -> str | None:
    try:
        address = ipaddress.ip_address(value.decode("ascii"))
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified:
        return None
    return "IP_ADDRESS"


# A network interface name before an address (NCCL: "Using ib0:fe80::1%ib0<0>"); a name with a
# letter that is not hex, so not an address group.
_INTERFACE_BEFORE = re.compile(rb"(?:^|[^0-9A-Za-z])[0-9a-z]*[g-z][0-9a-z]*:$")


def _word_before_dot(buf: bytes, dot: int) -> bytes:
    i = dot
    while i > 0 and dot - i < 16 and _is_alnum(buf[i - 1]):
        i -= 1
    return buf[i:dot]


# A date that starts right where an address's last octet may end (10.0.0.52026-12-01).
_DATE_AT = re.compile(rb"(?:19|20)\d\d-[01]\d-[0-3]\d")


def _glued_date_cut(buf: bytes, start: int, end: int) -> int | None:
    """Where an address ends when a date is glued to it: the greedy last octet of
    "10.0.0.52026-12-01" took "520" and a digit follows; its first digits are the address
    when the rest, from there on, is a date (unambiguous: no octet starts a date)."""
    last = buf.rindex(b".", start, end) + 1
    for cut in range(end, last, -1):
        if _DATE_AT.match(buf, cut):
            return cut
    return None


def validate_ipv4(
    buf: bytes, start: int, end: int, m: re.Match[bytes]
) -> str | tuple[str, int] | None:
    if buf[end : end + 1].isdigit():
        cut = _glued_date_cut(buf, start, end)
        if cut is None:
            return None
        entity = _validate_ipv4(buf, start, cut, glued=True)
        return None if entity is None else (entity, cut)
    return _validate_ipv4(buf, start, end)


def _validate_ipv4(buf: bytes, start: int, end: int, glued: bool = False) -> str | None:
    before = buf[max(0, start - 24) : start]
    after = b"" if glued else buf[end : end + 2]
    # 1.2.3.4.5 is a version or an OID, 8.9.2.26 after "cudnn" is a version; the scan has no
    # left anchor (ckpt_10.20.30.40 must be found), so a digit before means a longer number.
    if before[-1:].isdigit() or after[:1].isdigit() or (after[:1] == b"." and after[1:2].isdigit()):
        return None
    if before.endswith(b"."):
        # out.10.0.7.9.err is an address in a file name; libcudnn.so.8.9.2.26 a version.
        word = _word_before_dot(buf, start - 1)
        if not word or not _has_alpha(word) or word.lower() in _VERSION_WORDS:
            return None
    if _VERSION_CONTEXT.search(before):
        return None
    return _ip_entity(buf[start:end])


def validate_ipv6(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    prev = buf[start - 1 : start]
    after = buf[end : end + 1]
    if prev == b":" and not _INTERFACE_BEFORE.search(buf[max(0, start - 17) : start]):
        return None  # inside a longer run of colon groups; NCCL's "ib0:fe80::1" is an address
    if after == b":" or (prev and _is_alnum(prev[0])):
        return None
    if after and _is_alnum(after[0]):
        return None  # c10::cuda: the hex-looking start of a C++ name
    value = buf[start:end]
    # c10d::, at::: C++ namespaces; an address written with '::' has at least two groups.
    if b"::" in value and sum(1 for g in value.split(b":") if g) < 2:
        return None
    return _ip_entity(value)


@lru_cache(maxsize=4)
def _public(extra: str) -> frozenset[bytes]:
    try:
        added = parse_public_hosts(extra)
    except ValueError:
        added = ()  # config/settings.py refuses to start with it; the command line ignores it
    return frozenset(_PUBLIC_DOMAINS + added)


def _is_public(host: bytes) -> bool:
    # the host or one of its parent domains is public: a set lookup per dot
    public = _public(os.environ.get(PUBLIC_HOSTS_ENV, ""))
    i = 0
    while True:
        if host[i:] in public:
            return True
        i = host.find(b".", i) + 1
        if i == 0:
            return False


def _file_extension_follows(buf: bytes, end: int) -> bool:
    i = end + 1
    while i < len(buf) and i - end <= 12 and (_is_alnum(buf[i]) or buf[i] == 45):
        i += 1
    return buf[end + 1 : i].lower() in _FILE_EXTENSIONS


def validate_fqdn(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    host = buf[start:end].lower()
    prev = buf[start - 1 : start]
    nxt = buf[end : end + 2]
    # sklearn.cluster.KMeans: part of a longer dotted name; but gpu-node-17.acme.internal.log
    # is a host name in a file name, and ckpt_<host> or <host>_step5 touch it with '_'.
    if prev == b"." or (prev and _is_alnum(prev[0])):
        return None
    if nxt[:1] == b"." and nxt[1:2].isalnum() and not _file_extension_follows(buf, end):
        return None
    if nxt[:1] == b"(":  # a call: threading.local()
        return None
    if host.split(b".", 1)[0] in _MODULE_HEADS or host in _LOOPBACK_NAMES or _is_public(host):
        return None
    labels = host.split(b".")
    if labels[-1] not in COMMON_TLDS and labels[-1] not in PRIVATE_TLDS:
        # Under any other suffix of the Public Suffix List (.it, .se, .kr, .tech), a name of
        # three labels or more, or one whose first label has a digit or '-': "loss.total"
        # or "cfg.name" is no machine
        if len(labels) < 3 and not (_has_digit(labels[0]) or b"-" in labels[0]):
            return None
        if any(b"_" in label for label in labels):
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


# What follows "on node" where a launcher left the name out: "... on node exited on signal 4"
# (mpirun, with an empty host name).
_NOT_ON_HOST = frozenset(
    b"exited failed crashed died terminated returned aborted killed stopped hung".split()
)


def validate_host_on(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end].lower()
    if value in _HOST_WORDS or value in _NOT_ON_HOST:
        return None
    return validate_host_value(buf, start, end, m)


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


def _is_alnum(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122


# acc@1, recall@10, pass@k, repo@v1.2, image@sha256:... are not user@host.
_NOT_AT_USERS = frozenset(
    b"acc top1 top5 top recall precision prec map ndcg mrr hit hits pass p r f1 auc ap ar "
    b"iou miou loss score metric metrics".split()
)
_NOT_AT_HOSTS = re.compile(
    rb"(?i)(?:sha\d*|md5|blake2b?|latest|main|master|head|step|epoch|iter|it|v\d|k\b|n\b)"
)
_USER_AT_BEFORE = frozenset(b" \t\"'([{=:,;<>|\n\r")
# ssh jdoe@host.corp..., scp, rsync: a login on a machine, not an e-mail address
_LOGIN_BEFORE = re.compile(
    rb"(?:^|[\s;&|(])(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id|autossh|pdsh)\b[^\n]{0,120}$"
)


# what every command _LOGIN_BEFORE names holds: where none is, it cannot match
_LOGIN_WORDS = (b"sh", b"scp", b"sftp", b"rsync")


def _login_context(buf: bytes, user_start: int, host_end: int) -> bool:
    """user@host.domain is a login, not an e-mail, after ssh/scp/rsync on its line or when a
    path follows (a shell prompt user@host.domain:~$, scp's user@host:/path)."""
    after = buf[host_end : host_end + 2]
    if after[:1] == b":" and after[1:2] in (b"~", b"/", b"$", b"#", b" ", b"\n", b""):
        return True
    line_start = buf.rfind(b"\n", max(0, user_start - 160), user_start) + 1
    before = buf[max(line_start, user_start - 160) : user_start]
    if not any(word in before for word in _LOGIN_WORDS):
        return False
    return _LOGIN_BEFORE.search(before) is not None


def validate_email(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # the user and the host of a login are two findings (user_at_host_*): the host keeps its
    # link with the same host elsewhere in the log
    if _login_context(buf, start, end) and b"@" in buf[start:end]:
        return None
    return "EMAIL_ADDRESS"


# user_at_host_user and _host read the same anchors (one pattern) with the same rules, one
# after the other: the last match judged (buffer, start, end, whether it is a login), kept
# until the next or until forget_verdicts (the buffer held, so no other can take its id). One
# tuple, replaced whole: a thread reads one judgement or another, never half of each.
_NO_LOGIN: tuple[bytes | None, int, int, bool] = (None, -1, -1, False)
_LAST_LOGIN = [_NO_LOGIN]


def validate_user_at_host(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    last = _LAST_LOGIN[0]
    if last[0] is buf and last[1] == m.start() and last[2] == m.end():
        login = last[3]
    else:
        login = _is_login(buf, m)
        _LAST_LOGIN[0] = (buf, m.start(), m.end(), login)
    if not login:
        return None
    return "HOSTNAME" if "h" not in m.re.groupindex else "USERNAME"


def _is_login(buf: bytes, m: re.Match[bytes]) -> bool:
    """The rules of ``validate_user_at_host``: a user and a host, not an e-mail address, a
    path or a decorator."""
    user_start = m.start()
    user = m.group("v" if "h" in m.re.groupindex else "u")
    host = m.group("h" if "h" in m.re.groupindex else "v")
    before = buf[user_start - 1 : user_start]
    if before and before[0] not in _USER_AT_BEFORE:
        return False  # github.com/org/repo@v1.2: a path, not a login
    if user.lower() in _NOT_AT_USERS or user.isdigit() or len(host) < 2:
        return False
    if _NOT_AT_HOSTS.match(host) or host.endswith(b"."):
        return False
    host_end = m.end("h" if "h" in m.re.groupindex else "v")
    after = buf[host_end : host_end + 2]
    if after[:1] == b"(" or (after[:1] == b"." and after[1:2].isalnum()):
        return False  # @decorator(...) or a dotted name
    # jdoe@acme.com: an e-mail address
    return b"." not in host or _login_context(buf, user_start, host_end)


def _is_key_char(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in (45, 95)  # 0-9 A-Z a-z - _


# A key name's bytes -> b"k", every other byte -> b" " (for _full_key's two C-level finds).
_KEY_RUN = bytes(107 if _is_key_char(c) else 32 for c in range(256))


def _full_key(buf: bytes, start: int) -> bytes:
    # The anchor starts at "token"/"password"; the variable around it may be longer
    # (HF_TOKEN, pad_token, --hf-token), and the whole name decides: the run of key-name
    # bytes around it, at most 64 on each side.
    lo = max(0, start - 64)
    i = lo + buf[lo:start].translate(_KEY_RUN).rfind(b" ") + 1
    after = buf[start : start + 64].translate(_KEY_RUN).find(b" ")
    j = min(len(buf), start + 64) if after == -1 else start + after
    return buf[i:j].lower().lstrip(b"-")


# Punctuation that a generated password or token holds and a name or a path does not.
_SECRET_SYMBOLS = b"!#$%*+;@^~?"
_SHA_BEFORE = re.compile(rb"(?i)(?:commit|sha\d*|rev(?:ision)?|hash|@)[\s:=]*$")
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


# $DB_PASSWORD, ${API_KEY}, %HF_TOKEN%, {password}, {{ token }}: references, not values. A
# name in one case only; %M5hqkSYg1vFoLf% (mixed case, digits) is a password.
_REFERENCE = re.compile(
    rb"(?:\$\{?|\$\(|%|\{\{?\s*)(?:[a-z_][a-z0-9_.]*|[A-Z_][A-Z0-9_.]*)(?:\}?|\)|%|\s*\}?\})"
)

_REFERENCE_FIRST = (b"$", b"%", b"{")


def is_placeholder(value: bytes) -> bool:
    low = value.lower().strip(b".")
    if not low or low in _PLACEHOLDER_VALUES or value.strip(b"*") == b"":
        return True
    if value.startswith(b"<") and value.endswith(b">"):
        return True
    # a reference opens with '$', '%' or '{' (the regular expression only for those)
    return value[:1] in _REFERENCE_FIRST and _REFERENCE.fullmatch(value) is not None


# Key names whose value is a secret when it is long and mixed; other names ending in "key"
# (or key_id) need a random-looking value.
_TOKEN_KEY = re.compile(
    rb"secret|token|api[_\-]?key|access|private|auth|signature|credential|creds|(?:^|[_\-.])sig$"
)
_HEX = b"0123456789abcdefABCDEF"


def _random_letters(value: bytes) -> bool:
    """ZfOlVdkYUBTnwCdkdBEtHxfm, not AutoTokenizerFast: the case flips every few letters."""
    if len(value) < 20 or not value.isalpha():
        return False
    flips = sum(1 for a, b in pairwise(value) if (a < 97) != (b < 97))
    return flips >= len(value) // 3


def _random_looking(value: bytes) -> bool:
    if len(value) >= 32 and not value.translate(None, _HEX):  # hex digits only
        return _has_digit(value) and _has_alpha(value)  # a key id, a hex key
    if len(value) < 16 or b"." in value:
        return False
    upper = bool(value.translate(None, _NOT_UPPER))
    lower = bool(value.translate(None, _NOT_LOWER))
    return upper and lower and _has_digit(value)


# validate_assignment's verdicts by (key name, value), its only inputs: a log prints the same
# settings again and again (every rank its environment). Emptied after each buffer's
# candidates are found (forget_verdicts), so that no value outlives its chunk here.
_ASSIGNMENT_VERDICTS: dict[tuple[bytes, bytes], str | None] = {}
_UNJUDGED = "unjudged"
_MAX_VERDICTS = 4096


def forget_verdicts() -> None:
    _ASSIGNMENT_VERDICTS.clear()
    _KEY_KINDS.clear()  # a key name is the run of name bytes around the word: it may hold more
    _LAST_LOGIN[0] = _NO_LOGIN


def validate_assignment(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    judged = (_full_key(buf, m.start()), buf[start:end])
    verdict = _ASSIGNMENT_VERDICTS.get(judged, _UNJUDGED)
    if verdict is _UNJUDGED:
        if len(_ASSIGNMENT_VERDICTS) >= _MAX_VERDICTS:  # a caller that never forgets them
            _ASSIGNMENT_VERDICTS.clear()
        verdict = _ASSIGNMENT_VERDICTS[judged] = _assignment_verdict(*judged)
    return verdict


# What a key name asks of its value (_key_kind): nothing (never a secret), three bytes (a
# password), a random look (a key name only), or a token's shape.
_NEVER, _PASSWORD, _RANDOM, _TOKEN = range(4)
# Key names judged, a buffer's (forget_verdicts): a log uses a few dozen.
_KEY_KINDS: dict[bytes, int] = {}


def _key_kind(key: bytes) -> int:
    kind = _KEY_KINDS.get(key)
    if kind is None:
        if key in _SPECIAL_TOKEN_KEYS or key.endswith((b"_token_id", b"tokens")):
            kind = _NEVER
        elif b"pass" in key or b"pwd" in key:
            kind = _PASSWORD
        else:
            kind = _TOKEN if _TOKEN_KEY.search(key) else _RANDOM
        if len(_KEY_KINDS) >= _MAX_VERDICTS:
            _KEY_KINDS.clear()
        _KEY_KINDS[key] = kind
    return kind


# After a key, a command-line option (-v, --verbose, -no-cache) or a negative number (-1,
# -0.53, -1.25e-3) is no value: the key's value is missing or the key is a setting.
_OPTION_OR_NUMBER = re.compile(rb"--?[a-z]+(?:-[a-z]+)*|-\d+(?:\.\d+)?(?:e[+\-]?\d+)?")


def _assignment_verdict(key: bytes, value: bytes) -> str | None:
    kind = _key_kind(key)
    if kind == _NEVER:
        return None
    if is_placeholder(value) or value.startswith(b"<"):
        return None
    dashed = value.startswith(b"-")
    if dashed and (
        _OPTION_OR_NUMBER.fullmatch(value) or not (_has_alpha(value) or _has_digit(value))
    ):
        return None  # an option, a negative number, or a rule of dashes (`secret: ---------`)
    if kind == _PASSWORD:
        return "SECRET" if len(value.strip()) >= 3 else None
    if kind == _RANDOM:
        # a key name only (AccountKey, private_key_id, ENCRYPTION_KEY; gitleaks' generic
        # rule): a random-looking value, not "cache_key: step_1200" or "sort_key=loss"
        return "SECRET" if _random_looking(value) else None
    # Tokens and keys are long and mixed; "token: 512", "secret=true" or the source line
    # "token = self.tokenizer.encode(x)" in a traceback are not secrets.
    if len(value) < 8 or b"(" in value or b"[" in value:
        return None
    if _IDENTIFIER.fullmatch(value) and not _has_digit(value) and not _random_letters(value):
        return None
    # a leading '-' that starts no option or number is a generated password's (-OGPvRimDQF)
    symbols = len(value) - len(value.translate(None, _SECRET_SYMBOLS)) + dashed
    if not (_has_alpha(value) and (_has_digit(value) or symbols)) and len(value) < 20:
        return None
    return "SECRET"


def validate_wandb_hex(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # "wandb: ... commit 499e357b...": a git SHA on a wandb line is not its API key.
    if _SHA_BEFORE.search(buf[max(0, start - 12) : start]):
        return None
    return "WANDB_API_KEY"


def validate_openai(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # sk-some-long-hyphenated-words is prose; real keys mix digits and letters.
    value = buf[start + 3 : end]
    if _has_digit(value) and _has_alpha(value):
        return "OPENAI_API_KEY"
    # letters only (sk-proj-AbCd…): one long run of both cases, not hyphenated words
    run = max(value.replace(b"_", b"-").split(b"-"), key=len)
    if len(run) >= 20 and run.lower() != run and run.upper() != run:
        return "OPENAI_API_KEY"
    return None


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
    digits = buf[start:end].translate(None, _NOT_DIGITS)
    if not 13 <= len(digits) <= 19 or not _luhn(digits):
        return None
    if buf[start - 1 : start] in (b".", b"=", b"x") or buf[end : end + 1] == b".":
        return None  # 0.1234567890123 or seed=..., not a card
    if buf[max(0, start - 8) : start].lower() == b"command-":
        return None  # a Databricks notebook frame: File <command-1234567890123456>
    # Issuer prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners): epoch timestamps in ms/ns
    # and random seeds rarely start like a card.
    if re.match(rb"4|5[1-5]|2[2-7]|3[47]|6011|65|64[4-9]|35|3[068]", digits):
        return "CREDIT_CARD"
    return None


def phone_bounds_ok(buf: bytes, start: int, end: int) -> bool:
    prev = buf[start - 1 : start]
    after = buf[end : end + 2]
    if prev.isalnum() or prev in (b".", b"e", b"E", b"-", b"+", b"=", b"/", b"_"):
        return False  # 3.0e+05 12 34: scientific notation; x=..., a/b: not a phone
    if after[:1].isalnum() or after[:1] == b"_":
        return False
    # 212-555-0143.5 or -7: a longer number
    return not (after[:1] in (b".", b"-", b"/", b":") and after[1:2].isdigit())


_PHONE_GROUP = re.compile(rb"[ .\-]?\(?\d+\)?")


def validate_phone(
    buf: bytes, start: int, end: int, m: re.Match[bytes]
) -> str | tuple[str, int] | None:
    # A number right after the phone joins its groups ("+86 132 0306 8554 140288"): keep the
    # groups while the digits fit E.164 (15), and report that shorter value.
    # The same when what follows the last group is no number ("+86 130 8423 0184 0x7f3a..."):
    # the longest run of whole groups, ended by a blank, that is bounded as a phone number.
    ndigits = 0
    cuts = []
    for group in _PHONE_GROUP.finditer(buf, start, end):
        digits = count_digits(group.group())
        if ndigits + digits > 15:
            break
        ndigits += digits
        cuts.append((group.end(), ndigits))
    for cut, n in reversed(cuts):
        if n < 8:
            break
        if cut < end and buf[cut : cut + 1] != b" ":
            continue  # only a blank separates two numbers
        if phone_bounds_ok(buf, start, cut):
            return "PHONE_NUMBER" if cut == end else ("PHONE_NUMBER", cut)
    return None


def validate_phone_nanp(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    if not phone_bounds_ok(buf, start, end):
        return None
    digits = buf[start:end].translate(None, _NOT_DIGITS)[-10:]
    # Area code and exchange start with 2-9 (NANP): 100-200-3000 is a range, not a number.
    if digits[0] < ord("2") or digits[3] < ord("2"):
        return None
    return "PHONE_NUMBER"
