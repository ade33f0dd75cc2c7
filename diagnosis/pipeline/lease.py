"""A stage's lease while its worker works: renewed by a heartbeat, checked between chunks.

A claim holds a stage for DIAGNOSIS_STAGE_LEASE_SECONDS (30 s by default). While the stage
runs, one heartbeat thread per worker process renews every lease its process holds, a third of
a lease apart, each with a compare-and-set on the lease's token (`lifecycle.renew_lease`): a
worker that is alive keeps its stage however long the stage takes, and a worker that died
(SIGKILL, an OOM kill: the thread dies with it) leaves a lease that expires within a lease, for
the stuck-diagnosis sweeper to re-queue (DIAGNOSIS_SWEEP_SECONDS, 10 s): taken over within 40 s.

No stage runs twice at once. A new holder can only claim a stage once its lease has expired in
the row, and the old holder stops before that:

- its `check()` (which the runners call between chunks of their work, before each write) raises
  LeaseLost once a renewal has found the lease gone (taken over), and also, by this process's
  own clock, a third of a lease *before* the row's expiry if no renewal has extended it since:
  a worker paused (SIGSTOP, a stalled VM) or cut off from PostgreSQL past that point stops at its
  next check, without a word from the database and before anyone else may claim the stage;
- completing the stage and failing the diagnosis are compare-and-sets on the lease's token
  (`lifecycle.complete_stage`, `fail_diagnosis(token=…)`): whatever a stale holder computed is
  discarded.

The third of a lease kept in hand is what separates the two holders: it covers a renewal
delayed by the interpreter (a runner holding the GIL in a C extension), clock drift between
worker hosts, and a pause falling between a check and the write after it.

In the embedded mode (eager tasks, inside a web request's transaction) nothing else can take a
stage over, and a thread of its own would not see the uncommitted row: no heartbeat there.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Protocol

from django.conf import settings
from django.db import connection
from django.utils import timezone

from diagnosis.pipeline.stage import LeaseLost
from diagnosis.services import lifecycle

logger = logging.getLogger(__name__)


class Renewal(Protocol):
    """`lifecycle.renew_lease`: the new expiry, or None if the lease is gone."""

    def __call__(self, *, diagnosis_id: str, status: str, token: uuid.UUID) -> datetime | None: ...


def lease_seconds() -> float:
    return float(settings.DIAGNOSIS_STAGE_LEASE_SECONDS)


def renew_every() -> float:
    """How often the heartbeat looks at its leases: a third of a lease."""
    return lease_seconds() / 3


class Lease:
    """One claim's lease as its holder sees it: until when, by this process's monotonic clock,
    it may still work under it, and whether a renewal found it gone."""

    def __init__(self, claim: lifecycle.Claim) -> None:
        # Read now: completing the stage changes the claim's diagnosis in memory.
        self.diagnosis_id = str(claim.diagnosis.id)
        self.status = claim.diagnosis.status
        self.token = claim.token
        self.lost = False
        self.valid_until = 0.0
        self.renewed_at = time.monotonic()
        expires_at = claim.diagnosis.lease_expires_at
        if expires_at is not None:
            self.extend(expires_at, monotonic=self.renewed_at, wall=timezone.now())

    def extend(self, expires_at: datetime, *, monotonic: float, wall: datetime) -> None:
        """The row's lease now ends at `expires_at`; `monotonic` and `wall` were read together,
        before the write that set it. Work stops a third of a lease before that instant."""
        remaining = (expires_at - wall).total_seconds()
        self.valid_until = monotonic + remaining - renew_every()
        self.renewed_at = monotonic

    def check(self) -> None:
        """Raises LeaseLost once the lease may be another worker's."""
        if self.lost:
            raise LeaseLost("the lease was taken over")
        if time.monotonic() >= self.valid_until:
            raise LeaseLost("the lease could not be renewed in time")

    def renew(self, renew: Renewal) -> None:
        if self.lost or time.monotonic() >= self.valid_until:
            # Past its own validity the holder has stopped (or will at its next check): a lease
            # nobody works under is not revived.
            return
        monotonic, wall = time.monotonic(), timezone.now()
        expires_at = renew(diagnosis_id=self.diagnosis_id, status=self.status, token=self.token)
        if expires_at is None:
            self.lost = True
            logger.warning("stage %s of %s: lease lost", self.status, self.diagnosis_id)
        else:
            self.extend(expires_at, monotonic=monotonic, wall=wall)


class Heartbeat:
    """The thread that renews the leases its process holds. Started on first use in each
    process (a prefork pool's children each start their own), idle while nothing is held."""

    def __init__(self, renew: Renewal) -> None:
        self._renew = renew
        self._leases: set[Lease] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    @contextmanager
    def holding(self, claim: lifecycle.Claim) -> Iterator[Lease]:
        """The lease of `claim`, renewed while the block runs."""
        lease = Lease(claim)
        with self._lock:
            self._leases.add(lease)
            self._start()
        try:
            yield lease
        finally:
            with self._lock:
                self._leases.discard(lease)

    def _start(self) -> None:
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            interval = renew_every()
            time.sleep(interval)
            with self._lock:
                # A lease claimed a moment ago needs nothing yet.
                due = [x for x in self._leases if time.monotonic() - x.renewed_at >= interval / 2]
            if due:
                self._renew_all(due)

    def _renew_all(self, leases: list[Lease]) -> None:
        try:
            for lease in leases:
                lease.renew(self._renew)
        except Exception as exc:
            # PostgreSQL away: the leases are tried again next round; if it stays away past
            # their validity, their holders stop at their next check.
            logger.warning("lease renewal failed: %s", type(exc).__name__)
        finally:
            # This thread's own connection; rounds with something to renew are seconds apart.
            connection.close()


heartbeat = Heartbeat(lifecycle.renew_lease)
