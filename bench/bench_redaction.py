"""Redaction (issue 26.3): recall on the secret corpus, false positives on benign text, cost.

    python bench/bench_redaction.py [--repeat 3]

The corpus is tests/secret_corpus.py: every secret kind in every context the hook keeps
(a Bash command, a tool's JSON output, JSON nested in JSON strings, an error, a file, prose,
JSON text with escaped newlines, a URL). Three redactors are compared:

- ``evolog``: :func:`evolog.hook._redact.redact`, through ``kept`` (what the hook stores);
- ``detect-secrets``: the maintained detector (all its default plugins, line by line), each
  value it reports replaced in the text;
- ``detect-secrets regex plugins``: the same without its entropy, keyword and public-IP
  plugins (the cheap part, as a possible second layer);
- ``evolog then ds regex plugins``: evolog's rules, then those plugins on what they left.

A (kind, context) pair counts as redacted when none of the kind's secret pieces (the value
and 10-character windows of it) is left in the redacted text, and as flagged when every
line holding a piece was reported (for evolog: the text changed) even if not redacted; a
kind counts as redacted everywhere when all its contexts are. A benign text is a false
positive when the redactor changes it (evolog) or reports anything in it (detect-secrets).
Cost: microseconds per call on each corpus and benign text (warm), and in a fresh
interpreter, after the imports the hook makes anyway, the redactor's import and its first
three calls (what a cold hook pays: evolog compiles a rule on first use), median of
``--repeat`` runs; and evolog's time on 8000-character texts built to make a backtracking
pattern rescan (the most a hook string is redacted on).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from secret_corpus import Kind, benign, contexts, kinds, windows

from evolog.hook._content import kept


def _evolog(text: str) -> tuple[str, set[int]]:
    after = kept(text) or ""
    # A block collapses to one line, so lines do not align: a changed text flags them all.
    return after, set(range(1, len(text.splitlines()) + 1)) if after != text else set()


# detect-secrets' regex plugins: every default one but the entropy and keyword heuristics
# (and the public-IP one, which is not a secret).
_HEURISTIC = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector",
              "IPPublicDetector"}  # fmt: skip


def _detect_secrets(regex_only: bool) -> Callable[[str], tuple[str, set[int]]] | None:
    """detect-secrets as a redactor: the text with the values its plugins report replaced,
    and the lines (1-based) they reported on.

    Lines go through its file scanner's line path (filters included), not ``scan_line``:
    that ad-hoc entry point reports every word with its entropy. Some plugins report a
    value that is only part of the secret (the GitHub one reports ``ghp``): then the
    line is flagged, but replacing the value does not redact the secret."""
    try:
        from detect_secrets.core.scan import _process_line_based_plugins
        from detect_secrets.settings import default_settings, get_settings, transient_settings
    except ImportError:
        return None
    with default_settings():
        names = [n for n in get_settings().plugins if not (regex_only and n in _HEURISTIC)]
    config = {"plugins_used": [{"name": n} for n in names]}

    def redact(text: str) -> tuple[str, set[int]]:
        with transient_settings(config):
            lines = list(enumerate(text.splitlines(), 1))
            found = list(_process_line_based_plugins(lines=lines, filename="hook.txt"))
        for value in sorted({str(s.secret_value) for s in found}, key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        return text, {s.line_number for s in found}

    return redact


def _left(k: Kind, text: str) -> bool:
    return any(w in text for n in k.needles for w in windows(n))


def _score(name: str, redact: Callable[[str], tuple[str, set[int]]]) -> dict[str, Any]:
    ks = kinds()
    pairs = caught = flagged = caught_kinds = 0
    missed: list[str] = []
    start = time.perf_counter()
    for k in ks:
        ok = True
        for ctx, text in contexts(k).items():
            pairs += 1
            after, lines = redact(text)
            secret_lines = {i for i, line in enumerate(text.splitlines(), 1) if _left(k, line)}
            flagged += secret_lines <= lines
            if _left(k, after):
                ok = False
                missed.append(f"{k.name} / {ctx}")
            else:
                caught += 1
        caught_kinds += ok
    corpus_s = time.perf_counter() - start
    texts = benign()
    start = time.perf_counter()
    fps = [t for t in texts if redact(t)[1]]
    benign_s = time.perf_counter() - start
    return {
        "redactor": name,
        "kinds": len(ks),
        "kinds_redacted_everywhere": caught_kinds,
        "pairs": pairs,
        "pairs_redacted": caught,
        "recall_redacted": round(caught / pairs, 4),
        "recall_flagged": round(flagged / pairs, 4),
        "benign": len(texts),
        "false_positives": len(fps),
        "fp_rate": round(len(fps) / len(texts), 4),
        "us_per_corpus_text": round(1e6 * corpus_s / pairs, 1),
        "us_per_benign_text": round(1e6 * benign_s / len(texts), 1),
        "missed_examples": missed[:10],
        "fp_examples": [t[:80] for t in fps[:8]],
    }


# Run in a fresh interpreter: the hook's own imports first (untimed; it pays them anyway),
# then the redactor's import and its first calls (rules compile on first use), in ms.
_COLD = """
import json, sys, time
import evolog.hook._content
texts = json.loads(sys.argv[1])
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
out = []
for text in texts:
    {call}
    out.append(time.perf_counter())
