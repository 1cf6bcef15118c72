"""Secret redaction for whatever free text the hook keeps (prompts, commands, errors, results,
dead letters).

Rules, each replacing the secret (never its label) with ``[REDACTED]``:

- private key blocks (PEM of any label, PGP ``PRIVATE KEY BLOCK``, PuTTY key files), whole;
- tokens whose format names them: AWS key ids, GitHub, GitLab, OpenAI, Anthropic, Stripe,
  Slack, Google (``AIza``, ``GOCSPX-``, ``ya29.``), Hugging Face, SendGrid, npm, PyPI,
  Twilio, Mailgun, Mailchimp, Shopify, DigitalOcean, Databricks, Doppler, Vault, Atlassian,
  Linear, Postman, Square, Telegram, age keys, JWTs;
- credentials in URLs (``scheme://user:pass@``, even with ``/`` in the password;
  ``scheme://<long token>@``), in query parameters named like a secret, and in Slack and
  Discord webhook paths;
- values assigned to a name that says secret (password, passwd, pwd, pass, passphrase,
  secret, token, auth, api key, access key, private or account key, credential; any
  ``*_key`` when the value is long and has a digit) in ``NAME=value``, ``name: value``,
  JSON (also JSON escaped inside JSON strings), or ``name <value>`` for a value that looks
  generated;
- ``Authorization``/``Cookie`` header values, ``bearer``/``basic``/``token <value>``;
- command lines: ``--password X`` and other secret-named flags, ``curl -u user:pass``,
  ``mysql -pX``, ``sshpass -p X``, ``docker login -p X``, ``openssl -pass pass:X``,
  ``smbclient -U user%pass``, ``htpasswd -b file user X``, ``echo X | sudo -S``;
- files and prompts: ``.netrc`` and ``.pgpass`` lines, "password is X" (X with a digit or
  a symbol), ``Secret Access Key [None]: X``, YAML block scalars under a secret name, XML
  ``<password>`` elements and ``key="…Password" value=`` attributes, ``define('NAME', 'x')``
  and ``env["NAME"] = "x"``, name/value pairs (Kubernetes env, ECS), an OpenSSH key's
  base64 body without its armour; ``redis-cli -a X``.

A rule runs only when one of its (lower-case) trigger substrings occurs in the text, and is
compiled on first use: most text triggers a few rules, and a cold hook pays for those only.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["REDACTED", "is_secret_name", "redact"]

REDACTED: Final = "[REDACTED]"
_KEY: Final = "[REDACTED PRIVATE KEY]"

# A closing or opening quote, escaped to any depth (JSON inside JSON strings).
# (Bounded: a run of backslashes with no quote after it must not be rescanned from every
# backslash; 32 is JSON nested five deep.)
_Q = r"""\\{0,32}["']"""
_STRONG = (
    r"password|passwd|passphrase|secret|token(?!s\b|s_|iz)|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|account[_-]?key|credentials?|session[_-]?key"
)
# A name holding a strong word anywhere, or ending in a short one after a separator
# (DB_PASS, MYSQL_PWD, REDIS_AUTH), or being one (npm's _auth, docker's auth). A bare
# ``pwd`` is the working directory (PWD=/home/me), not a password.
_NAME = (
    rf"(?:[\w.-]*(?:{_STRONG})[\w.-]*|[\w.-]*[_.-](?:pass|pwd|pw|auth|pin|pat)"
    r"|_?auth|pass)(?![\w.-])"
)
# An unquoted value runs to a space or a quote. A backslash that is no JSON escape, and a
# ";", "," or "&" that does not start the next field ("x;Server=db", "x, user=y", a JSON
# member), are part of it: a password may hold them, and its tail must not stay behind.
_UNQUOTED = (
    r"""(?![{\[])(?:[^\s"'`,;\\&<>]|(?:\\\\)+(?![\\"'])|\\(?![nrtbfu"'\\/])"""
    r"""|[,;&](?!\s*(?:[\w. -]+=|\\{0,32}["'{\[]|$)))++"""
)
# The value after an opening quote runs to the same quote (as escaped as it opened).
_QUOTED_OR_NOT = rf"(?(q)(?:(?!(?P=q))[^\n])+|{_UNQUOTED})"
_VALUE = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'"\\]+)"""
_GENERATED = r"(?=[\w/+=.-]*\d)(?=[\w/+=.-]*[A-Za-z])[\w/+=.-]{16,}"
# The rest of a command line, lazily: not past a newline, escaped ("\\n" in JSON text) or not,
# else a rule could reach into the next line and cut a word another rule needs.
_CMD_TAIL = r"(?:(?!\\n)[^\n|;&])*?"
# Where a token may start: not inside a word, but also right after an escaped newline or tab
# (in JSON text a line "AKIA..." of a file reads "\\nAKIA...", and "n" is a word character).
_B = r"(?:(?<!\w)|(?<=\\[nrt]))"

_TOKENS: Final = (
    (("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "apka"),
     _B + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[0-9A-Z]{16}\b"),
    (("gh",), _B + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})"),
    (("gl",), _B + r"gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|agent)-[\w-]{20,}"),
    (("sk-",), _B + r"sk-[\w-]{16,}"),
    (("sk_", "rk_", "whsec_"),
     _B + r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
    (("xox", "xapp-"), _B + r"(?:xox[abposre]-[\w-]{10,}|xapp-\d-[\w-]{10,})"),
    (("aiza", "gocspx-", "ya29."), _B + r"(?:AIza[\w-]{35}|GOCSPX-[\w-]{24,}|ya29\.[\w-]{20,})"),
    (("hf_",), _B + r"hf_[A-Za-z]{30,}\b"),
    (("sg.",), _B + r"SG\.[\w-]{22}\.[\w-]{43}\b"),
    (("npm_",), _B + r"npm_[A-Za-z0-9]{36}\b"),
    (("pypi-",), _B + r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}"),
    (("sk",), _B + r"SK[0-9a-fA-F]{32}\b"),
    (("key-",), _B + r"key-[0-9a-zA-Z]{32}\b"),
    (("-us",), _B + r"[0-9a-f]{32}-us\d{1,2}\b"),
    (("shp",), _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    (("_v1_",), _B + r"do[por]_v1_[a-f0-9]{64}\b"),
    (("dapi",), _B + r"dapi[0-9a-f]{32}(?:-\d+)?\b"),
    (("dp.",), _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    (("hvs.", "hvb.", "hvr."), _B + r"hv[sbr]\.[\w-]{24,}"),
    (("atatt",), _B + r"ATATT3[\w=-]{50,}"),
    (("lin_",), _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),
    (("pmak-",), _B + r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}\b"),
    (("eaaa", "sq0"), _B + r"(?:EAAA[\w-]{60}|sq0(?:atp|csp)-[\w-]{22,})"),
    ((":aa",), r"(?:(?<!\w)|(?<=\\[nrt])|(?<=bot))\d{8,10}:AA[\w-]{33}\b"),
    (("age-secret-key-",), _B + r"AGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    (("eyj",), _B + r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}"),
)  # fmt: skip

_RULES: Final = (
    # Blocks first: their bodies hold words the finer rules would cut into pieces.
    (("private key",),
     r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
     r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", _KEY),
    (("putty-user-key-file",),
     r"PuTTY-User-Key-File-\d+:[\s\S]*?(?:Private-MAC:\s*[0-9a-fA-F]+|\Z)", _KEY),
    *((t, p, REDACTED) for t, p in _TOKENS),
    # URLs: a password (may hold "/", not a port), a long bare token as the user.
    (("://",),
     r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@'\"\\]+:)(?!\d{1,5}(?:[/?#'\"\\\s]|$))"
     r"(?:[^\s@'\"\\]|@(?=[^\s/@'\"\\]*@)){1,256}+(?=@)", rf"\1{REDACTED}"),
    (("://",), r"(?i)\b([a-z][a-z0-9+.-]*://)[\w-]{20,256}+(?=@)", rf"\1{REDACTED}"),
    (("hooks.slack.com",), r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/+-]+",
     rf"\1{REDACTED}"),
    (("/api/webhooks/",), r"(discord(?:app)?\.com/api/webhooks/\d+/)[\w-]+", rf"\1{REDACTED}"),
    (("token", "key", "secret", "passw", "sig", "auth", "credential"),
     r"(?i)([?&][\w.-]*(?:token|key|secret|passw(?:or)?d|sig|signature|auth|credential)"
     r"[\w.-]*=)[^&\s\"'#\\]+", rf"\1{REDACTED}"),
    # Headers.
    (("authorization",),
     r"(?i)" + _B + rf"((?:proxy-)?authorization(?:{_Q})?\s*[:=]\s*(?:{_Q})?(?:[a-z][\w-]*\s+)?)"
     r"[^\s\"'\\,;]+", rf"\1{REDACTED}"),
    (("cookie",), r"(?i)" + _B + rf"((?:set-)?cookie(?:{_Q})?\s*[:=]\s*(?:{_Q})?)"
     r"[^\s\"'\\;]+(?:;[ \t]*[^\s\"'\\;]+)*;?", rf"\1{REDACTED}"),
    (("bearer", "basic", "token"),
     r"(?i)" + _B + r"((?:bearer|basic|token)\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{12,}",
     rf"\1{REDACTED}"),
    # Command lines.
    (("pass", "secret", "token", "key", "cookie"),
     r"(?i)(?<![\w-])(--?(?![\w-]*(?:stdin|file|path|env|name|length|prompt|cmd|command|dir"
     r"|count|limit|type|expir)\b)[\w-]*(?:password|passwd|passphrase|secret|token(?!s|iz)"
     r"|api-?key|access-?key|auth-?key|cookie|(?<=[-_])pass(?![a-z]))[\w-]*(?:\s+|=))(?!-)"
     + _VALUE,
     rf"\1{REDACTED}"),
    (("redis-cli",), _B + rf"(redis-cli\b{_CMD_TAIL}\s-a\s+)" + _VALUE, rf"\1{REDACTED}"),
    (("curl",),
     r"(?i)" + _B + rf"(curl\b{_CMD_TAIL}\s(?:-u\s*|--(?:proxy-)?user[=\s]\s*)['\"]?[^\s:'\"]*:)"
     r"[^\s'\"]+", rf"\1{REDACTED}"),
    (("mysql", "mariadb"),
     _B + rf"((?i:mysql\w*|mariadb\w*|mycli)\b{_CMD_TAIL}\s-p)(?=[^\s-])" + _VALUE,
     rf"\1{REDACTED}"),
    (("sshpass",), _B + rf"(sshpass\b{_CMD_TAIL}\s-p\s*)" + _VALUE, rf"\1{REDACTED}"),
    (("login",),
     _B + rf"((?:docker|podman|buildah|skopeo|helm|nerdctl|oras)\b{_CMD_TAIL}\blogin\b"
     rf"{_CMD_TAIL}\s-p\s+)" + _VALUE, rf"\1{REDACTED}"),
    (("pass:",), r"(-pass(?:in|out|word)?\s+['\"]?pass:)[^\s'\"]+", rf"\1{REDACTED}"),
    (("smbclient",),
     _B + rf"(smbclient\b{_CMD_TAIL}\s(?:-U|--user(?:name)?)[=\s]\s*['\"]?[^\s%'\"]+%)"
     r"[^\s'\"]+", rf"\1{REDACTED}"),
    (("password",),
     r"(?i)(" + _B + r"(?:machine|default)\b(?:(?!\\n)[^\n])*?\bpassword\s+)[^\s'\"\\]+",
     rf"\1{REDACTED}"),
    (("password",), r"(?im)(?:^|(?<=\\n))(\s*password\s+)[^\s'\"\\]+(?=\s*$|\\n)",
     rf"\1{REDACTED}"),
    # Prose and prompts: "my password is X", "AWS Secret Access Key [None]: X".
    (("pass", "secret", "token", "pin", "key"),
     r"(?i)" + _B + r"((?:password|passphrase|passwd|pin|token|secret|api key)\s+(?:is|was)\s+"
     r"['\"]?)(?=\S*[\d!#$%^&*@/+=])[^\s'\"\\]{6,}", rf"\1{REDACTED}"),
    (("access key",),
     r"(?i)" + _B + r"((?:secret\s+access\s+key|access\s+key\s+id)\s*(?:\[[^\]\n]*\])?\s*"
     r"[:=]\s*)[^\s'\"\\]+", rf"\1{REDACTED}"),
    # .pgpass (host:port:db:user:password), htpasswd -b, a password piped to sudo -S.
    ((":",),
     r"((?:(?<![\w.:/\\-])|(?<=\\n))[\w.-]+:(?:\d+|\*):[^\s:]+:[^\s:]+:)[^\s:'\"\\]+"
     r"(?=[\s'\"\\]|$)", rf"\1{REDACTED}"),
    (("htpasswd",),
     _B + r"(htpasswd(?=(?:\s+-\w+){0,8}?\s+-[a-zA-Z]*b)(?:\s+-\w+)++\s+[^\s-]\S*\s+\S+\s+)"
     + _VALUE,
     rf"\1{REDACTED}"),
    (("sudo",),
     _B + r"((?:echo|printf)\s+(?:-\w+\s+)*)" + _VALUE
     + r"(?=\s*\|\s*sudo\s+(?:-\w+\s+)*-\w*S)", rf"\1{REDACTED}"),
    # Config formats where the name and the value are apart: YAML block scalars, XML
    # elements and add/key/value attributes, define('NAME', 'x') and env["NAME"] = "x",
    # name/value pairs (Kubernetes env, ECS task definitions).
    (("pass", "pwd", "secret", "token", "key", "credential", "auth"),
     rf"(?i)(?<![\w.-])({_NAME}\s*:\s*[|>][-+]?[ \t]*(?:\n|\\{{1,32}}n))"
     r"(?:[ \t]+(?:(?!\\{1,32}n|\\{0,32}\")[^\n])+(?:\n|\\{1,32}n))*"
     r"[ \t]+(?:(?!\\{1,32}n|\\{0,32}\")[^\n])+"
     r"(\n|\\{1,32}n|\\{0,32}\"|$)",
     rf"\1  {REDACTED}\2"),
    (("pass", "pwd", "secret", "token", "key", "credential", "auth"),
     rf"(?i)(<({_NAME})\b[^>]*>)[^<]+(?=</)", rf"\1{REDACTED}"),
    (("pass", "pwd", "secret", "token", "key", "credential", "auth"),
     rf"(?i)(\bkey\s*=\s*{_Q}[^\"'\n]*(?:{_STRONG}|pass|pwd)[^\"'\n]*{_Q}\s+value\s*=\s*{_Q})"
     r"[^\"'\\\n]+", rf"\1{REDACTED}"),
    (("pass", "pwd", "secret", "token", "key", "credential", "auth"),
     rf"(?i)({_Q}{_NAME}{_Q}\s*(?:,|=>|\]\s*\|*=|\)\s*[:=]|:=)\s*{_Q})[^\"'\\\n]++"
     rf"(?!{_Q}\s*:)", rf"\1{REDACTED}"),
    (("pass", "pwd", "secret", "token", "key", "credential", "auth"),
     rf"(?i)(\bname(?:{_Q})?\s*[:=]\s*(?:{_Q})?{_NAME}(?:{_Q})?(?:\s*,\s*|\s*(?:\n|\\{{1,32}}n)\s*(?:-\s*)?)"
     rf"(?:{_Q})?value(?:{_Q})?\s*[:=]\s*(?:{_Q})?)[^\s\"'\\,}}]+", rf"\1{REDACTED}"),
    # An OpenSSH private key's base64 body without its armour ("openssh-key-v1").
    (("b3blbnnzac1rzxktdje",),
     r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*(?:(?:\s|\\{1,32}n)+[A-Za-z0-9+/=]{20,})*", _KEY),
    # Assignments: NAME=value, name: value, "name": "value" (escaped to any depth).
    (("pass", "pwd", "secret", "token", "key", "credential", "auth", "_pw", "-pw", ".pw",
      "pin", "pat"),
     rf"(?i)(?<![\w.-])({_NAME}(?:{_Q})?\s*(?:[:?+]?=|:)\s*(?P<q>{_Q})?)" + _QUOTED_OR_NOT,
     rf"\1{REDACTED}"),
    ((";pwd", "; pwd"), r"(?i)(;\s*pwd\s*=\s*)[^;\s\"'\\]+", rf"\1{REDACTED}"),
    (("key",), rf"(?i)(?<![\w.-])([\w.-]*[_.-]?key(?:{_Q})?\s*[=:]\s*(?:{_Q})?){_GENERATED}",
     rf"\1{REDACTED}"),
    # A secret-named word then a value that looks generated (aws_secret_access_key VALUE).
    (("pass", "secret", "token", "key", "credential"),
     rf"(?i)(?<![\w.-])({_NAME}|[\w.-]*[_-]key)(?:{_Q})?(\s+){_GENERATED}", rf"\1\2{REDACTED}"),
)  # fmt: skip


def redact(text: str) -> str:
    """``text`` with the secrets the rules recognise replaced (see the module docstring)."""
    lowered = text.lower()
    for i, (triggers, _, _) in enumerate(_RULES):
        if any(t in lowered for t in triggers):
            pattern, replacement = _rule(i)
            text = pattern.sub(replacement, text)
    return text


@functools.cache
def _rule(i: int) -> tuple[re.Pattern[str], str]:
    _, source, replacement = _RULES[i]
    return re.compile(source), replacement


def is_secret_name(name: str) -> bool:
    """Whether a key's name says its value is a secret (``password``, ``DB_PASS``, ``token``)."""
    return _name().fullmatch(name) is not None


@functools.cache
def _name() -> re.Pattern[str]:
    return re.compile(f"(?i){_NAME}")
