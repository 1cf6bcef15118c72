"""A corpus of secrets in the places an agent's hook sees them, and of text that holds none.

Every value is fake but has its format (prefix, alphabet, length, checksum-free structure),
and is drawn at run time from a seeded generator, so no token-looking literal sits in the
repository for a scanner to flag. A :class:`Kind` is one sort of secret as it naturally
appears (``snippet``: ``sk_live_…``, ``DB_PASS=…``, ``mysql -p…``, a PGP key block), with
the random parts that must never be stored (``needles``). :func:`contexts` puts a snippet in
every place free text reaches the hook: a Bash command, a tool's JSON output, JSON nested in
JSON strings, an error message, a file's content, a prompt's prose, file and command as JSON
text (newlines escaped), a URL's query.

:func:`benign` is the other side: ordinary commands, hashes, UUIDs, git SHAs, base64 images
and prose about secrets, which a redaction must leave exactly as they are.

Used by tests/hook/test_redaction.py and bench/bench_redaction.py.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CONTEXTS", "MARKERS", "Kind", "benign", "contexts", "kinds", "windows"]

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
# Passwords people type: letters, digits and the punctuation that breaks naive patterns.
PUNCT = "/!#%^*()[]{}~+"


@dataclass(frozen=True)
class Kind:
    name: str
    snippet: str
    needles: tuple[str, ...]
    command: bool = False  # the snippet is itself a shell command
    token: str | None = None  # a bare value, for the URL context


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def password(self, n: int = 14, extra: str = "") -> str:
        # At least one of each class so it is a password, not a word.
        core = self.s(LOWER, 4) + self.s(DIGITS, 3) + self.s(UPPER, 3) + extra
        return core + self.s(ALNUM, max(n - len(core), 0))

    def b64_lines(self, lines: int, width: int = 64) -> list[str]:
        return [self.s(B64, width) for _ in range(lines)]


def _pem(label: str, g: _Gen) -> tuple[str, tuple[str, ...]]:
    body = g.b64_lines(5)
    head, foot = f"-----BEGIN {label}-----", f"-----END {label}-----"
    return "\n".join([head, *body, foot]), tuple(body)


def _pgp(g: _Gen) -> tuple[str, tuple[str, ...]]:
    body = g.b64_lines(6)
    crc = "=" + g.s(B64, 4)
    text = "\n".join(
        ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", *body, crc,
         "-----END PGP PRIVATE KEY BLOCK-----"]
    )  # fmt: skip
    return text, tuple(body)


def _putty(g: _Gen) -> tuple[str, tuple[str, ...]]:
    public = "AAAAC3NzaC1lZDI1NTE5AAAAI" + g.s(B64, 43)
    private = "AAAAI" + g.s(B64, 39) + "="
    mac = g.s(HEX, 64)
    text = "\n".join(
        ["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none",
         "Comment: eddsa-key-20261201", "Public-Lines: 2", public[:64], public[64:],
         "Private-Lines: 1", private, f"Private-MAC: {mac}"]
    )  # fmt: skip
    return text, (private, mac)


def kinds(seed: int = 26) -> list[Kind]:
    """The secret kinds, their values drawn from ``seed``."""
    g = _Gen(seed)
    out: list[Kind] = []

    def tok(name: str, value: str, template: str = "{}") -> None:
        out.append(Kind(name, template.format(value), (value,), token=value))

    def snip(name: str, snippet: str, *needles: str, command: bool = False) -> None:
        out.append(Kind(name, snippet, needles, command=command))

    # -- tokens with a format of their own -------------------------------------------------
    tok("aws access key id", "AKIA" + g.s(UPPER + "234567", 16))
    tok("aws temporary key id", "ASIA" + g.s(UPPER + "234567", 16))
    tok("github classic pat", "ghp_" + g.s(ALNUM, 36))
    tok("github oauth token", "gho_" + g.s(ALNUM, 36))
    tok("github app token", "ghs_" + g.s(ALNUM, 36))
    tok("github fine-grained pat", "github_pat_" + g.s(ALNUM, 22) + "_" + g.s(ALNUM, 59))
    tok("gitlab pat", "glpat-" + g.s(URLSAFE, 20))
    tok("openai project key", "sk-proj-" + g.s(URLSAFE, 48))
    tok("anthropic api key", "sk-ant-api03-" + g.s(URLSAFE, 93) + "AA")
    tok("stripe live secret key", "sk_live_" + g.s(ALNUM, 24))
    tok("stripe restricted key", "rk_live_" + g.s(ALNUM, 24))
    tok("stripe webhook secret", "whsec_" + g.s(ALNUM, 32))
    tok("google api key", "AIza" + g.s(URLSAFE, 35))
    tok("google oauth client secret", "GOCSPX-" + g.s(URLSAFE, 28))
    tok("google oauth access token", "ya29." + g.s(URLSAFE, 60))
    tok("hugging face token", "hf_" + g.s(UPPER + LOWER, 34))
    tok("sendgrid api key", "SG." + g.s(URLSAFE, 22) + "." + g.s(URLSAFE, 43))
    tok("npm access token", "npm_" + g.s(ALNUM, 36))
    tok("pypi upload token", "pypi-AgEIcHlwaS5vcmc" + g.s(URLSAFE, 70))
    tok("slack bot token", "xoxb-" + g.s(DIGITS, 12) + "-" + g.s(DIGITS, 13) + "-" + g.s(ALNUM, 24))
    tok("slack app token", "xapp-1-A" + g.s(UPPER + DIGITS, 10) + "-" + g.s(DIGITS, 13) + "-"
        + g.s(HEX, 64))  # fmt: skip
    tok("twilio api key", "SK" + g.s(HEX, 32))
    tok("mailgun api key", "key-" + g.s(HEX, 32))
    tok("mailchimp api key", g.s(HEX, 32) + "-us14")
    tok("shopify access token", "shpat_" + g.s(HEX, 32))
    tok("digitalocean token", "dop_v1_" + g.s(HEX, 64))
    tok("databricks token", "dapi" + g.s(HEX, 32))
    tok("doppler token", "dp.pt." + g.s(ALNUM, 43))
    tok("vault service token", "hvs." + g.s(URLSAFE, 90))
    tok("atlassian api token", "ATATT3xFfGF0" + g.s(URLSAFE, 180) + "=" + g.s(HEX, 8))
    tok("linear api key", "lin_api_" + g.s(ALNUM, 40))
    tok("postman api key", "PMAK-" + g.s(HEX, 24) + "-" + g.s(HEX, 34))
    tok("square access token", "EAAA" + g.s(URLSAFE, 60))
    tok("telegram bot token", g.s(DIGITS, 10) + ":AA" + g.s(URLSAFE, 33))
    tok("age secret key", "AGE-SECRET-KEY-1" + g.s(UPPER + DIGITS, 58))
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + g.s(URLSAFE, 40) + "."
           + g.s(URLSAFE, 43))  # fmt: skip
    out.append(Kind("jwt", jwt, (jwt.split(".", 1)[1],), token=jwt))

    # -- key blocks ------------------------------------------------------------------------
    for label in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY",
                  "ENCRYPTED PRIVATE KEY"):  # fmt: skip
        text, needles = _pem(label, g)
        snip(label.lower(), text, *needles)
    text, needles = _pgp(g)
    snip("pgp private key block", text, *needles)
    text, needles = _putty(g)
    snip("putty private key", text, *needles)
    pk_body = g.b64_lines(4)
    sa = json.dumps({
        "type": "service_account", "project_id": "demo-project",
        "private_key_id": (pk_id := g.s(HEX, 40)),
        "private_key": "-----BEGIN PRIVATE KEY-----\n" + "\n".join(pk_body)
        + "\n-----END PRIVATE KEY-----\n",
        "client_email": "ci@demo-project.iam.gserviceaccount.com",
    })  # fmt: skip
    snip("gcp service account json", sa, pk_id, *pk_body)

    # -- named in the text -----------------------------------------------------------------
    aws_secret = g.s(B64, 40)
    snip("aws secret key, space separated", f"aws_secret_access_key {aws_secret}", aws_secret)
    aws_secret2 = g.s(B64, 40)
    snip("aws credentials file", f"[default]\naws_access_key_id = AKIA{g.s(UPPER, 16)}\n"
         f"aws_secret_access_key = {aws_secret2}", aws_secret2)  # fmt: skip
    session = g.s(B64, 120)
    snip("aws session token env", f"AWS_SESSION_TOKEN={session}", session)
    for name in ("DB_PASS", "MYSQL_PWD", "REDIS_AUTH", "PGPASSWORD", "DJANGO_SECRET_KEY",
                 "SMTP_PASSWORD"):  # fmt: skip
        value = g.password(16)
        snip(f".env {name}=", f"{name}={value}", value)
    value = g.password(16, "/")
    snip(".env quoted with spaces", f'export DB_PASSWORD="{value[:8]} {value[8:]}"', value[:8],
         value[8:])  # fmt: skip
    value = g.password(24)
    snip("azure storage connection string",
         f"DefaultEndpointsProtocol=https;AccountName=demo;AccountKey={value}==;"
         "EndpointSuffix=core.windows.net", value)  # fmt: skip
    value = g.password(14)
    snip("odbc connection string", f"Server=db;Database=app;User Id=sa;Password={value};", value)
    value = g.s(ALNUM, 36)
    snip("npmrc _authToken", f"//registry.npmjs.org/:_authToken={value}", value)
    value = base64.b64encode(f"ci:{g.password(12)}".encode()).decode()
    snip("docker config auth", json.dumps({"auths": {"ghcr.io": {"auth": value}}}), value)
    value = g.password(14)
    snip("netrc", f"machine api.example.com login deploy password {value}", value)
    value = g.password(14)
    snip("yaml password", f"database:\n  user: app\n  password: {value}\n  port: 5432", value)
    value = g.s(ALNUM, 32)
    snip("http api key header", f"X-Api-Key: {value}", value)
    value = g.s(URLSAFE, 40)
    snip("bearer header", f"Authorization: Bearer {value}", value)
    value = base64.b64encode(f"admin:{g.password(12)}".encode()).decode()
    snip("basic auth header", f"Authorization: Basic {value}", value)
    value = g.s(ALNUM, 32)
    snip("session cookie", f"Cookie: sessionid={value}; csrftoken={g.s(ALNUM, 8)}", value)

    # -- in URLs ---------------------------------------------------------------------------
    value = g.password(14, "/")
    snip("url password with /", f"postgres://app:{value}@db.internal:5432/app", value)
    value = g.password(14)
    snip("url password", f"git clone https://deploy:{value}@git.example.com/team/app.git",
         value, command=True)  # fmt: skip
    value = g.s(HEX, 32)
    snip("sentry dsn", f"https://{value}@o{g.s(DIGITS, 6)}.ingest.sentry.io/{g.s(DIGITS, 7)}",
         value)  # fmt: skip
    value = g.s(URLSAFE, 43)
    snip("azure sas signature", f"https://demo.blob.core.windows.net/c/f.zip?sv=2022-11-02&"
         f"se=2026-12-31&sp=r&sig={value}%3D", value)  # fmt: skip
    value = g.s(ALNUM, 32)
    snip("url query api key", f"https://api.example.com/v2/geo?q=paris&api_key={value}", value)
    value = g.s(ALNUM, 24)
    snip(
        "slack webhook url",
        f"https://hooks.slack.com/services/T{g.s(UPPER, 8)}/B{g.s(UPPER, 10)}/{value}",
        value,
    )
    value = g.s(URLSAFE, 68)
    snip("discord webhook url", f"https://discord.com/api/webhooks/{g.s(DIGITS, 18)}/{value}",
         value)  # fmt: skip

    # -- on a command line -----------------------------------------------------------------
    value = g.password(14, "!")
    snip("curl -u", f"curl -u admin:{value} https://ci.example.com/api/json", value,
         command=True)  # fmt: skip
    value = g.password(12)
    snip("mysql -pX", f"mysql -u root -p{value} -h 127.0.0.1 app < dump.sql", value,
         command=True)  # fmt: skip
    value = g.password(12)
    snip("--password X", f"psql-wrapper --host db --password {value} --db app", value,
         command=True)  # fmt: skip
    value = g.password(12)
    snip("--password=X", f"pg_dump --password={value} app > app.sql", value, command=True)
    value = g.password(12)
    snip("sshpass -p", f"sshpass -p {value} ssh deploy@10.0.0.5 uptime", value, command=True)
    value = g.password(12)
    snip("docker login -p", f"docker login -u ci -p {value} registry.example.com", value,
         command=True)  # fmt: skip
    value = g.password(12)
    snip("openssl pass:", f"openssl pkcs12 -export -in c.pem -passout pass:{value} -out c.p12",
         value, command=True)  # fmt: skip
    value = g.password(12)
    snip("smbclient user%pass", f"smbclient //fs/share -U backup%{value} -c ls", value,
         command=True)  # fmt: skip
    value = g.s(ALNUM, 40)
    snip("--token X", f"gh-release upload --token {value} dist/app.tar.gz", value,
         command=True)  # fmt: skip

    # -- holes found by attacking the rules (each failed before its fix) --------------------
    value = g.password(14)
    snip("url password with @", f"redis://default:{value[:7]}@{value[7:]}@cache:6379/0",
         value[:7], value[7:])  # fmt: skip
    value = g.s(DIGITS, 10) + ":AA" + g.s(URLSAFE, 33)
    snip("telegram bot api url", f"https://api.telegram.org/bot{value}/getUpdates", value)
    value = g.password(12, "#")
    snip("prose 'password is'", f"my password is {value} if you need it", value)
    value = g.s(B64, 40)
    snip("aws configure prompt", f"AWS Secret Access Key [None]: {value}", value)
    value = g.password(14)
    snip("makefile :=", f"DB_PASSWORD := {value}", value)
    value = g.password(14)
    snip("pgpass line", f"db.internal:5432:app:app:{value}", value)
    value = g.password(12)
    snip("htpasswd -b", f"htpasswd -b /etc/nginx/.htpasswd admin {value}", value, command=True)
    value = g.password(12)
    snip("echo | sudo -S", f"echo '{value}' | sudo -S systemctl restart app", value,
         command=True)  # fmt: skip
    value = g.password(14)
    snip("kubectl --from-literal", f"kubectl create secret generic db "
         f"--from-literal=password={value}", value, command=True)  # fmt: skip
    value = g.password(14)
    snip("docker -e", f"docker run -e POSTGRES_PASSWORD={value} -d postgres:16", value,
         command=True)  # fmt: skip
    # Third round: values with separators in them, config formats, more command lines.
    value = g.password(14)
    snip("password holding ; and &", f"REDIS_PASSWORD={value[:4]};{value[4:9]}&{value[9:]}",
         value[:4], value[4:9], value[9:])  # fmt: skip
    value = g.password(14)
    snip("password holding a backslash", f"DB_PASS={value[:6]}\\{value[6:]}", value[:6],
         value[6:])  # fmt: skip
    value = g.password(16)
    snip("yaml block scalar", f"db:\n  password: |\n    {value}", value)
    value = g.password(14)
    snip("xml element", f"<datasource><password>{value}</password></datasource>", value)
    value = g.password(14)
    snip("xml add key value", f'<add key="DbPassword" value="{value}" />', value)
    value = g.password(14)
    snip("php define", f"define('DB_PASSWORD', '{value}');", value)
    value = g.password(14)
    snip("kubernetes env name/value", f"env:\n  - name: DB_PASSWORD\n    value: {value}", value)
    value = g.password(14)
    snip("ecs env name/value", json.dumps({"name": "API_TOKEN", "value": value}), value)
    body = "b3BlbnNzaC1rZXktdjEAAAAA" + g.s(B64, 40)
    rest = g.s(B64, 64)
    snip("openssh key body without armour", f"{body}\n{rest}", body[24:], rest)
    value = g.password(12)
    snip("redis-cli -a", f"redis-cli -h cache -a {value} ping", value, command=True)
    value = g.password(12)
    snip("--db-pass flag", f"./migrate --db-user app --db-pass {value} up", value, command=True)
    return out


# -- the places a snippet reaches the hook ----------------------------------------------------
def _command(k: Kind) -> str:
    if k.command:
        return f"cd /srv/app && {k.snippet} 2>&1 | tail -n 20"
    return f"cat > /srv/app/config.txt <<'EOF'\n{k.snippet}\nEOF"


def _json_output(k: Kind) -> str:
    return json.dumps({"status": "ok", "items": [{"id": 1, "config": k.snippet}], "n": 1})


def _nested_json(k: Kind) -> str:
    inner = json.dumps({"detail": k.snippet, "code": 401})
    return json.dumps({"message": json.dumps({"body": inner, "status": 401})})


def _error(k: Kind) -> str:
    return (
        f"Error: request rejected (401 Unauthorized) while using {k.snippet}\n"
        "    at Client.send (/srv/app/node_modules/client/index.js:42:11)"
    )


def _file(k: Kind) -> str:
    return f"# generated, do not edit\nLOG_LEVEL=info\n{k.snippet}\nTIMEOUT=30\n"


def _prose(k: Kind) -> str:
    return f"the deploy fails; here is what I have: {k.snippet} -- can you fix it?"


def _escaped(k: Kind) -> str:
    # The text as JSON text (a tool printing a file as JSON; the dead letter's raw payload):
    # newlines become "\\n" and a line's first word follows an "n".
    return json.dumps({"file": {"content": _file(k)}, "command": _command(k)})


def _url(k: Kind) -> str:
    return f"curl -s 'https://api.example.com/v1/items?page=2&access_token={k.token}'"


CONTEXTS: dict[str, Callable[[Kind], str]] = {
    "command": _command,
    "json output": _json_output,
    "nested json": _nested_json,
    "error": _error,
    "file": _file,
    "prose": _prose,
    "escaped json text": _escaped,
    "url": _url,
}


# Text of each context that no redaction should touch: a redactor that cut everything
# would have no leaks, so the tests also ask that these survive.
MARKERS: dict[str, str] = {
    "command": "EOF",
    "json output": '"n": 1}',
    "nested json": ": 401}",
    "error": "index.js:42:11)",
    "file": "TIMEOUT=30",
    "prose": "can you fix it?",
    "escaped json text": "TIMEOUT=30",
    "url": "page=2",
}


def contexts(k: Kind) -> dict[str, str]:
    """``k``'s snippet in every place (the URL one only for a bare token)."""
    return {name: f(k) for name, f in CONTEXTS.items() if name != "url" or k.token}


