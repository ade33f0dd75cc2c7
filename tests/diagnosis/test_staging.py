"""The Redis staging store's writes: what they leave and how many round trips they take."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings

from diagnosis.staging import MASKED, RAW, RedisStagingStore, staging_key
from plumbing.concurrency import Bound, Slot, TooManyConcurrent, client_slots
from tests.redis_trips import redis_round_trips


@pytest.fixture
def store() -> RedisStagingStore:
    return RedisStagingStore(settings.REDIS_URL)


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    return redis_round_trips(monkeypatch)


def _key(kind: str = RAW) -> str:
    return staging_key(kind, uuid.uuid4())


def test_a_value_in_one_chunk_is_written_with_its_ttl_in_one_round_trip(store, trips):
    key = _key()

    assert store.write(key, [b"step 1 loss 2.0\n"], ttl_seconds=60) == 16

    assert trips == [["SET"]]
    assert b"".join(store.read(key)) == b"step 1 loss 2.0\n"
    assert 0 < store.client.ttl(key) <= 60


def test_a_write_replaces_a_longer_value_and_its_ttl(store):
    key = _key(MASKED)
    store.write(key, [b"x" * 1000, b"y" * 1000], ttl_seconds=600)

    store.write(key, [b"short"], ttl_seconds=30)

    assert b"".join(store.read(key)) == b"short"
    assert 0 < store.client.ttl(key) <= 30


def test_later_chunks_are_appended_each_refreshing_the_ttl(store, trips):
    key = _key()

    written = store.write(key, [b"", b"first ", b"", b"second ", b"third"], ttl_seconds=60)

    assert written == len(b"first second third")
    assert trips == [["SET"], ["APPEND", "EXPIRE"], ["APPEND", "EXPIRE"]]
    assert b"".join(store.read(key)) == b"first second third"
    assert 0 < store.client.ttl(key) <= 60


def test_an_empty_value_still_exists_with_its_ttl(store):
    key = _key()
    store.write(key, [b"old"], ttl_seconds=600)

    assert store.write(key, [b"", b""], ttl_seconds=60) == 0

    assert store.exists(key)
    assert b"".join(store.read(key)) == b""
    assert 0 < store.client.ttl(key) <= 60


def _queue_key() -> str:
    return f"{settings.REDIS_KEY_PREFIX}test-queue-{uuid.uuid4().hex}"


def test_a_kept_log_gets_its_ttl_and_its_message_pushed_in_one_round_trip(store, trips):
    key, queue = _key(), _queue_key()
    store.write(key, [b"log"], ttl_seconds=60)
    trips.clear()

    assert store.expire_and_push(key, 3600, queue, '{"task": 1}') is True

    assert trips == [["EVALSHA"]]
    assert 60 < store.client.ttl(key) <= 3600
    assert store.client.lrange(queue, 0, -1) == [b'{"task": 1}']
    store.client.delete(key, queue)


def test_no_message_is_pushed_for_a_log_that_is_gone(store):
    key, queue = _key(), _queue_key()

    assert store.expire_and_push(key, 3600, queue, '{"task": 1}') is False

    assert not store.client.exists(key)
    assert not store.client.exists(queue)


def test_the_script_is_sent_again_to_a_restarted_redis(tmp_path):
    from tests.e2e.stack import OwnRedis

    own = OwnRedis(tmp_path)  # restarted: not the shared server other runs use
    own.start()
    try:
        store = RedisStagingStore(own.url)
        store.write("raw:1", [b"log"], ttl_seconds=60)
        assert store.expire_and_push("raw:1", 3600, "queue", "m") is True
        own.kill()
        own.start()  # the same port, empty: no log, and no script
        store.write("raw:2", [b"log"], ttl_seconds=60)

        assert store.expire_and_push("raw:2", 3600, "queue", "m") is True
        assert store.client.lrange("queue", 0, -1) == [b"m"]
    finally:
        own.kill()


def test_an_upload_slot_waiting_for_a_ride_goes_back_in_the_same_round_trip(store, trips):
    key, queue = _key(), _queue_key()
    store.write(key, [b"log"], ttl_seconds=60)
    bound = Bound(f"test:{uuid.uuid4().hex}", 1)
    slot = Slot([bound], hold_seconds=60, what="uploads")
    with slot.held():
        slot.give_back_with_next()  # the body is read
        trips.clear()

        assert store.expire_and_push(key, 3600, queue, "m") is True

        assert trips == [["EVALSHA"]]
        with client_slots([bound], hold_seconds=60, what="x"):  # free already
            pass
        given_back = len(trips)
    assert len(trips) == given_back  # nothing more sent when the request ends
    store.client.delete(key, queue)


def test_a_slot_whose_ride_never_came_is_given_back_when_the_request_ends(store):
    bound = Bound(f"test:{uuid.uuid4().hex}", 1)
    slot = Slot([bound], hold_seconds=60, what="uploads")
    with slot.held():
        slot.give_back_with_next()
        with pytest.raises(TooManyConcurrent), client_slots([bound], hold_seconds=60, what="x"):
            pass
    with client_slots([bound], hold_seconds=60, what="x"):
        pass
