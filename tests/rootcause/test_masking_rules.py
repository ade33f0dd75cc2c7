"""An organisation's own masking rules in the library: what is a valid rule, and how it masks."""

from __future__ import annotations

import time

import pytest

from rootcause.masking import Masker, mask_log
from rootcause.masking.recognizer import build_analyzer
from rootcause.masking.rules import (
    MAX_LABEL_LENGTH,
    Rule,
    RuleError,
    compile_rules,
    validate_rule,
    validate_rules,
)

# --- Validation -------------------------------------------------------------------------------


def test_a_term_is_stripped_and_labelled_by_default() -> None:
    assert validate_rule("term", "  Bluebird ") == Rule("term", "Bluebird", "ORG_TERM")
    assert validate_rule("pattern", r"OPS-\d+").label == "ORG_PATTERN"


def test_a_label_is_upper_cased_with_underscores() -> None:
    assert validate_rule("term", "acme", "customer name").label == "CUSTOMER_NAME"
    assert validate_rule("term", "acme", "project-codename").label == "PROJECT_CODENAME"


@pytest.mark.parametrize("label", ["1st", "a.b", "naïve", "x" * (MAX_LABEL_LENGTH + 1), "<X>"])
def test_a_label_that_cannot_name_an_entity_is_refused(label: str) -> None:
    with pytest.raises(RuleError, match="label"):
        validate_rule("term", "acme", label)


@pytest.mark.parametrize(
    ("kind", "value", "problem"),
    [
        ("pattern", "a*", "matches the empty string"),
        ("pattern", "(x|)", "matches the empty string"),
        ("pattern", "^", "matches the empty string"),
        ("pattern", r"(\w+)-\1", "Back-references are unsupported"),
        ("pattern", "(?<=host=)[a-z]+", "Zero-width assertions are not supported"),
        ("pattern", "[a-z", "Unterminated character class"),
        ("pattern", "a{1,100000}", "Bounded repeat is too large"),
        ("pattern", "gpu-é+", "Patterns are ASCII"),
        ("pattern", "x" * 201, "201 characters; at most 200"),
        ("pattern", "a\nb", "one line"),
        ("term", "", "empty"),
        ("term", "   ", "empty"),
        ("term", "a", "at least 2 characters"),
        ("term", "--", "a letter or a digit"),
        ("term", "y" * 201, "at most 200"),
        ("regex", "x", "not a kind of rule"),
    ],
)
def test_invalid_rules_are_refused_naming_the_problem(kind: str, value: str, problem: str) -> None:
    with pytest.raises(RuleError, match=problem.replace("(", r"\(")):
        validate_rule(kind, value)


def test_the_length_limit_is_the_callers() -> None:
    assert validate_rule("term", "x" * 300, max_length=300).value == "x" * 300
    with pytest.raises(RuleError, match="at most 10"):
        validate_rule("term", "x" * 11, max_length=10)


def test_a_pattern_that_backtracks_catastrophically_elsewhere_runs_in_linear_time() -> None:
    """(a+)+b is the textbook exponential regex for backtracking engines; Hyperscan is an
    automaton, so the rule is accepted and a long run of a's without b costs nothing."""
    rule = validate_rule("pattern", "(a+)+b", "X")
    masker = Masker(secret=b"k", analyzer=None, rules=[rule])
    started = time.perf_counter()
    masker.mask("a" * 200_000 + "c\n")
    assert time.perf_counter() - started < 1
    assert masker.counts == {}


def test_the_set_of_rules_is_limited_in_number() -> None:
    rules = [validate_rule("term", f"name{i}") for i in range(3)]
    validate_rules(rules, max_rules=3)
    with pytest.raises(RuleError, match="at most 2 masking rules"):
        validate_rules(rules, max_rules=2)


# --- Masking ----------------------------------------------------------------------------------

RULES = [
    validate_rule("term", "Bluebird", "PROJECT_CODENAME"),
    validate_rule("term", "acme"),
    validate_rule("pattern", r"\bOPS-\d{4,6}\b", "ticket"),
]


def _maskers(rules: list[Rule]) -> list[Masker]:
    """The light client's path (the Hyperscan recognizers alone) and the service's (Presidio's
    analyzer, the rules as an ad-hoc recognizer): both must mask alike."""
    return [
        Masker(secret=b"k", analyzer=None, rules=rules),
        Masker(secret=b"k", analyzer=build_analyzer(), rules=rules),
    ]


