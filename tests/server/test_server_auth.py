"""Who may call what: scoped bearer tokens, loopback-only without them, evolver's key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _server_util import JSON, READ_TOKEN, WRITE_TOKEN, client, new_store, tokens

from evolog.server import ConfigError, ServerConfig, Tokens, check_bind, load_tokens

KG_KEY = "kg-key-0123456789abcdef"


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_read_and_write_scopes(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store, tokens=tokens()) as c:
        event = b'{"kind":"tick"}'
        r = c.post("/v1/events", content=event, headers=JSON)
        assert r.status_code == 401 and r.json()["field"] == "Authorization"
        assert r.headers["www-authenticate"] == "Bearer"
        r = c.post("/v1/events", content=event, headers={**JSON, **_bearer(READ_TOKEN)})
        assert r.status_code == 403 and "write" in r.json()["error"]
        r = c.post("/v1/events", content=event, headers={**JSON, **_bearer("nope" * 8)})
        assert r.status_code == 401
        assert (
            c.post("/v1/events", content=event, headers={**JSON, **_bearer(WRITE_TOKEN)}).json()[
                "seq"
            ]
            == 1
        )
        assert c.get("/v1/events").status_code == 401
        assert c.get("/v1/events", headers=_bearer(READ_TOKEN)).status_code == 200
        assert c.get("/v1/events", headers=_bearer(WRITE_TOKEN)).status_code == 200
        assert c.get("/metrics").status_code == 401
        assert c.get("/healthz").status_code == 200  # liveness stays open
        # With tokens, any Host may be used (the token is the guard).
        assert (
            c.get(
                "/v1/stats", headers={**_bearer(READ_TOKEN), "host": "memory.example"}
            ).status_code
            == 200
        )


def test_without_tokens_only_loopback_hosts(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store) as c:
        assert c.get("/v1/stats").status_code == 200
        for host in ("localhost:8420", "[::1]:8420", "127.0.0.1"):
            assert c.get("/v1/stats", headers={"host": host}).status_code == 200, host
        r = c.get("/v1/stats", headers={"host": "attacker.example:8420"})
        assert r.status_code == 403 and r.json()["field"] == "Host"


def test_without_tokens_a_browser_page_elsewhere_is_refused(tmp_path: Path) -> None:
    # A cross-site page can POST to a loopback server without a preflight when it sends no
    # body (a dream of one domain needs none); its browser names the page in Origin.
    store = new_store(tmp_path / "s")
    with client(store) as c:
        for origin in ("https://attacker.example", "null", "http://127.0.0.1.example:8420"):
            r = c.post("/cte/domains/kitchen/dream", headers={"origin": origin})
            assert r.status_code == 403 and r.json()["field"] == "Origin", origin
            r = c.post("/v1/events", content=b'{"kind":"tick"}', headers={**JSON, "origin": origin})
            assert r.status_code == 403 and r.json()["field"] == "Origin", origin
        assert c.get("/v1/stats").json()["events"] == 0
        assert c.get("/cte/stats").json()["dream_cycles"] == 0
        for origin in ("http://localhost:5173", "http://127.0.0.1:8420", "http://[::1]"):
            r = c.post("/v1/events", content=b'{"kind":"tick"}', headers={**JSON, "origin": origin})
            assert r.status_code == 200, origin
    with client(store, tokens=tokens()) as c:  # with tokens, the bearer token is the guard
        headers = {**JSON, "origin": "https://app.example", **_bearer(WRITE_TOKEN)}
        assert c.post("/v1/events", content=b'{"kind":"tick"}', headers=headers).is_success


def test_kg_routes_take_evolvers_key(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s")
    with client(store, tokens=Tokens(kg=frozenset({KG_KEY}))) as c:
        body = {"signals": ["x"], "genes": []}
        assert c.post("/kg/advice", json=body).status_code == 401
        assert c.post("/kg/advice", json=body, headers=_bearer(KG_KEY)).status_code == 200
        # The evolver key opens /kg only; /v1 stays loopback-without-token here.
        assert c.get("/v1/stats").status_code == 200
    with client(store, tokens=Tokens(kg=frozenset({KG_KEY}), write=frozenset({WRITE_TOKEN}))) as c:
        assert c.get("/v1/stats", headers=_bearer(KG_KEY)).status_code == 403
        assert c.post("/kg/advice", json=body, headers=_bearer(WRITE_TOKEN)).status_code == 200


def test_public_bind_needs_a_long_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="loopback"):
        check_bind(ServerConfig(store=str(tmp_path), host="0.0.0.0"))
    with pytest.raises(ConfigError, match="at least 16"):
        check_bind(
            ServerConfig(
                store=str(tmp_path), host="0.0.0.0", tokens=Tokens(write=frozenset({"short"}))
            )
        )
    check_bind(ServerConfig(store=str(tmp_path), host="0.0.0.0", tokens=tokens()))
    for host in ("127.0.0.1", "::1", "localhost", "127.8.9.10"):
        check_bind(ServerConfig(store=str(tmp_path), host=host))


def test_token_file_and_environment(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# tokens\nread r-token\nwrite w-token  # a comment\nbare-token\n\n")
    got = load_tokens(str(path), {"EVOLOG_TOKEN": "env-w", "MEMORY_GRAPH_REMOTE_KEY": "kg"})
    assert got.read == {"r-token"} and got.write == {"w-token", "bare-token", "env-w"}
    assert got.kg == {"kg"}
    path.write_text("admin tok\n")
    with pytest.raises(ConfigError, match=r"tokens:1: expected 'read TOKEN'"):
        load_tokens(str(path), {})
    with pytest.raises(ConfigError, match="cannot read"):
        load_tokens(str(tmp_path / "missing"), {})


def test_refused_public_bind_leaves_no_store_behind(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = tmp_path / "never"
    env = {k: v for k, v in os.environ.items() if "TOKEN" not in k}
    done = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "serve", "--host", "0.0.0.0"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 2 and "expected a loopback address" in done.stderr
    assert done.stderr.count("\n") == 1 and not store.exists()