print(json.dumps([1000 * (t1 - t0)] + [1000 * (b - a) for a, b in zip([t1] + out, out)]))
"""
_REDACTORS = {
    "evolog": ("from evolog.hook._content import kept", "kept(text)"),
    "detect-secrets": (
        "from detect_secrets.core.scan import _process_line_based_plugins as scan\n"
        "from detect_secrets.settings import default_settings",
        "with default_settings(): list(scan(lines=[(1, text)], filename='hook.txt'))",
    ),
}


def _cold_ms(name: str, texts: list[str], repeat: int) -> dict[str, float]:
    """Import, then each first call, in a fresh interpreter (median of ``repeat``), in ms."""
    imports, call = _REDACTORS[name]
    code = _COLD.format(imports=imports, call=call)
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code, json.dumps(texts)],
                check=True, capture_output=True, text=True,
            ).stdout
        )
        for _ in range(repeat)
    ]  # fmt: skip
    medians = [round(statistics.median(r[i] for r in runs), 2) for i in range(len(runs[0]))]
    keys = ["import", *(f"call_{i + 1}" for i in range(len(texts)))]
    return dict(zip(keys, medians, strict=True))


def _adversarial(n: int) -> dict[str, str]:
    """Texts of ``n`` characters built to make a backtracking pattern rescan (the hook
    redacts up to 8000 characters a string)."""
    return {
        "word": "a" * n,
        "assignments": "password=x;" * (n // 11),
        "backslashes": "password=" + "\\" * n,
        "at signs in a url": "postgres://u:" + "a@" * (n // 2),
        "schemes": "a://b:" * (n // 6),
        "escaped quotes": 'password=\\"' + "\\\\" * (n // 2),
        "yaml block": "password: |\n" + "  x\n" * (n // 4),
        "name/value": "name: DB_PASSWORD\n" * (n // 18),
        "flags": "--password " * (n // 11),
        "htpasswd flags": "htpasswd" + " -b" * (n // 3),
        "pgpass-like": "a:1:b:c:" * (n // 8),
        "queries": "?token=" + "&token=" * (n // 7),
        "mixed": ('password: |\n  \\n key="a;b" --token x @ :// ' * (n // 40 + 1))[:n],
    }


def _worst_ms(n: int, repeat: int) -> dict[str, float]:
    out = {}
    for name, text in _adversarial(n).items():
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            kept(text)
            runs.append(time.perf_counter() - start)
        out[name] = round(1000 * statistics.median(runs), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results = [_score("evolog", _evolog)]
    ds_all, ds_regex = _detect_secrets(False), _detect_secrets(True)
    if ds_all is None or ds_regex is None:
        print(json.dumps({"detect-secrets": "not installed (pip install detect-secrets)"}))
    else:
        results.append(_score("detect-secrets", ds_all))
        results.append(_score("detect-secrets regex plugins", ds_regex))

        def both(text: str) -> tuple[str, set[int]]:
            mid, lines = _evolog(text)
            after, more = ds_regex(mid)
            return after, lines | more

        results.append(_score("evolog then ds regex plugins", both))
    for r in results:
        print(json.dumps(r))
    # A hook's texts: a command with no secret (most calls), then one with a secret, then a
    # tool's JSON output with one.
    (k,) = [k for k in kinds() if k.name == "stripe live secret key"]
    texts = [
        "cd /srv/app && pytest -q tests/test_api.py -x 2>&1 | tail -n 20",
        contexts(k)["command"],
        contexts(k)["json output"],
    ]
    names = ["evolog"] + (["detect-secrets"] if ds_all is not None else [])
    cold = {name: _cold_ms(name, texts, args.repeat) for name in names}
    print(json.dumps({"cold_ms_after_the_hook_imports": cold}))
    print(json.dumps({"evolog_ms_on_8000_char_adversarial_texts": _worst_ms(8000, args.repeat)}))


if __name__ == "__main__":
    main()
