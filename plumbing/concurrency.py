"""Bounds on how many slow requests one client, and one process, hold at once.

A long poll (`?wait=30`) or an upload holds a server thread for as long as it lasts. A rate limit
counts requests as they start and says nothing about how many are still running: thirty long polls
from one token, well within any rate, held every thread of a process. Here a request that may last
takes a *slot* for as long as it runs:

- `client_slots`: per client (an API token, a signed-in user, an address), shared by every web
  process through Redis. A slot is a member of a sorted set scored with the time it expires at, so
  a process killed while holding one frees it by itself once `hold_seconds` have passed; the
  request gives it back when it ends. A full bound raises `TooManyConcurrent`, answered 429
  problem+json with Retry-After. Without Redis (the embedded mode, one process) the sets are
  this process's own.
- `ProcessSlots`: per process, a plain counter: how many threads of this process may be busy with
  one kind of slow request, so that some are always left for the others.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import redis
from django.core.cache import caches
from redis.commands.core import Script
from rest_framework import status

from plumbing.cache import SharedClientRedisCache
from plumbing.problems import ApplicationError


@dataclass(frozen=True)
class Bound:
    """At most `limit` requests of `key` at once."""

    key: str
    limit: int


class TooManyConcurrent(ApplicationError):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    title = "Too many concurrent requests"

    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after)})


class ProcessBusy(ApplicationError):
    """This process has no thread to spare for another request of the kind: try again soon
    (another process, or this one a moment later, will take it)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    title = "Server busy"

    def __init__(self, detail: str, *, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after)})


# KEYS: the bounds' sets. ARGV: now, this slot's member, its expiry, then each bound's limit.
# The throttles' script (plumbing/ratelimit.py) runs the same steps after its counts.
# Returns 0 when the slot was taken in every set, else the 1-based index of the first full set
# (nothing taken anywhere). Expired members (a process killed while holding them) go first.
_TAKE = """
local now = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then
        return i
    end
end
local ttl = math.ceil(tonumber(ARGV[3]) - now) + 1
for _, key in ipairs(KEYS) do
    redis.call('ZADD', key, ARGV[3], ARGV[2])
    redis.call('EXPIRE', key, ttl)
end
return 0
"""


@cache
def _script(client: redis.Redis) -> Script:
    return client.register_script(_TAKE)


_local_lock = threading.Lock()
_local_sets: dict[str, dict[str, float]] = {}


def _take_locally(bounds: Sequence[Bound], member: str, now: float, expires: float) -> int:
    with _local_lock:
        for index, bound in enumerate(bounds, start=1):
            members = _local_sets.setdefault(bound.key, {})
            for old in [m for m, until in members.items() if until <= now]:
                del members[old]
            if len(members) >= bound.limit:
                return index
        for bound in bounds:
            _local_sets[bound.key][member] = expires
        return 0


def _give_back_locally(bounds: Sequence[Bound], member: str) -> None:
    with _local_lock:
        for bound in bounds:
            _local_sets.get(bound.key, {}).pop(member, None)


class Slot:
    """A slot of every bound for one request: taken (`take`, or with the throttles' counts in the
    same round trip: plumbing/ratelimit.py's `count(..., slot=)`), held while the request runs
    (`held`) and given back once (`give_back`, idempotent)."""

    def __init__(self, bounds: Sequence[Bound], *, hold_seconds: float, what: str) -> None:
        self.bounds = list(bounds)
        self.what = what
        self.member = uuid.uuid4().hex
        self.now = time.time()
        self.expires = self.now + hold_seconds
        self.full: int | None = None  # not tried yet; 0 taken; else the 1-based full bound
        self._keys: list[str] = []
        self._client: redis.Redis | None = None

    def redis_keys(self, default: SharedClientRedisCache) -> list[str]:
        """The bounds' sets in the shared Redis, remembered for giving the slot back there."""
        self._client = default.redis_client()
        self._keys = [default.make_key(f"slots:{bound.key}") for bound in self.bounds]
        return self._keys

    def lua_args(self) -> list[str | int]:
        """The `_TAKE` script's arguments, as the throttles' script takes them too."""
        return [repr(self.now), self.member, repr(self.expires), *(b.limit for b in self.bounds)]

    def take(self) -> None:
        """Takes the slot on its own: one round trip to Redis (or this process' sets)."""
        default = caches["default"]
        if isinstance(default, SharedClientRedisCache):
            keys = self.redis_keys(default)
            assert self._client is not None
            self.full = int(_script(self._client)(keys=keys, args=self.lua_args()))
        else:
            self.take_locally()

    def take_locally(self) -> None:
        self.full = _take_locally(self.bounds, self.member, self.now, self.expires)

    @contextmanager
    def held(self) -> Iterator[None]:
        """The block runs holding the slot (taken now if it was not tried), given back after;
        TooManyConcurrent (nothing held) when a bound is full."""
        if self.full is None:
            self.take()
        if self.full:
            limit = self.bounds[self.full - 1].limit
            raise TooManyConcurrent(
                f"At most {limit} {self.what} at once from one client; wait for one to end.",
                retry_after=2,
            )
        try:
            yield
        finally:
            self.give_back()

    def give_back_with_next(self) -> None:
        """The slot's work is done (the body is read): it may be given back in this request's
        next round trip to the same Redis (`ride_along`), one round trip fewer; `give_back`
        still gives it back if no such trip came."""
        if self.full == 0 and self._client is not None:
            _rider.set(self)

    def give_back(self) -> None:
        """Gives a taken slot back (nothing if none was taken or it already was)."""
        if _rider.get() is self:
            _rider.set(None)
        if self.full != 0:
            return
        self.full = None
        if self._client is None:
            _give_back_locally(self.bounds, self.member)
            return
        # With Redis away the slot expires by itself; the request's own outcome stands.
        with contextlib.suppress(redis.RedisError):
            pipeline = self._client.pipeline(transaction=False)
            for key in self._keys:
                pipeline.zrem(key, self.member)
            pipeline.execute()


# The slot to give back in the request's next round trip to Redis, if one comes (`ride_along`).
_rider: contextvars.ContextVar[Slot | None] = contextvars.ContextVar("slot_rider", default=None)


@dataclass(frozen=True)
class Rider:
    """A slot waiting to be given back in the request's next round trip to the cache's Redis:
    its sets' keys and its member, for a script to ZREM; `sent()` once the script ran."""

    keys: list[str]
    member: str
    slot: Slot

    def sent(self) -> None:
        _rider.set(None)
        self.slot.full = None  # given back: `give_back` sends nothing more


def rider() -> Rider | None:
    """The slot waiting for a ride (`Slot.give_back_with_next`), if any."""
    slot = _rider.get()
    if slot is None or slot.full != 0 or not slot._keys:
        return None
    return Rider(list(slot._keys), slot.member, slot)


@contextmanager
def client_slots(bounds: Sequence[Bound], *, hold_seconds: float, what: str) -> Iterator[None]:
    """Holds a slot of every bound while the block runs; TooManyConcurrent (nothing held) when
    one is full. `what` names the requests in the answer ("long polls", "uploads")."""
    with Slot(bounds, hold_seconds=hold_seconds, what=what).held():
        yield


class ProcessSlots:
    """At most `limit` holders at once in this process; `take` says False when full."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = 0

    @contextmanager
    def take(self, limit: int) -> Iterator[bool]:
        with self._lock:
            taken = self._held < limit
            if taken:
                self._held += 1
        try:
            yield taken
        finally:
            if taken:
                with self._lock:
                    self._held -= 1

    @property
    def held(self) -> int:
        return self._held
