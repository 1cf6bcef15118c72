"""Tests for the JavaScript-exact primitives behind evolver's memory-graph advice."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from evolog.eventlog.schema._signalkey import (
    compute_signal_key,
    extract_error_signature,
    has_error_signal,
    jaccard,
    js_pow,
    js_string,
    js_truthy,
    normalize_error_signature,
    normalize_signals_for_matching,
    parse_iso_ms,
    stable_hash,
    to_fixed,
    utf16_sort_key,
)
from hypothesis import given
from hypothesis import strategies as st

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "evolver-examples"
MARCH_1_2026_MS = 1_772_323_200_000.0
DAY_MS = 86_400_000.0
# ECMAScript WhiteSpace and LineTerminator code points (ECMA-262 §12.2, §12.3).
ES_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000\ufeff")
)


def _vectors() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads(
        (EXAMPLES / "signal_key_vectors.json").read_text(encoding="utf-8")
    )
    return vectors


def _fnv1a_bytes(data: bytes) -> str:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) % 2**32
    return f"{h:08x}"


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# -- signal keys against the real module's answers ------------------------------------------


def test_all_signal_key_vectors_present() -> None:
    assert len(_vectors()) == 25


@pytest.mark.parametrize("index", range(25))
def test_signal_key_vector(index: int) -> None:
    vector = _vectors()[index]
    assert compute_signal_key(vector["signals"]) == vector["key"]


# -- stable_hash ------------------------------------------------------------------------------


def test_stable_hash_known_values() -> None:
    assert stable_hash("") == "811c9dc5"
    assert stable_hash("a") == "e40c292c"


@pytest.mark.parametrize("falsy", [None, 0, 0.0, -0.0, False, math.nan, ""])
def test_stable_hash_falsy_inputs_hash_empty(falsy: object) -> None:
    assert stable_hash(falsy) == "811c9dc5"


@pytest.mark.parametrize(
    ("value", "as_string"),
    [
        (7, "7"),
        (1.0, "1"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (True, "true"),
        ([1, None, [2, [3]]], "1,,2,3"),
        ([], ""),
        ({"a": 1}, "[object Object]"),
        ({}, "[object Object]"),
    ],
)
def test_stable_hash_coerces_like_js_string(value: object, as_string: str) -> None:
    assert js_string(value) == as_string
    assert stable_hash(value) == stable_hash(as_string)


def test_stable_hash_counts_utf16_units_not_utf8_bytes() -> None:
    # A surrogate pair and the astral character it encodes are one JavaScript string.
    assert stable_hash("\U0001f600") == stable_hash("\ud83d\ude00")
    assert stable_hash("é") != _fnv1a_bytes("é".encode())


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_stable_hash_of_ascii_is_fnv1a_over_bytes(text: str) -> None:
    assert stable_hash(text) == _fnv1a_bytes(text.encode("ascii"))


def test_js_truthy_differs_from_python_bool() -> None:
    assert js_truthy([]) and js_truthy({}) and js_truthy("false")
    assert not any(js_truthy(v) for v in (None, False, 0, -0.0, math.nan, ""))


# -- normalize_error_signature ----------------------------------------------------------------


@pytest.mark.parametrize("blank", [None, "", "   ", "\ufeff\u3000\u2028\xa0", 0])
def test_blank_signature_is_none(blank: object) -> None:
    assert normalize_error_signature(blank) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("open C:\\Users\\me\\f.txt now", "open <path> now"),
        ("a/b c", "a<path> c"),
        ("see https://x.org/y?z=1 now", "see https:<path> now"),
        ("code 0xDEADBEEF", "code <hex>"),
        ("0x1g x0x12", "0x1g x0x12"),
        ("v8 12abc 1.5 42", "v8 12abc <n>.<n> <n>"),
        ("\u0663 digits", "\u0663 digits"),  # \d is ASCII only
        ("é5", "é<n>"),  # é is not a word character for an ASCII \b
        ("tab\there\nnew   many", "tab here new many"),
        ("a\xa0\u2028\u3000b", "a b"),  # ECMAScript \s
        ("a\x1cb\x85c", "a\x1cb\x85c"),  # Python's \s set, not ECMAScript's
        ("\x1c", "\x1c"),  # str.strip() would remove it; trim() does not
        ("İstanbul", "i\u0307stanbul"),  # full case mapping: two code units
        ("ΟΔΟΣ", "οδος"),  # final sigma
    ],
)
def test_signature_normalisation(raw: str, expected: str) -> None:
    assert normalize_error_signature(raw) == expected


def test_signature_truncation_splits_surrogate_pair() -> None:
    result = normalize_error_signature("a" * 219 + "\U0001f600")
    assert result == "a" * 219 + "\ud83d"


def test_signature_is_not_trimmed_after_truncation() -> None:
    assert normalize_error_signature("a" * 219 + " b") == "a" * 219 + " "


@given(st.text())
def test_signature_length_bound(text: str) -> None:
    result = normalize_error_signature(text)
    assert (result is None) == (text.strip(ES_WHITESPACE) == "")
    assert result is None or _utf16_units(result) <= 220


# -- matching, keys, signatures ----------------------------------------------------------------


def test_normalize_signals_for_matching() -> None:
    raw = [None, 0, False, "", "  ", "x", " x ", "errsig:", "errsig:E 1", "errsig:e 2", 7, "B"]
    norm = "errsig_norm:" + stable_hash("e <n>")
    assert normalize_signals_for_matching(raw) == ["x", "x", norm, norm, "7", "B"]
    assert normalize_signals_for_matching("not-a-list") == []
    assert normalize_signals_for_matching(None) == []


def test_signal_key_sorts_by_utf16_code_units() -> None:
    # U+1F600 is above U+FB01 as a code point but its lead surrogate U+D83D is below it.
    assert compute_signal_key(["\ufb01", "\U0001f600"]) == "\U0001f600|\ufb01"
    assert sorted(["\ufb01", "\U0001f600"], key=utf16_sort_key)[0] == "\U0001f600"
    assert compute_signal_key([]) == "(none)"


@given(st.lists(st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans())))
def test_signal_key_ignores_order_and_duplicates(signals: list[object]) -> None:
    key = compute_signal_key(signals)
    assert compute_signal_key(signals[::-1]) == key
    assert compute_signal_key(signals + signals[:3]) == key


def test_extract_error_signature() -> None:
    assert extract_error_signature(["a", "errsig:Foo 12", "errsig:bar"]) == "foo <n>"
    assert extract_error_signature(["  errsig:not trimmed"]) is None
    assert extract_error_signature(["errsig:   ", "errsig:later"]) is None  # first one only
    assert extract_error_signature("errsig:x") is None


def test_has_error_signal_is_exact() -> None:
    assert has_error_signal(["x", "log_error"])
    assert not has_error_signal(["LOG_ERROR", " log_error", "errsig:log_error"])
    assert not has_error_signal("log_error")


def test_jaccard() -> None:
    assert jaccard([], [None, " "]) == 1.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard(["a", "c"], ["a", "b"]) == pytest.approx(1 / 3)
    assert jaccard(["a", "a", "b"], ["b", "a"]) == 1.0
    assert jaccard(["errsig:x 1"], ["errsig:x 2"]) == 1.0


# -- numbers and dates --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "digits", "expected"),
    [
        (0.0625, 3, "0.063"),  # exact binary tie: JS rounds up, '%.3f' rounds to even
        (0.26732957156952675, 3, "0.267"),
        (1.005, 2, "1.00"),  # 1.005 is slightly below the tie in binary
        (2.5, 0, "3"),
        (0.0, 7, "0.0000000"),
        (-0.0, 3, "0.000"),
        (-0.0001, 3, "-0.000"),
        (-0.0625, 3, "-0.063"),
        (1e21, 3, "1e+21"),
        (math.nan, 3, "NaN"),
    ],
)
def test_to_fixed(x: float, digits: int, expected: str) -> None:
    assert to_fixed(x, digits) == expected


def test_to_fixed_rejects_bad_digits() -> None:
    with pytest.raises(ValueError):
        to_fixed(1.0, 101)


def test_js_pow_special_cases() -> None:
    assert math.isnan(js_pow(1.0, math.nan))
    assert math.isnan(js_pow(-1.0, math.inf))
    assert js_pow(math.nan, 0.0) == 1.0
    assert math.isnan(js_pow(-8.0, 1 / 3))
    assert js_pow(0.0, -1.0) == math.inf
    assert js_pow(-0.0, -1.0) == -math.inf
    assert js_pow(10.0, 400.0) == math.inf
    assert js_pow(-10.0, 401.0) == -math.inf
    assert js_pow(0.5, 2.0) == 0.25


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [
        ("2026-03-01T00:00:00.000Z", MARCH_1_2026_MS),
        ("2026-03-01", MARCH_1_2026_MS),
        ("2026-03", MARCH_1_2026_MS),
        ("2026-03-01T00:00:00", MARCH_1_2026_MS),  # no offset: UTC here, local time in JS
        ("2026-03-01T01:30+01:30", MARCH_1_2026_MS),
        ("2026-02-28T24:00:00.000Z", MARCH_1_2026_MS),
        ("2026-02-30T00:00:00Z", MARCH_1_2026_MS + DAY_MS),  # rolls over to 2 March
        ("2026-03-01T00:00:00.0015Z", MARCH_1_2026_MS + 1),
        ("+275760-09-13T00:00:00.000Z", 8.64e15),
        ("-000001-01-01T00:00:00Z", -62_198_755_200_000.0),
    ],
)
def test_parse_iso_ms(text: str, expected_ms: float) -> None:
    assert parse_iso_ms(text) == expected_ms


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        " 2026-03-01T00:00:00Z",
        "Mar 1 2026",
        "2026-13-01",
        "2026-03-32",
        "2026-03-01T24:00:01Z",
        "2026-03-01T12:60Z",
        "-000000-01-01T00:00:00Z",
        "+275760-09-13T00:00:00.001Z",
    ],
)
def test_parse_iso_ms_rejects(text: object) -> None:
    assert math.isnan(parse_iso_ms(text))
