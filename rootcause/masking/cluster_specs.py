"""The patterns of cluster and cloud logs (issue 33): provider tokens, Slurm, MAC addresses,
cloud accounts and projects, .netrc and command-line passwords, national phone numbers.

Same contract as ``patterns.py``: a Hyperscan anchor with an explicit terminator, a bounded
confirmation run with ``match()`` at the anchor's start (its group ``v``, or ``w`` for a quoted
value), and a validator for the look-alikes.
"""

from __future__ import annotations

import re

from rootcause.masking.spec import Spec
from rootcause.masking.starts import slurm_hostlist_start
from rootcause.masking.validators import (
    count_digits,
    is_placeholder,
    phone_bounds_ok,
    validate_host_value,
    validate_user,
)

_I = re.IGNORECASE
_SECRET_TAIL = rb"(?:[^A-Za-z0-9_\-]|$)"
_ALNUM_TAIL = rb"(?:[^A-Za-z0-9]|$)"
# A quoted value runs to its closing quote, whatever it holds (', %, [, *, a leading & or
# blank); an unquoted one to the first blank.
QUOTED_OR_WORD = rb"(?:(?P<q>[\"'])(?P<w>(?:(?!(?P=q))[^\n]){1,512})(?P=q)|(?P<v>[^\s\"']{1,512}))"


