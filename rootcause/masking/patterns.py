"""The masking patterns: a Hyperscan anchor, a Python confirmation and a validator for each.

Every Hyperscan expression ends in an explicit terminator (``\\b``, a consumed delimiter or a
fixed-length tail) so that one occurrence reports one or a few ends, never one per character of
an open-ended repetition. Hyperscan only finds *where* something may be; the bounded Python
``confirm`` regex, run with ``match()`` at the reported start on the rest of that line, decides
what exactly is replaced (its group ``v``), and ``validate`` rejects the look-alikes logs are full
of (version strings, loopback addresses, Python module paths, step counters).
"""

from __future__ import annotations

import re

from rootcause.masking.cluster_specs import CLUSTER_SPECS
from rootcause.masking.spec import Spec
from rootcause.masking.starts import email_start, nccl_prefix_start, user_at_host_start
from rootcause.masking.suffixes import host_tlds
from rootcause.masking.validators import (
    validate_assignment,
    validate_card,
    validate_email,
    validate_fqdn,
    validate_host_on,
    validate_host_value,
    validate_host_word,
    validate_ipv4,
    validate_ipv6,
    validate_line_prefix_host,
    validate_openai,
    validate_phone,
    validate_phone_nanp,
    validate_user,
    validate_user_at_host,
    validate_wandb_hex,
)

# Entity types whose identity matters inside one log get numbered pseudonyms (<HOST_1>);
# everything else is replaced by a fixed token.
PSEUDONYM_PREFIX = {
    "HOSTNAME": "HOST",
    "IP_ADDRESS": "IP",
    "EMAIL_ADDRESS": "EMAIL",
    "MAC_ADDRESS": "MAC",
    "CLOUD_ACCOUNT": "ACCOUNT",
}
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
    "GITLAB_TOKEN": "<GITLAB_TOKEN>",
    "NPM_TOKEN": "<NPM_TOKEN>",
    "GOOGLE_API_KEY": "<GOOGLE_API_KEY>",
    "JWT": "<JWT>",
    "PRIVATE_KEY": "<PRIVATE_KEY>",
    "URL_CREDENTIALS": "<URL_CREDENTIALS>",
    "SECRET": "<SECRET>",
    "PHONE_NUMBER": "<PHONE>",
    "CREDIT_CARD": "<CREDIT_CARD>",
}
ENTITIES = sorted([*PSEUDONYM_PREFIX, *FIXED_TOKEN])


