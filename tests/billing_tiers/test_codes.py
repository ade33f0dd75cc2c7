from __future__ import annotations

import itertools
import re

import pytest

from billing_tiers.codes import (
    ALPHABET,
    MalformedCode,
    check_symbol,
    code_digest,
    generate_code,
    normalize_code,
)

SHAPE = re.compile(r"SCALE-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}")


def test_codes_have_the_agreed_shape_and_an_unambiguous_alphabet():
    codes = {generate_code() for _ in range(200)}

    assert len(codes) == 200
    assert all(SHAPE.fullmatch(code) for code in codes)
    assert not set("ILOU") & set(ALPHABET)
    assert all(normalize_code(code) == code.replace("-", "")[5:] for code in codes)


def test_the_check_symbol_catches_every_single_mistyped_symbol():
    payload = "7K3QX9M2TAB"
    body = payload + check_symbol(payload)
    for position, symbol in itertools.product(range(len(body)), ALPHABET):
        if body[position] == symbol:
            continue
        typo = body[:position] + symbol + body[position + 1 :]
        with pytest.raises(MalformedCode, match="typo"):
            normalize_code(typo)


def test_the_check_symbol_catches_most_swapped_neighbours():
    caught = total = 0
    for _ in range(200):
        body = normalize_code(generate_code())
        for i in range(len(body) - 1):
            if body[i] == body[i + 1]:
                continue
            total += 1
            swapped = body[:i] + body[i + 1] + body[i] + body[i + 2 :]
            try:
                normalize_code(swapped)
            except MalformedCode:
                caught += 1
    assert caught / total > 0.95


@pytest.mark.parametrize(
    "raw", ["", "SCALE", "SCALE-ABCD-EFGH", "SCALE-ABCD-EFGH-JKMN-P", "🙂" * 12]
)
def test_malformed_codes(raw):
    with pytest.raises(MalformedCode, match="looks like"):
        normalize_code(raw)


def test_the_digest_is_keyed_and_ignores_how_the_code_was_typed(settings):
    code = generate_code()
    digest = code_digest(code)

    assert code_digest(code.lower().replace("-", " ")) == digest
    assert len(digest) == 64
    assert normalize_code(code) not in digest
    settings.SECRET_KEY = "another-secret-key-for-this-test-only-0123456789"
    assert code_digest(code) != digest