def _c(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    return re.compile(pattern, flags)


def validate_password(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    return None if len(value.strip()) < 3 or is_placeholder(value.strip()) else "SECRET"


def validate_hub_entity(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # a repository id names its owner before the '/': hub_model_id='mistral-sft' names none
    if not m.group().lower().startswith(b"wandb") and buf[end : end + 1] != b"/":
        return None
    return validate_user(buf, start, end, m)


def validate_mac(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end].lower()
    before, after = buf[start - 1 : start], buf[end : end + 1]
    # one group of a longer colon run (an IPv6 address, a fingerprint) is no MAC address
    if before in (b":", b"-") or after in (b":", b"-"):
        return None
    if value[2:3] != value[5:6]:
        return None  # separators mixed
    if value.replace(b":", b"").replace(b"-", b"") in (b"0" * 12, b"f" * 12):
        return None  # broadcast and unset say nothing of the machine
    return "MAC_ADDRESS"


def validate_nodelist(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    # node[012-015], h100n-[171-174,178]: a range in the brackets; x[0,1] is an index
    bracket = buf.index(b"[", start, end)
    inside = buf[bracket:end]
    # and a name of three characters or more: x[2-3] is a slice of some other language
    return "HOSTNAME" if bracket - start >= 3 and re.search(rb"\d-\d", inside) else None


def validate_account(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    return "CLOUD_ACCOUNT"


def validate_project(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    value = buf[start:end]
    if value.startswith((b"$", b"<", b"{")) or is_placeholder(value):
        return None
    return "CLOUD_ACCOUNT"


def validate_phone_national(buf: bytes, start: int, end: int, m: re.Match[bytes]) -> str | None:
    if not phone_bounds_ok(buf, start, end):
        return None
    before = buf[max(0, start - 2) : start]
    if before.endswith((b": ", b"= ")) and buf[start - 3 : start - 2].isdigit():
        return None  # a column of figures, not a number to call
    digits = count_digits(buf[start:end])
    return "PHONE_NUMBER" if 10 <= digits <= 11 else None


_SQUEUE_STATE = rb"(?:R|PD|CG|CD|CF|F|CA|TO|NF|S|ST|PR|RQ|RS|RV|SE|SO|OOM|DL|BF)"
_SQUEUE_HEAD = rb"[ \t]*\d+(?:_\d+|_\[[^\]\s]*\])?[ \t]+[^\s]+[ \t]+[^\s]+[ \t]+"
_NODES = rb"[A-Za-z][A-Za-z0-9.\-_\[\],]*[A-Za-z0-9\]]"
_GCP_PROJECT = rb"[a-z][a-z0-9\-]{4,28}[a-z0-9]"

CLUSTER_SPECS: tuple[Spec, ...] = (
    Spec(
        "gitlab_token",
        "GITLAB_TOKEN",
        rb"gl(?:pat|dt|ptt|rt|cbt|ft|oas)-[A-Za-z0-9_\-]{20,}" + _SECRET_TAIL,
        _c(rb"(?P<v>gl(?:pat|dt|ptt|rt|cbt|ft|oas)-[A-Za-z0-9_\-]{20,})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "npm_token",
        "NPM_TOKEN",
        rb"npm_[A-Za-z0-9]{36}" + _ALNUM_TAIL,
        _c(rb"(?P<v>npm_[A-Za-z0-9]{36})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        "google_api_key",
        "GOOGLE_API_KEY",
        rb"AIza[0-9A-Za-z_\-]{35}" + _SECRET_TAIL,
        _c(rb"(?P<v>AIza[0-9A-Za-z_\-]{35})"),
        1,
        multiline=True,
        word=True,
    ),
    Spec(
        # hooks.slack.com/services/T…/B…/…: the host is public, the path is the secret
        "slack_webhook",
        "SECRET",
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9]{6,}/",
        _c(
            rb"hooks\.slack\.com/(?:services|workflows|triggers)/"
            rb"(?P<v>[A-Za-z0-9]{6,}/[A-Za-z0-9/]{6,}[A-Za-z0-9])"
        ),
        3,
    ),
    Spec(
        # .netrc: "  password s3cr3t" alone on its line, or "machine … login … password …"
        "netrc_line",
        "SECRET",
        rb"^[ \t]*password[ \t]+[^\s]",
        _c(rb"[ \t]*password[ \t]+(?P<v>[^\s]{1,512})[ \t]*\r?$"),
        4,
        validate_password,
        multiline=True,
    ),
    Spec(
        "netrc_inline",
        "SECRET",
        rb"\blogin[ \t]+[^\s]+[ \t]+password[ \t]+[^\s]",
        _c(rb"login[ \t]+[^\s]+[ \t]+password[ \t]+(?P<v>[^\s]{1,512})"),
        4,
        validate_password,
    ),
    Spec(
        # redis-cli -a '…', mysql -p'…' after the command's name on the same line
        "cli_password",
        "SECRET",
        rb"\b(?:redis-cli[^\n]*[ \t]-a|mysql[^\n]*[ \t]-p)[ \t]*[^\s]",
        _c(rb"(?:redis-cli[^\n]{0,200}?[ \t]-a[ \t]+|mysql[^\n]{0,200}?[ \t]-p)" + QUOTED_OR_WORD),
        4,
        validate_password,
    ),
    Spec(
        "mac_address",
        "MAC_ADDRESS",
        rb"[0-9a-f]{2}(?:[:\-][0-9a-f]{2}){5}",
        _c(rb"(?P<v>[0-9a-f]{2}(?:[:\-][0-9a-f]{2}){5})", _I),
        9,
        validate_mac,
        caseless=True,
        word=True,
    ),
    Spec(
        # Slurm's host lists anywhere: node[012-015], h100n-[171-174,178]
        "slurm_hostlist",
        "HOSTNAME",
        rb"[A-Za-z][A-Za-z0-9\-]*\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\]",
        _c(rb"(?P<v>[A-Za-z][A-Za-z0-9\-]{0,40}\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\])"),
        8,
        validate_nodelist,
        word=True,
        start=slurm_hostlist_start,
    ),
    Spec(
        # scontrol show job: NodeList=, BatchHost=, AllocNode:Sid=host:pid
        "scontrol_host",
        "HOSTNAME",
        rb"\b(?:(?:req|exc|sched)?nodelist|batchhost|allocnode:sid|nodename)=[A-Za-z]",
        _c(rb"[a-z:]+=(?P<v>" + _NODES + rb")", _I),
        8,
        validate_host_value,
        caseless=True,
    ),
    Spec(
        "scontrol_user",
        "USERNAME",
        rb"\bUserId=[A-Za-z_]",
        _c(rb"UserId=(?P<v>[A-Za-z_][A-Za-z0-9._\-]{0,63})"),
        7,
        validate_user,
    ),
    Spec(
        # squeue: JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)
        "squeue_user",
        "USERNAME",
        rb"^" + _SQUEUE_HEAD + rb"[A-Za-z_][A-Za-z0-9._\-]*[ \t]+" + _SQUEUE_STATE + rb"[ \t]",
        _c(_SQUEUE_HEAD + rb"(?P<v>[A-Za-z_][A-Za-z0-9._\-]*)[ \t]+" + _SQUEUE_STATE + rb"[ \t]"),
        7,
        validate_user,
        multiline=True,
    ),
    Spec(
        "squeue_nodes",
        "HOSTNAME",
        rb"^" + _SQUEUE_HEAD + rb"[^\s]+[ \t]+" + _SQUEUE_STATE + rb"[ \t]+[0-9:\-]+[ \t]+\d+[ \t]+"
        rb"[A-Za-z]",
        _c(
            _SQUEUE_HEAD + rb"[^\s]+[ \t]+" + _SQUEUE_STATE + rb"[ \t]+[0-9:\-]+[ \t]+\d+[ \t]+"
            rb"(?P<v>" + _NODES + rb")"
        ),
        8,
        validate_host_value,
        multiline=True,
    ),
    Spec(
        # arn:aws:iam::721405572997:role/…
        "aws_arn_account",
        "CLOUD_ACCOUNT",
        rb"\barn:aws[a-z\-]*:[a-z0-9\-]*:[a-z0-9\-]*:\d{12}:",
        _c(rb"arn:aws[a-z\-]*:[a-z0-9\-]*:[a-z0-9\-]*:(?P<v>\d{12}):"),
        6,
        validate_account,
    ),
    Spec(
        # s3://ml-ckpt-721405572997-us-east-1/, 721405572997.dkr.ecr…, AWS_ACCOUNT_ID=…
        "aws_account",
        "CLOUD_ACCOUNT",
        rb"(?:\b(?:s3a?|s3n)://[a-z0-9.\-]*|\baccount(?:[_\-]?id)?[\"']?[ \t]*[:=][ \t]*[\"']?)"
        rb"\d{12}(?:[^0-9]|$)|\b\d{12}\.dkr\.ecr\.",
        _c(
            rb"(?:(?:s3a?|s3n)://(?:[a-z0-9.\-]{0,50}?[.\-])?|account(?:[_\-]?id)?[\"']?[ \t]*"
            rb"[:=][ \t]*[\"']?)?(?P<v>\d{12})(?![0-9])",
            _I,
        ),
        6,
        validate_account,
        caseless=True,
    ),
    Spec(
        # projects/<id>/, --project <id>, gsutil -u <id>, GOOGLE_CLOUD_PROJECT=<id>
        "gcp_project",
        "CLOUD_ACCOUNT",
        rb"(?:\bprojects/|--project[= ]|\bgsutil[^\n]*[ \t]-u[ \t]+|\bset project[ \t]+|"
        rb"\b(?:GOOGLE_CLOUD_PROJECT|GCLOUD_PROJECT|CLOUDSDK_CORE_PROJECT|GCP_PROJECT)=)"
        rb"[a-z][a-z0-9\-]+[a-z0-9](?:[^a-z0-9\-]|$)",
        _c(
            rb"(?:projects/|--project[= ]|gsutil[^\n]{0,40}?[ \t]-u[ \t]+|set project[ \t]+|"
            rb"[A-Z_]+=)(?P<v>" + _GCP_PROJECT + rb")(?![a-z0-9\-])"
        ),
        6,
        validate_project,
    ),
    Spec(
        # gs://ml-research-418203-checkpoints: a generated project id (name-NNNNNN) heading a
        # bucket's name
        "gcp_project_bucket",
        "CLOUD_ACCOUNT",
        rb"\bgs://[a-z][a-z0-9\-]+-\d{6}[\-./_]",
        _c(rb"gs://(?P<v>[a-z][a-z0-9\-]{3,28}-\d{6})(?=[\-./_])"),
        6,
        validate_project,
    ),
    Spec(
        # 06 39 98 19 97 (France), 020 7946 0393 / 07700 900123 (UK): a leading 0, national
        # groups; no phone word needed, the shape is the evidence
        "phone_national",
        "PHONE_NUMBER",
        rb"\b0[1-9](?:(?:[ .]\d\d){4}|\d{1,3} \d{3,4} \d{3,4}|\d{3} \d{6})\b",
        _c(rb"(?P<v>0[1-9](?:(?:[ .]\d\d){4}|\d{1,3} \d{3,4} \d{3,4}|\d{3} \d{6}))"),
        11,
        validate_phone_national,
        context=3,
    ),
    Spec(
        # W&B and Hugging Face entities a person pushes to: WANDB_ENTITY=, --wandb_entity,
        # hub_model_id='<user>/…', "Pushing to https://huggingface.co/<user>/…"
        "hub_entity",
        "USERNAME",
        rb"(?:\b(?:WANDB_ENTITY=|wandb_entity[\"']?[ \t]*[=: ][ \t]*[\"']?|"
        rb"hub_model_id[\"']?[ \t]*[=:][ \t]*[\"']?)|"
        rb"\b(?:push(?:ing|ed)?|upload(?:ing|ed)?)[^\n]{0,40}huggingface\.co/)[A-Za-z0-9]",
        _c(
            rb"(?:WANDB_ENTITY=|wandb_entity[\"']?[ \t]*[=: ][ \t]*[\"']?|"
            rb"hub_model_id[\"']?[ \t]*[=:][ \t]*[\"']?|"
            rb"(?:push(?:ing|ed)?|upload(?:ing|ed)?)[^\n]{0,40}?huggingface\.co/)"
            rb"(?P<v>[A-Za-z0-9][A-Za-z0-9_.\-]{0,63})(?:/|[\"'\s,)]|$)",
            _I,
        ),
        7,
        validate_hub_entity,
        caseless=True,
    ),
)
