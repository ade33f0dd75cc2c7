"""The request logs behind the sliding-window throttles of hot paths: counted in Redis by one
script, atomically, or in the cache as DRF keeps them.

DRF's SimpleRateThrottle keeps each key's log (the times of its requests in the window) as a
pickled list in the cache, which every request reads, trims and writes back whole: two round
trips, a list as long as the rate, and two requests at once may both read the same log and one
count is lost. With Redis as the cache, a log is a sorted set of request times instead, and
`count` trims, counts and adds to every log of a request in one Lua script: one round trip,
nothing lost between concurrent requests. Without Redis (the embedded mode, Django's local-memory
cache) the logs are the cache's lists, read and written as DRF does.

The throttles themselves stay DRF's (their rates, keys and `Throttled` answers): this is their
storage, for the submission's burst limits and failed API tokens (diagnosis/throttles.py,
accounts/throttles.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import redis
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from redis.commands.core import Script

from plumbing.cache import SharedClientRedisCache
from plumbing.concurrency import Slot


@dataclass(frozen=True)
class Window:
    """A log to read or count into: its cache key, how many requests it admits, over how long;
    limit None admits every request (a log that only records, such as failures)."""

    key: str
    limit: int | None
    seconds: int


@dataclass(frozen=True)
class Seen:
    """A log as the request found it: the requests still in its window, the oldest one's time."""

    count: int
    oldest: float | None

    def admits(self, window: Window) -> bool:
        return window.limit is None or self.count < window.limit

    def wait(self, window: Window, now: float) -> float | None:
        """Seconds until the next request is likely admitted, as DRF's SimpleRateThrottle.wait."""
        if window.limit is None:
            return None
        remaining = window.seconds - (now - self.oldest) if self.oldest else window.seconds
        available = window.limit - self.count + 1
        return remaining / available if available > 0 else None


class GateRefused(Exception):
    """The gate's log was full: nothing was counted. `wait` as DRF's throttle would tell it."""

    def __init__(self, seen: Seen, wait: float | None) -> None:
        super().__init__(seen, wait)
        self.seen = seen
        self.wait = wait


def count(
    counted: Sequence[Window],
    now: float,
    *,
    gate: Window | None = None,
    slot: Slot | None = None,
) -> list[Seen]:
    """Each counted log as the request found it; the request is added to those that admit it
    (an admitted one counts it even if another refuses), never to a refusing one.

    The `gate`'s log is only read; when it is full, GateRefused is raised and nothing counted.
    A `slot` (plumbing/concurrency.py) is taken in the same round trip when every counted log
    admits the request (its `full` says how that went), and not tried otherwise.
    """
    windows = [gate, *counted] if gate is not None else list(counted)
    if not windows:
        if slot is not None:
            slot.take()
        return []
    default = caches["default"]
    if isinstance(default, SharedClientRedisCache):
        seen = _count_in_redis(default, windows, now, gated=gate is not None, slot=slot)
    else:
        seen = _count_in_cache(default, windows, now, gated=gate is not None)
        if (
            slot is not None
            and len(seen) == len(windows)
            and all(found.admits(window) for found, window in zip(seen, windows, strict=True))
        ):
            slot.take_locally()
    if gate is None:
        return seen
    if not seen[0].admits(gate):
        raise GateRefused(seen[0], seen[0].wait(gate, now))
    return seen[1:]


