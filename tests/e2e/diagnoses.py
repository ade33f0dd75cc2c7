"""What the end-to-end tests of the pipeline share: a log big enough that a stage takes seconds,
waiting for a diagnosis to reach a status, and everything stored, to look for a secret in."""

from __future__ import annotations

import time
from typing import Any, cast

from django.db import connection

from diagnosis.models import Diagnosis
from tests import redis_namespace
from tests.diagnosis.logs import OOM_LOG


def big_log(megabytes: int) -> bytes:
    """`megabytes` of training steps dense with a user name and a host, then the OOM."""
    line = (
        "[rank0]: step {i} loss 2.{i:04d} lr 3.0e-04 grad_norm 1.02 tokens/s 51234 "
        "ckpt /home/janedoe/runs/exp/step_{i}.pt host gpu-node-17.contoso-research.com\n"
    )
    lines, size, i = [], 0, 0
    while size < megabytes * 1024 * 1024:
        text = line.format(i=i)
        lines.append(text)
        size += len(text)
        i += 1
    return ("".join(lines) + OOM_LOG).encode()


def wait_for_status(diagnosis_id: str, until: tuple[str, ...], timeout: float = 90) -> Diagnosis:
    """The diagnosis once its status is one of `until`; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        diagnosis = Diagnosis.objects.get(id=diagnosis_id)
        if diagnosis.status in until:
            return diagnosis
        time.sleep(0.05)
    raise AssertionError(f"diagnosis still {diagnosis.status} after {timeout} s")


def all_database_text() -> str:
    """Every row of every table of the test database, as text."""
    chunks: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # noqa: S608  (names from the catalog)
            chunks.extend(row[0] for row in cursor.fetchall())
    return "\n".join(chunks)


def all_redis_bytes() -> bytes:
    """Every key of this run and its value; other runs on the machine hold their own raw logs."""
    client = redis_namespace.client()
    values: list[Any] = []
    for key in redis_namespace.run_keys(client):
        kind = client.type(key)
        if kind == b"string":
            values.append(client.get(key) or b"")
        elif kind == b"list":
            values.extend(cast(list[bytes], client.lrange(key, 0, -1)))
        elif kind == b"hash":
            fields = cast("dict[bytes, bytes]", client.hgetall(cast(str, key)))
            values.extend(v for kv in fields.items() for v in kv)
        elif kind == b"set":
            values.extend(cast(set[bytes], client.smembers(key)))
        elif kind == b"zset":
            values.extend(cast(list[bytes], client.zrange(key, 0, -1)))
        values.append(key)
    return b"\n".join(values)