def _c(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    return re.compile(pattern, flags)


_SECRET_TAIL = rb"(?:[^A-Za-z0-9_\-]|$)"  # terminator for tokens that may contain '-'
_ALNUM_TAIL = rb"(?:[^A-Za-z0-9]|$)"  # terminator for alphanumeric tokens ('_' ends them)
# Full form, or with '::' anywhere; ipaddress has the last word on group counts.
_IPV6 = (
    rb"(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|"
    rb"(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?"
)
_HOST_TLDS = b"|".join(host_tlds())

_I = re.IGNORECASE
# SLURM_JOB_USER=jdoe, SLURM_JOB_USER = jdoe, 'SLURM_JOB_USER': 'jdoe'; not "USER: hi" (a chat
# template's turn)
_USER_SEP = rb"(?:=|[ \t]+=[ \t]+|[\"'][ \t]*:[ \t]*)"
# A date glued to a value ends it (jdoe@acme.com2026-12-01 03:10:00): 2026-12-01.
_DATE = rb"(?:19|20)\d\d-[01]\d-[0-3]\d"
# The assignment patterns (key = value, key: value, Bearer value) take blanks with [ \t]*, not
# \s*: a line ending in "password=" or "host :" must not make the next line's first word its
# value.

# key = value: the value's byte class is %s (a connection string's ';' opening its next
# "Name=" ends the value: AccountKey=…==;EndpointSuffix=…; see Spec.plain).
_ASSIGNMENT = (
    rb"(?:passw(?:or)?d|passphrase|pwd|secret|token|key(?:[_\-]?id)?|auth|sig|signature|"
    rb"credentials?|creds)[\"']?[ \t]*[:=][ \t]*"
    # A quoted value runs to its closing quote (a password may hold ',', ';', '}' or the other
    # quote); an unquoted one to the first delimiter. (The quote chosen by a group the rest
    # tests: a class matched in C, not a look-ahead a byte.)
    rb"(?:(?:(?P<dq>\")|')(?P<w>(?(dq)[^\"\n]{1,512}|[^'\n]{1,512}))(?(dq)\"|')|"
    # unquoted: to the next blank, less a trailing delimiter (password=a;b!c, x)
    rb"[\"']?(?P<v>%s{0,511}[^\s\"'&,;)}\]]))"
)
# +49 30 90182063, +1 (415) 555-0199, +33 1 42 68 53 00: a country code, then groups.
# +44 (0)20 7946 0393: the trunk prefix in parentheses, the area code glued to it.
_PHONE_INTL = rb"\+[1-9]\d{0,2}(?:[ .\-]?\(\d{1,4}\)\d{0,4}|[ .\-]\d{1,5})(?:[ .\-]\d{1,8}){1,4}"
_USER_AT = rb"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,31}"
_AT_HOST = rb"[A-Za-z][A-Za-z0-9\-]{0,62}(?:\.[A-Za-z0-9\-]{1,63}){0,8}"
# (the anchor's user part unbounded: bounded on both sides of the '@' it does not compile)
_USER_AT_HOST_HS = (
    rb"[A-Za-z0-9_][A-Za-z0-9_.\-]*@[A-Za-z][A-Za-z0-9\-]*(?:\.[A-Za-z0-9\-]+)*"
    rb"(?:[^A-Za-z0-9\-.]|$)"
)

SPECS: tuple[Spec, ...] = (
    Spec(
        "hf_token",
        "HF_TOKEN",
        rb"(?:hf|api_org)_[A-Za-z0-9]{30,}" + _ALNUM_TAIL,
        _c(rb"(?P<v>(?:hf|api_org)_[A-Za-z0-9]{30,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "wandb_v1",
        "WANDB_API_KEY",
        rb"wandb_v1_[A-Za-z0-9_]{20,}(?:[^A-Za-z0-9_]|$)",
        _c(rb"(?P<v>wandb_v1_[A-Za-z0-9_]{20,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "wandb_hex",
        "WANDB_API_KEY",
        rb"wandb[^\n]{0,80}\b[0-9a-f]{40}\b",
        _c(rb"wandb[^\n]{0,80}?\b(?P<v>[0-9a-f]{40})\b", _I),
        1,
        validate_wandb_hex,
        context=12,
        caseless=True,
    ),
    Spec(
        "aws_access_key",
        "AWS_ACCESS_KEY",
        rb"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}",
        _c(rb"(?P<v>[A-Z0-9]{20})"),
        1,
        word=True,
    ),
    Spec(
        "aws_secret_key",
        "AWS_SECRET_KEY",
        rb"aws_?secret_?(?:access_?)?key[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z0-9/+]",
        _c(
            rb"aws_?secret_?(?:access_?)?key[\"']?[ \t]*[:=][ \t]*[\"']?"
            rb"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
            _I,
        ),
        1,
        caseless=True,
    ),
    Spec(
        "github_token",
        "GITHUB_TOKEN",
        rb"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}" + _ALNUM_TAIL + rb"|"
        rb"github_pat_[A-Za-z0-9_]{22,}(?:[^A-Za-z0-9_]|$))",
        _c(rb"(?P<v>(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "anthropic_key",
        "ANTHROPIC_API_KEY",
        rb"sk-ant-[A-Za-z0-9_\-]{20,}" + _SECRET_TAIL,
        _c(rb"(?P<v>sk-ant-[A-Za-z0-9_\-]{20,})"),
        0,
        multiline=True,
        word=True,
    ),
    Spec(
        "openai_key",
        "OPENAI_API_KEY",
        rb"sk-[A-Za-z0-9_\-]{20,}" + _SECRET_TAIL,
        _c(rb"(?P<v>sk-[A-Za-z0-9_\-]{20,})"),
        1,
        validate_openai,
        multiline=True,
        word=True,
    ),
    Spec(
        "slack_token",
        "SLACK_TOKEN",
        rb"(?:xox[abpr]|xapp)-[A-Za-z0-9\-]{10,}(?:[^A-Za-z0-9\-]|$)",
        _c(rb"(?P<v>(?:xox[abpr]|xapp)-[A-Za-z0-9\-]{10,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "stripe_key",
        "STRIPE_KEY",
        rb"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})" + _ALNUM_TAIL,
        _c(rb"(?P<v>(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "ngc_key",
        "NGC_API_KEY",
        rb"nvapi-[A-Za-z0-9_\-]{30,}" + _SECRET_TAIL,
        _c(rb"(?P<v>nvapi-[A-Za-z0-9_\-]{30,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "jwt",
        "JWT",
        rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _SECRET_TAIL,
        _c(rb"(?P<v>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "bearer",
        "SECRET",
        rb"\bbearer[ \t]+[A-Za-z0-9._~+/=\-]{16}",
        _c(rb"bearer[ \t]+(?P<v>[A-Za-z0-9._~+/=\-]{16,})", _I),
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
        rb"(?:passw(?:or)?d|passphrase|pwd|secret|token|key(?:[_\-]?id)?|auth|sig|signature|"
        rb"credentials?|creds)"
        rb"[\"']?[ \t]*[:=][ \t]*(?:[\"'][^\"'\n<]|[^\s\"'<])",
        _c(_ASSIGNMENT % rb"(?:[^\s\"'&;]|;(?![A-Za-z][A-Za-z0-9]{0,39}=))", _I),
        5,
        validate_assignment,
        context=64,
        caseless=True,
        plain=_c(_ASSIGNMENT % rb"[^\s\"'&]", _I),
    ),
    Spec(
        "cli_secret_flag",
        "SECRET",
        # a value may start with one '-' (--api-key -Rd8JbZ1b*@A5I); --token --verbose is two
        # options, and the validator leaves an option or a negative number (--token -1)
        rb"--[a-z_\-]*(?:password|token|api[_\-]?key|secret)[ =]"
        rb"(?:[\"'][^\"'\n<]|[^\s\"'<\-]|-[^\s\"'<\-])",
        _c(
            rb"--[a-z_\-]*(?:password|token|api[_\-]?key|secret)[ =]"
            rb"(?:(?P<q>[\"'])(?P<w>(?:(?!(?P=q))[^\n]){1,512})(?P=q)|"
            rb"[\"']?(?P<v>[^\s\"'&]{0,511}[^\s\"'&,;)}\]]))",
            _I,
        ),
        5,
        validate_assignment,
        context=64,
        caseless=True,
    ),
    Spec(
        # ssh jdoe@gpu-node-17, jdoe@buildbox:~$: the user and the host are two findings; a
        # user@host.domain is an e-mail address (longer, so it wins).
        "user_at_host_user",
        "USERNAME",
        _USER_AT_HOST_HS,
        _c(rb"(?P<v>" + _USER_AT + rb")@(?P<h>" + _AT_HOST + rb")"),
        7,
        validate_user_at_host,
        context=161,
        start=user_at_host_start,
    ),
    Spec(
        "user_at_host_host",
        "HOSTNAME",
        _USER_AT_HOST_HS,
        _c(rb"(?P<u>" + _USER_AT + rb")@(?P<v>" + _AT_HOST + rb")"),
        8,
        validate_user_at_host,
        context=161,
        start=user_at_host_start,
    ),
    Spec(
        "cloud_ip_host",
        "HOSTNAME",
        rb"ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}",
        _c(rb"(?P<v>ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})"),
        8,
        word=True,
    ),
    Spec(
        "email",
        "EMAIL_ADDRESS",
        rb"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}"
        rb"(?:[^A-Za-z0-9]|$|" + _DATE + rb")",
        # a date glued to the address ends it too (jdoe@acme.com2026-12-01 03:10:00)
        _c(
            rb"(?P<v>[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,24})"
            rb"(?:(?![A-Za-z0-9])|(?=" + _DATE + rb"))"
        ),
        6,
        validate_email,
        context=161,
        multiline=True,
        start=email_start,
    ),
    Spec(
        "home_path_user",
        "USERNAME",
        rb"/(?:home|Users)/[^/\\\s\"'<>:;,()\[\]]{1,64}(?:[/\\\s\"'<>:;,()\[\]]|$)",
        _c(rb"/(?:home|Users)/(?P<v>[^/\\\s\"'<>:;,()\[\]]{1,64})"),
        7,
        validate_user,
    ),
    Spec(
        "windows_home_user",
        "USERNAME",
        rb"\b[a-z]:(?:\\\\?)Users(?:\\\\?)[^\\/\s\"'<>:]{1,64}(?:[\\/\s\"'<>:]|$)",
        _c(rb"[a-z]:\\\\?Users\\\\?(?P<v>[^\\/\s\"'<>:]{1,64})", _I),
        7,
        validate_user,
        caseless=True,
    ),
    Spec(
        "wandb_login",
        "USERNAME",
        rb"logged in as:? [A-Za-z0-9_]",
        _c(rb"logged in as:? (?P<v>[A-Za-z0-9_][A-Za-z0-9_.\-]*(?: \([A-Za-z0-9_.\-]+\))?)"),
        7,
        validate_user,
    ),
    Spec(
        "wandb_entity_url",
        "USERNAME",
        rb"\bwandb\.ai/[A-Za-z0-9_]",
        _c(rb"wandb\.ai/(?P<v>[A-Za-z0-9_][A-Za-z0-9_.\-]*)"),
        7,
        validate_user,
        caseless=True,
    ),
    Spec(
        "user_variable",
        "USERNAME",
        rb"\b[A-Z_]*(?:USER|USERNAME|LOGNAME|USER_NAME)" + _USER_SEP + rb"[\"']?[A-Za-z_]",
        _c(
            rb"[A-Z_]*(?:USER|USERNAME|LOGNAME|USER_NAME)" + _USER_SEP + rb"[\"']?"
            rb"(?P<v>[A-Za-z_][A-Za-z0-9._\-]{0,63})"
        ),
        7,
        validate_user,
    ),
    Spec(
        "host_assignment",
        "HOSTNAME",
        rb"\b(?:hostname|host|master_addr|slurmd_nodename|nodename|node_name|hostaddr)"
        rb"[\"']?[ \t]*[=:][ \t]*[\"']?[A-Za-z0-9]",
        _c(
            rb"[a-z_]+[\"']?[ \t]*[=:][ \t]*[\"']?"
            rb"(?P<v>[A-Za-z0-9][A-Za-z0-9.\-_]*[A-Za-z0-9]|[A-Za-z])",
            _I,
        ),
        8,
        validate_host_value,
        caseless=True,
    ),
    Spec(
        "host_on",
        "HOSTNAME",
        rb"\bon (?:host|node|machine) [A-Za-z0-9]",
        _c(rb"on (?:host|node|machine) (?P<v>[A-Za-z0-9][A-Za-z0-9.\-_]*[A-Za-z0-9])", _I),
        8,
        validate_host_on,
        caseless=True,
    ),
    Spec(
        "host_word",
        "HOSTNAME",
        rb"\bhost [A-Za-z][A-Za-z0-9._\-]*(?:[\s,|;)]|$)",
        _c(rb"host (?P<v>[A-Za-z][A-Za-z0-9._\-]*[A-Za-z0-9]|[A-Za-z])"),
        8,
        validate_host_word,
        multiline=True,
    ),
    Spec(
        "host_dict_key",
        "HOSTNAME",
        rb"'[A-Za-z][A-Za-z0-9._\-]*': \[\d",
        _c(rb"'(?P<v>[A-Za-z][A-Za-z0-9._\-]*)': \[\d"),
        8,
        validate_host_word,
    ),
    Spec(
        "slurm_nodelist",
        "HOSTNAME",
        rb"\b(?:SLURM_JOB_NODELIST|SLURM_NODELIST|SLURM_STEP_NODELIST|NODELIST)=[A-Za-z0-9]",
        _c(rb"[A-Z_]*NODELIST=(?P<v>[A-Za-z0-9][A-Za-z0-9.\-_\[\],]*[A-Za-z0-9\]])"),
        8,
        validate_host_value,
    ),
    Spec(
        "nccl_prefix",
        "HOSTNAME",
        rb"\b[A-Za-z][A-Za-z0-9._\-]*:\d+:\d+ \[\d+\]",
        _c(rb"(?P<v>[A-Za-z][A-Za-z0-9._\-]*):\d+:\d+ \[\d+\]"),
        8,
        validate_host_value,
        start=nccl_prefix_start,
    ),
    Spec(
        "bracket_host_port",
        "HOSTNAME",
        rb"\[[A-Za-z][A-Za-z0-9._\-]*\]:\d",
        _c(rb"\[(?P<v>[A-Za-z][A-Za-z0-9._\-]*)\]:\d"),
        8,
        validate_host_value,
    ),
    Spec(
        "line_prefix_host",
        "HOSTNAME",
        rb"^[a-z][a-z0-9]*(?:[.\-][a-z0-9]+)+: ",
        _c(rb"(?P<v>[a-z][a-z0-9]*(?:[.\-][a-z0-9]+)+): "),
        8,
        validate_line_prefix_host,
        multiline=True,
    ),
    Spec(
        "ipv4",
        "IP_ADDRESS",
        rb"(?:\d{1,3}\.){3}\d{1,3}",
        _c(rb"(?P<v>(?:\d{1,3}\.){3}\d{1,3})"),
        9,
        validate_ipv4,
        context=24,
        context_crosses_lines=True,
    ),
    Spec(
        "ipv6",
        "IP_ADDRESS",
        _IPV6,
        _c(rb"(?P<v>" + _IPV6 + rb")(?![0-9a-f:])", _I),
        9,
        validate_ipv6,
        context=17,
        context_crosses_lines=True,
        caseless=True,
    ),
    Spec(
        # NCCL's "Using ib0:fe80::1%ib0<0>": the interface name runs into the address.
        "interface_ipv6",
        "IP_ADDRESS",
        rb"\b[a-z][a-z0-9]{0,15}:(?:" + _IPV6 + rb")",
        _c(rb"[a-z][a-z0-9]{0,15}:(?P<v>" + _IPV6 + rb")(?![0-9a-f:])", _I),
        9,
        validate_ipv6,
        context=17,
        context_crosses_lines=True,
        caseless=True,
    ),
    Spec(
        # Under a suffix of the Public Suffix List (suffixes.py): found by its end, the start
        # searched back from there
        "fqdn",
        "HOSTNAME",
        rb"[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)*\.(?:" + _HOST_TLDS + rb")(?:[^a-z0-9]|$)",
        _c(rb"(?P<v>[a-z0-9][a-z0-9\-]*(?:\.[a-z0-9\-]+)+)$", _I),  # matched to the end
        10,
        validate_fqdn,
        caseless=True,
        multiline=True,
        som=False,
    ),
    Spec(
        "phone_international",
        "PHONE_NUMBER",
        _PHONE_INTL,
        _c(rb"(?P<v>" + _PHONE_INTL + rb")"),
        11,
        validate_phone,
    ),
    Spec(
        # (212) 555-0143, 650.555.0129, 212-555-0143, 1-800-555-0199: the North American
        # shapes with a separator before the last four digits; spaces alone are not enough
        # (numpy prints "[212 555 1043]").
        "phone_nanp",
        "PHONE_NUMBER",
        rb"(?:1[ .\-])?(?:\(\d{3}\) ?\d{3}[ .\-]|\d{3}[.\-]\d{3}[.\-])\d{4}",
        _c(rb"(?P<v>(?:1[ .\-])?(?:\(\d{3}\) ?\d{3}[ .\-]|\d{3}(?P<s>[.\-])\d{3}(?P=s))\d{4})"),
        11,
        validate_phone_nanp,
    ),
    Spec(
        "phone_context",
        "PHONE_NUMBER",
        rb"\b(?:phone|tel|mobile|cell)\b[^\d\n]{0,12}\+?\(?\d[\d ().\-]{6,18}\d\b",
        _c(rb"(?:phone|tel|mobile|cell)\b[^\d\n]{0,12}(?P<v>\+?\(?\d[\d ().\-]{6,18}\d)\b", _I),
        11,
        validate_phone,
        caseless=True,
    ),
    Spec(
        "credit_card",
        "CREDIT_CARD",
        rb"\b(?:(?:\d{4}[ \-]){3}\d{1,7}|\d{4}[ \-]\d{6}[ \-]\d{4,5}|\d{13,19})\b",
        _c(rb"(?P<v>(?:\d{4}[ \-]){3}\d{1,7}|\d{4}[ \-]\d{6}[ \-]\d{4,5}|\d{13,19})\b"),
        12,
        validate_card,
        context=8,
    ),
    *CLUSTER_SPECS,
)

# Private key blocks span lines and are handled by the masker with state across chunks.
PRIVATE_KEY_BEGIN = re.compile(rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_END = re.compile(rb"-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_HS = rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