@pytest.mark.parametrize("path", ["hyperscan", "presidio"])
def test_terms_and_patterns_are_masked_with_numbered_pseudonyms_and_counted(path: str) -> None:
    masker = _maskers(RULES)[path == "presidio"]
    out = masker.mask(
        "run BLUEBIRD-7 for bluebird on acme-prod (ckpt_acme_v2.pt, ACME.log) see OPS-20417\n"
        "acmeish and myacme and OPS-123 stay; 10.0.0.9 is an address\n"
    )
    assert out == (
        "run <PROJECT_CODENAME_1>-7 for <PROJECT_CODENAME_1> on <ORG_TERM_1>-prod "
        "(ckpt_<ORG_TERM_1>_v2.pt, <ORG_TERM_1>.log) see <TICKET_1>\n"
        "acmeish and myacme and OPS-123 stay; <IP_1> is an address\n"
    )
    assert masker.counts == {"PROJECT_CODENAME": 2, "ORG_TERM": 3, "TICKET": 1, "IP_ADDRESS": 1}


def test_two_values_of_one_label_get_two_pseudonyms() -> None:
    rules = [
        validate_rule("term", "globex", "CUSTOMER"),
        validate_rule("term", "initech", "CUSTOMER"),
    ]
    masker = Masker(secret=b"k", analyzer=None, rules=rules)
    assert masker.mask("globex initech Globex\n") == "<CUSTOMER_1> <CUSTOMER_2> <CUSTOMER_1>\n"


def test_a_label_of_a_built_in_type_is_masked_as_that_type() -> None:
    rules = [
        validate_rule("term", "trainbox", "HOSTNAME"),
        validate_rule("term", "svc9", "USERNAME"),
    ]
    masker = Masker(secret=b"k", analyzer=None, rules=rules)
    out = masker.mask("trainbox ran as svc9 next to node-17.example.com\n")
    assert out == "<HOST_1> ran as <USER> next to <HOST_2>\n"
    assert masker.counts == {"HOSTNAME": 2, "USERNAME": 1}


def test_a_pattern_match_never_crosses_a_line() -> None:
    rule = validate_rule("pattern", r"job [a-z\s]+", "JOB")
    masker = Masker(secret=b"k", analyzer=None, rules=[rule])
    out = masker.mask("job alpha\nbeta 1\n")
    assert out.count("\n") == 2
    assert out == "<JOB_1>\nbeta 1\n"


def test_patterns_are_case_sensitive_unless_they_say_so_and_anchor_at_lines() -> None:
    rules = [validate_rule("pattern", "^proj-[a-z]+", "P"), validate_rule("pattern", "(?i)zeta")]
    masker = Masker(secret=b"k", analyzer=None, rules=rules)
    out = masker.mask("proj-x ZETA\nPROJ-y and proj-z\n")
    assert out == "<P_1> <ORG_PATTERN_1>\nPROJ-y and proj-z\n"


@pytest.mark.parametrize("path", ["hyperscan", "presidio"])
def test_non_ascii_text_and_terms_keep_whole_characters(path: str) -> None:
    rules = [validate_rule("term", "Zürich-GPU"), validate_rule("pattern", "[^ ]+X", "W")]
    masker = _maskers(rules)[path == "presidio"]
    out = masker.mask("🚀 zürich-gpu: fooééX done\n")
    assert out == "🚀 <ORG_TERM_1>: <W_1> done\n"


def test_rules_apply_through_mask_log() -> None:
    masker = Masker(secret=b"k", analyzer=None, rules=RULES)
    chunks = [b"line 1 bluebird\n", b"line 2 /home/jdoe/x\n"]
    out = "".join(mask_log(lambda: iter(chunks), masker, chunk_size=16))
    assert out == "line 1 <PROJECT_CODENAME_1>\nline 2 /home/<USER>/x\n"


def test_patterns_that_crash_a_block_mode_scan_are_scanned_safely() -> None:
    """b+c over a few hundred a's then c kills the process with a block-mode SOM database of
    the Hyperscan we ship (rules.py says why the rules are scanned in streaming mode)."""
    rules = [validate_rule("pattern", "b+c", "B"), validate_rule("pattern", "a+c", "A")]
    masker = Masker(secret=b"k", analyzer=None, rules=rules)
    out = masker.mask("a" * 1000 + "c xbbc\n" + "b" * 300 + "c\n")
    assert out == "<A_1> x<B_1>\n<B_2>\n"


def test_no_rules_mask_as_before_and_compiled_sets_are_shared() -> None:
    text = "bluebird at 10.0.0.9\n"
    assert Masker(secret=b"k", analyzer=None, rules=[]).mask(text) == "bluebird at <IP_1>\n"
    assert compile_rules(tuple(RULES)) is compile_rules(tuple(RULES))