def windows(needle: str, width: int = 10) -> list[str]:
    """The needle and its distinctive pieces: a secret cut at any point must not survive."""
    if len(needle) <= width:
        return [needle]
    step = max((len(needle) - width) // 4, 1)
    starts = sorted({*range(0, len(needle) - width + 1, step), len(needle) - width})
    return [needle, *(needle[i : i + width] for i in starts)]


# -- what must stay as it is ---------------------------------------------------------------
def benign(seed: int = 26) -> list[str]:
    """Text with no secret: commands, hashes, ids, images, prose naming secrets."""
    g = _Gen(seed)
    rng = random.Random(seed)
    fixed = [
        "git log --oneline -n 20", "pytest -q tests/test_token.py -x", "mkdir -p build/out",
        "docker run -p 8080:80 -e MODE=dev nginx:1.27", "ssh -p 2222 deploy@10.0.0.5 uptime",
        "psql -h localhost -U postgres -p 5432 app", "mysql -u root -p app",
        "docker login --password-stdin -u ci registry.example.com", "npm install --save-dev tsc",
        "grep -rn password src/ | head", 'git commit -m "rotate the token handling"',
        "max_tokens=2048", "PWD=/home/me", "export PATH=/usr/local/bin:$PATH",
        "http://localhost:8080/api/v1/health", "git clone git@github.com:org/repo.git",
        "ssh://git@git.example.com:22/team/repo.git", "mail me at ops@example.com",
        "sorted(rows, key=len)", '{"key": "name", "value": "ada"}', "primary_key=id",
        "the password reset email never arrives", "Authorization required (401)",
        "tokenizer.json not found", "KeyError: 'secret_name'", "3 passed, 1 skipped in 0.42s",
        "ERROR: relation \"users\" does not exist", "cat ~/.ssh/id_ed25519.pub",
        "ls -la /etc/ssl/private", "python -m http.server 8000", "kubectl get secrets -n prod",
        "aws s3 ls s3://bucket/path/", "curl -sSf https://example.com/install.sh | sh",
        "SELECT id, token_count FROM usage WHERE day = '2026-12-01'",
        "the api key is read from the environment (ANTHROPIC_API_KEY)",
        "jq '.items[] | .id' out.json", "tar -xzf app-1.2.3.tar.gz -C /opt",
        "rsync -avz -e 'ssh -p 22' dist/ host:/srv/", "git push origin HEAD:refs/heads/main",
        "--password-file /run/secrets/db", "make -j4 CFLAGS=-O2",
        "https://user@example.com/login", "BASE_URL=https://api.example.com:8443/v1",
        "https://example.com:8443/path?email=a@b.com", "password:", "token expired, retrying",
        "-----BEGIN PUBLIC KEY-----",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKq user@host", "node --max-old-space-size=4096",
        "src/app.py:12:5: error: undefined name 'x'", "tests/test_x.py:42: AssertionError",
        "the token is expired", "password is required", "echo hello | sudo tee /etc/motd",
        "htpasswd -c .htpasswd admin && ls", "mac 00:11:22:33:44:55 up", "at 12:30:45 UTC",
        "ipv6 fe80::1:2:3:4 link", "listening on 0.0.0.0:8080",
    ]  # fmt: skip
    generated: list[str] = []
    for _ in range(10):
        generated += [
            f"commit {g.s(HEX, 40)}", f"sha256:{g.s(HEX, 64)}",
            str(uuid.UUID(int=rng.getrandbits(128))),
            f"docker pull app@sha256:{g.s(HEX, 64)}", f"git checkout {g.s(HEX, 12)}",
            f"request id {uuid.UUID(int=rng.getrandbits(128))} took 42 ms",
            "data:image/png;base64," + base64.b64encode(rng.randbytes(300)).decode(),
            f"md5 {g.s(HEX, 32)}  dist/app.whl", f"integrity sha512-{g.s(B64, 86)}==",
        ]  # fmt: skip
    return fixed + generated
