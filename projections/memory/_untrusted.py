"""Untrusted text as display text: what any memory text becomes before an agent reads it.

Everything a memory item says may come from tool output (a Bash command, a fetched page's
error, a file's contents, a model's summary of those), and the recalled block is injected
into the agent's prompt. So every such text is shown as data that cannot act as markup or
as an instruction, whatever it holds (:func:`safe_text`):

* HTML entities and ``\\u003c`` / ``\\x3c`` / ``%3C`` escapes are decoded first, then the
  text is NFKC-normalised (the fullwidth and small forms of ``<`` become ``<``), so an
  encoded bracket is a bracket;
* every ``<`` and ``>`` and their look-alikes (angle quotation marks, CJK and mathematical
  angle brackets, modifier arrowheads, Canadian syllabics PA / PO ...) become ``(`` and
  ``)`` (arrows such as ``->`` and ``=>`` first become ``→`` and ``⇒``): no text can open
  or close a tag, the block's own included;
* control, format (zero-width, bidi, BOM, tag characters), private-use and unassigned code
  points are dropped or replaced, and every run of whitespace, line and paragraph
  separators included, becomes one space: no text can start a line of its own, so none
  can start a fake section, heading or list item;
* double quotes and their look-alikes become ``'`` and runs of three or more backticks or
  tildes become one ``'``, so a quoted text cannot end its quotes or open a code fence;
* chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``), role prefixes
  (``system:``, ``assistant:``) and the usual injection phrases ("ignore previous
  instructions", "you are now", "new instructions", "from now on") are replaced by
  ``[instruction-like text removed]`` (a heuristic: the structural rules above are the
  guarantee, this only keeps the commonest phrasings out of sight);
* the result is cut to a bound.

:func:`quoted` puts that text in double quotes: the block's header says quoted parts are
recorded data, not instructions. :func:`error_signature` reduces a tool's error text to what
identifies the failure (exception type, exit code, HTTP status, errno, the first meaningful
line), so an error message's prose never becomes a lesson of its own.

Only the standard library is imported: the Claude Code hook calls this on its recording path.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Final

__all__ = ["REMOVED", "error_signature", "quoted", "safe_text"]

REMOVED: Final = "[instruction-like text removed]"


class _Lazy:
    """A pattern compiled on first use: most texts need few of these patterns, and compiling
    them all would cost every cold hook that injects several milliseconds."""

    __slots__ = ("_pattern", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._pattern: re.Pattern[str] | None = None

    @property
    def p(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self._source)
        return self._pattern


# Look-alikes of < > and " are found by their Unicode names (angle quotation marks, CJK and
# mathematical angle brackets, arrowheads, less-than signs and their variants, double
# primes and every double quotation mark), plus letters that are drawn as < and > (Canadian
# syllabics PA / PO and their kin).
_OPENING: Final = _Lazy(
    r"LESS-THAN|LEFT(?:-POINTING| POINTING)? (?:CURVED |DOUBLE |WHITE )?ANGLE"
    r"|LEFT(?:WARDS)? (?:DOUBLE )?ARROWHEAD|LEFT CHEVRON"
)
_CLOSING: Final = _Lazy(
    r"GREATER-THAN|RIGHT(?:-POINTING| POINTING)? (?:CURVED |DOUBLE |WHITE )?ANGLE"
    r"|RIGHT(?:WARDS)? (?:DOUBLE )?ARROWHEAD|RIGHT CHEVRON"
)
_QUOTING: Final = _Lazy(
    r"DOUBLE.*(?:QUOTATION|COMMA|PRIME)|^(?:FULLWIDTH )?QUOTATION MARK|DITTO|DOUBLE PRIME"
    r"|QUOTATION MARK ORNAMENT"
)
_DRAWN: Final = {"\u1438": "(", "\u1433": ")", "\u1445": "(", "\u1441": ")", "\u144a": ")",
                 "\u15d1": "(", "\u15d5": ")", "\u1ce7": "(", "\u1ce8": ")", "\u16b2": "(",
                 "\u3111": "(", "\U0001d236": "(", "\U0001d237": ")",
                 "\U00016f3f": ")"}  # fmt: skip
_ARROWS: Final = (("<->", "\u2194"), ("<=>", "\u21d4"), ("->", "\u2192"), ("<-", "\u2190"),
                  ("=>", "\u21d2"))  # fmt: skip
_ASCII_CONTROLS: Final = {c: " " for c in (*range(32), 127)}
_BRACKETS: Final = {ord("<"): "(", ord(">"): ")", ord('"'): "'"}
# Escapes of a bracket or a quote that a reader (or a later decoder) would turn back into one.
_ESCAPED: Final = _Lazy(
    r"(?i)\\u\{?0*(3c|3e|22)\}?|\\x(3c|3e|22)|%(3c|3e|22|25)|\\(0?74|0?76|0?42)(?![0-7])"
)
# %25 is a percent sign: %253C decodes to %3C, then to < (three rounds at most).
_ESCAPED_AS: Final = {"3c": "<", "3e": ">", "22": '"', "25": "%", "074": "<", "076": ">",
                      "042": '"', "74": "<", "76": ">", "42": '"'}  # fmt: skip
_FENCE: Final = _Lazy(r"`{3,}|~{3,}")
_HASHES: Final = _Lazy(r"#{2,}")
# Phrases match inside words too ("0ignore previous instructions0" is still read as one);
# role prefixes need a word start, or every "filesystem:" would go. Each pattern runs only
# on a text holding one of its words (lower-cased): one regex of them all cost 4 ms per
# 2000 characters, far more than a block's budget of time allows.
_INSTRUCTIONS: Final = tuple(
    (triggers, _Lazy("(?i)" + pattern))
    for triggers, pattern in (
        (("(|",), r"\(\|[^|()]{0,40}\|\)"),  # chat-template tokens, once < > are gone
        (("inst]", "sys]", "system]", "((sys", "((/sys"),
         r"\[/?(?:inst|sys|system)\]|\(\(/?sys\)\)"),
        (("ignor", "disregard", "forget", "overrid", "bypass"),
         r"(?:ignore|disregard|forget|override|bypass)[^.;!?]{0,60}?(?:instruction|prompt|rule"
         r"|guideline|direction|directive|guardrail|context|message|constraint|memor|above"
         r"|earlier|previous|prior)\w*(?:\s+(?:instruction|prompt|rule|guideline|direction"
         r"|directive|message)\w*)?"),
        (("instruction", "directive", "prompt"),
         r"(?:new|updated|real|actual|hidden|secret|true|additional|revised)\s+(?:system\s+)?"
         r"(?:instruction|directive|system\s+prompt)\w*"),
        (("system",), r"system\s*(?:prompt|message|override|instruction)"),
        (("now",), r"(?:you|assistant|model|agent|claude|ai)\s+(?:are|must|will|should|shall)"
                   r"\s+now|from\s+now\s+on"),
        (("as ", "pretend"),
         r"(?:act|behave|respond)\s+as\s+(?:if|though|an?\b|the\b)|pretend\s+(?:to|you)"),
        (("system", "assistant", "developer", "human"),
         r"\b(?:system|assistant|developer|human)[*_]*\s*(?:message|prompt|turn)?[*_]*\s*:"),
        (("important", "attention", "urgent", "note"),
         r"(?:important|attention|urgent|note\s+to\s+(?:the\s+)?(?:ai|assistant|model|agent"
         r"|llm|claude))\s*[:!]"),
    )
)  # fmt: skip
# Cyrillic and Greek letters drawn like Latin ones, one for one: phrases are looked for in
# this skeleton of the text (so "Ignore" spelt with a Cyrillic o is found) and cut from it.
_SKELETON: Final = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u04bb"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405"
    "\u03bf\u03b1\u03b5\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c7"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
    "aeopcyxijsdqwh" "ABEKMHOPCTXIJS" "oaeikvptux" "ABEZHIKMNOPTYX",
)  # fmt: skip
_TRIGGER: Final = _Lazy("|".join(re.escape(t) for triggers, _ in _INSTRUCTIONS for t in triggers))
_TRAILING: Final = _Lazy(r"(?:\s*\[instruction-like text removed\])+")


def safe_text(text: str, limit: int = 400) -> str:
    """``text`` as one line that cannot open or close a tag, start a line, end a quote or
    read as a chat-template or role marker, at most ``limit`` characters (see the module
    docstring for each rule)."""
    s = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be shown
    # A long text is cut first (with room for what decoding shrinks) so the work is bounded.
    s = s[: 4 * limit + 64]
    # Double-encoded entities (&amp;lt;) decode in a second round, fullwidth ones
    # once NFKC has made them ASCII; past three rounds what is left is shown as it is.
    for _ in range(3):
        decoded = _ESCAPED.p.sub(_unescape, s) if "\\" in s or "%" in s else s
        decoded = unicodedata.normalize("NFKC", html.unescape(decoded))
        if decoded == s:
            break
        s = decoded
    if s.isascii():  # the common case: only control characters to replace
        s = s.translate(_ASCII_CONTROLS) if not s.isprintable() else s
    else:
        s = s.translate(_SHOWN)
    for arrow, sign in _ARROWS:
        s = s.replace(arrow, sign)
    s = s.translate(_BRACKETS) if "<" in s or ">" in s or '"' in s else s
    s = _FENCE.p.sub("'", s) if "``" in s or "~~" in s else s
    s = _HASHES.p.sub("#", s) if "##" in s else s
    s = _without_instructions(" ".join(s.split()))
    if len(s) <= limit:
        return s
    return s[: max(limit - 1, 0)].rstrip() + "…" if limit > 0 else ""


def _without_instructions(s: str) -> str:
    skeleton = s if s.isascii() else s.translate(_SKELETON)
    lowered = skeleton.lower()
    if not _TRIGGER.p.search(lowered):
        return s
    spans = sorted(
        m.span()
        for triggers, pattern in _INSTRUCTIONS
        if any(t in lowered for t in triggers)
        for m in pattern.p.finditer(skeleton)
    )
    out: list[str] = []
    at = 0
    for start, end in spans:  # overlapping finds of two patterns are cut as one
        if end <= at:
            continue
        out += [s[at : max(start, at)], REMOVED]
        at = end
    if not out:
        return s
    return _TRAILING.p.sub(" " + REMOVED, "".join([*out, s[at:]])).strip()


def quoted(text: str, limit: int = 400) -> str:
    """:func:`safe_text` in double quotes (the text itself holds none)."""
    return f'"{safe_text(text, max(limit - 2, 1))}"'


def _unescape(m: re.Match[str]) -> str:
    return _ESCAPED_AS[next(g for g in m.groups() if g).lower()]


class _Shown(dict[int, str]):
    """What each code point is shown as, for ``str.translate``, found once per code point
    (a translation in C; a Python call per character cost 5 ms per 2000 characters)."""

    def __missing__(self, code: int) -> str:
        c = chr(code)
        out = c if c.isascii() and c.isprintable() else _char(c)
        if len(self) < 65536:  # a long-lived server must not grow it without bound
            self[code] = out
        return out


_SHOWN: Final = _Shown()


def _char(c: str) -> str:
    cat = unicodedata.category(c)
    if cat[0] == "C":
        # Controls (line breaks, tabs) separate words; zero-width, bidi and tag characters
        # (Cf) hide text from a reader and are dropped; the rest has no safe glyph.
        return " " if cat == "Cc" else "" if cat == "Cf" else "?"
    if cat[0] == "Z":
        return " "
    if c in _DRAWN:
        return _DRAWN[c]
    name = unicodedata.name(c, "")
    if _QUOTING.p.search(name):
        return "'"
    if _OPENING.p.search(name):
        return "(" if not _CLOSING.p.search(name) else "()"
    return ")" if _CLOSING.p.search(name) else c


_TYPE: Final = _Lazy(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Fault|Failure))\b")
_EXIT: Final = _Lazy(
    r"(?i)\b(?:exit(?:ed)?(?:\s+with)?(?:\s+non-zero)?\s*(?:code|status)(?:\s+code)?"
    r"|return\s*code|returncode)\s*[:=]?\s*(-?\d{1,4})\b"
)
_HTTP: Final = _Lazy(
    r"(?i)\b(?:http(?:/\d(?:\.\d)?)?|status(?:\s+code)?|response\s+code)\s*[:=]?\s*([1-5]\d\d)\b"
)
_ERRNO: Final = _Lazy(
    r"\b(E(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|NOSPC|CONNREFUSED|CONNRESET|TIMEDOUT|PIPE"
    r"|AGAIN|NOMEM|ROFS|BUSY|NOTEMPTY|INVAL))\b"
)
_NOISE_LINE: Final = _Lazy(
    r"^\s*(?:Traceback \(most recent call last\):|File \".*\", line \d+|\^+|~+|-+|=+|at \S+\(.*\))"
    r"\s*$"
)
_SIGNATURE_LINE: Final = 120


def error_signature(text: str | None, limit: int = 200) -> str:
    """What identifies a tool's failure in ``text``: the exception type, exit code, HTTP
    status and errno found in it, then its first meaningful line (the exception's line in a
    traceback) quoted, all as :func:`safe_text`; "failed" for no text."""
    raw = (text or "").encode("utf-8", "replace").decode("utf-8")[:20_000]
    if not raw.strip():
        return "failed"
    lines = [ln for ln in raw.splitlines() if ln.strip() and not _NOISE_LINE.p.match(ln)]
    types = _TYPE.p.findall(raw)
    # In a traceback the exception's own line is the last one naming its type.
    line = next((ln for ln in reversed(lines) if types and ln.lstrip().startswith(types[-1])),
                lines[0] if lines else raw)  # fmt: skip
    parts = [types[-1]] if types else []
    for pattern, label in ((_EXIT, "exit "), (_HTTP, "HTTP "), (_ERRNO, "")):
        found = pattern.p.search(raw)
        if found:
            parts.append(label + found.group(1))
    head = ", ".join(dict.fromkeys(parts))
    body = quoted(line, min(_SIGNATURE_LINE, max(limit - len(head) - 2, 3)))
    return f"{head}: {body}" if head else body