# KEYS: the logs, the gate's first if any, then a slot's sets if any. ARGV: now, this request's
# member, 1 if there is a gate, how many logs, then each log's limit (-1: none) and window in
# seconds, then the slot's arguments if any (plumbing/concurrency.py's `_TAKE`: its time, member,
# expiry, each set's limit). Returns each log's count and its oldest time (a string: Lua numbers
# come back as integers), then the slot's outcome (-2: not tried, a log refused; 0: taken; else
# the 1-based full set, nothing taken), or {-1, count, oldest} for a full gate. A request's times
# are scores; its member is unique, so two at the same time both count. The slot's steps are
# `_TAKE`'s, run only when every counted log admitted the request.
_COUNT = """
local now = tonumber(ARGV[1])
local gated = ARGV[3] == '1'
local logs = tonumber(ARGV[4])
local admitted = true
local seen = {}
for i = 1, logs do
    local key = KEYS[i]
    local limit = tonumber(ARGV[3 + 2 * i])
    local window = tonumber(ARGV[4 + 2 * i])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    local n = redis.call('ZCARD', key)
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2] or ''
    if i == 1 and gated then
        if limit >= 0 and n >= limit then
            return {-1, n, oldest}
        end
    elseif limit < 0 or n < limit then
        redis.call('ZADD', key, now, ARGV[2])
        redis.call('EXPIRE', key, window)
    else
        admitted = false
    end
    seen[#seen + 1] = n
    seen[#seen + 1] = oldest
end
local slot = -2
if admitted and #KEYS > logs then
    local a = 5 + 2 * logs
    local at = tonumber(ARGV[a])
    slot = 0
    for j = logs + 1, #KEYS do
        redis.call('ZREMRANGEBYSCORE', KEYS[j], '-inf', at)
        if redis.call('ZCARD', KEYS[j]) >= tonumber(ARGV[a + 2 + j - logs]) then
            slot = j - logs
            break
        end
    end
    if slot == 0 then
        local ttl = math.ceil(tonumber(ARGV[a + 2]) - at) + 1
        for j = logs + 1, #KEYS do
            redis.call('ZADD', KEYS[j], ARGV[a + 2], ARGV[a + 1])
            redis.call('EXPIRE', KEYS[j], ttl)
        end
    end
end
seen[#seen + 1] = slot
return seen
"""


def redis_key(default: SharedClientRedisCache, key: str) -> str:
    """Where the log of `key` lives in Redis: apart from the cache's own keys, so that a value
    DRF's way (a pickled list, written by a process of an earlier release during a rolling
    deploy) is never read as a sorted set, nor the other way round."""
    return default.make_key(f"ratelimit:{key}")


@cache
def _script(client: redis.Redis) -> Script:
    return client.register_script(_COUNT)


def _count_in_redis(
    default: SharedClientRedisCache,
    windows: list[Window],
    now: float,
    *,
    gated: bool,
    slot: Slot | None,
) -> list[Seen]:
    """Every log as the script found it; for a full gate, the gate's alone (nothing counted).
    The slot's outcome goes to `slot.full` (left unset when it was not tried)."""
    args: list[str | int | float] = [repr(now), uuid.uuid4().hex, 1 if gated else 0, len(windows)]
    for window in windows:
        args += [-1 if window.limit is None else window.limit, window.seconds]
    keys = [redis_key(default, window.key) for window in windows]
    if slot is not None:
        keys += slot.redis_keys(default)
        args += slot.lua_args()
    reply = _script(default.redis_client())(keys=keys, args=args)
    if reply[0] == -1:
        return [_seen(reply[1], reply[2])]
    if slot is not None and int(reply[-1]) != -2:
        slot.full = int(reply[-1])
    return [_seen(reply[i], reply[i + 1]) for i in range(0, len(reply) - 1, 2)]


def _seen(count: int, oldest: bytes | str) -> Seen:
    return Seen(int(count), float(oldest) if oldest else None)


def _count_in_cache(
    default: BaseCache, windows: list[Window], now: float, *, gated: bool
) -> list[Seen]:
    """DRF's way, for every log in one `get_many` and one `set_many`: each log is the list of
    its times, newest first, trimmed to its window when read, kept for the longest window.
    The gate (the first window, when `gated`) is only read; when it is full, nothing is counted
    and only its log is returned."""
    logs = default.get_many([window.key for window in windows])
    seen: list[Seen] = []
    admitted: dict[str, list[float]] = {}
    keep_for = 0
    for index, window in enumerate(windows):
        log = [t for t in logs.get(window.key, []) if t > now - window.seconds]
        found = Seen(len(log), log[-1] if log else None)
        seen.append(found)
        if gated and index == 0:
            if not found.admits(window):
                return seen
        elif found.admits(window):
            admitted[window.key] = [now, *log]
            keep_for = max(keep_for, window.seconds)
    if admitted:
        default.set_many(admitted, keep_for)
    return seen
