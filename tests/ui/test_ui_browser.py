"""The viewer in a real browser: Debian's headless Chromium driven by Playwright loads each
view from a real worker on a store written by the worker's own hook route, steers (forget,
then undo it; undo a dream cycle), travels in time, follows the log live, and shows a bad
parameter's error, while every request that would leave loopback fails the test.

Screenshots go to ``$EVOLOG_TEST_ARTIFACTS/ui`` (else the test's tmp_path). Without the
browser or the driver the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _server_util import free_port
from _ui_util import EVOLOG, NOTE, build_store, events, ledger_entry, sessions

from evolog.worker import read_token

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
pytestmark = pytest.mark.xdist_group("ui_browser")


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    store = str(tmp_path_factory.mktemp("ui-browser") / "store")
    port = free_port()
    env = {**os.environ, "EVOLOG_WORKER_PORT": str(port)}

    def evolog(*args: str) -> dict[str, Any]:
        done = subprocess.run([EVOLOG, "--store", store, *args], env=env, capture_output=True,
                              text=True, check=True, timeout=120)  # fmt: skip
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    assert evolog("worker", "start", "--dream-after", "-1")["ready"] is True
    url = f"http://127.0.0.1:{port}"
    token = read_token(store)
    auth = {"authorization": f"Bearer {token}"}

    def hook(payload: dict[str, Any]) -> None:
        r = httpx.post(url + "/hook/claude-code", json=payload, headers=auth, timeout=60)
        assert r.status_code == 200, r.text

    try:
        build_store(store, hook)
        _wait(lambda: sum(e["kind"] == "outcome" for e in events(store)) == 2)
        dreamt = httpx.post(url + "/v1/dream", json={}, headers=auth, timeout=120)
        assert dreamt.status_code == 200, dreamt.text
        yield {"store": store, "url": url, "token": token, "hook": hook}
    finally:
        assert evolog("worker", "stop")["stopped"] is True


def _wait(done: Any, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        _missing(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (the dev extra)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        left: list[str] = []

        def guard(route: Any) -> None:
            host = urllib.parse.urlsplit(route.request.url).hostname
            if host != "127.0.0.1":
                left.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        context.route("**/*", guard)
        context.left = left
        try:
            yield context
        finally:
            context.close()
        assert left == [], f"requests left loopback: {left}"


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    base = os.environ.get("EVOLOG_TEST_ARTIFACTS")
    folder = Path(base) / "ui" if base else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(browser: Any, worker: dict[str, Any]) -> Any:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    page.goto(f"{worker['url']}/ui#token={worker['token']}")
    page.wait_for_selector('body[data-loaded^="timeline:"]')
    return page


def _show(page: Any, view: str) -> None:
    page.click(f'a.tab[data-view="{view}"]')
    page.wait_for_selector(f'.view[data-view="{view}"]')
    # Selectors, not wait_for_function: the page's CSP refuses the eval that needs.
    page.wait_for_selector(f'body[data-loaded^="{view}:"]')


def _note(store: str) -> str:
    (note,) = [e["id"] for e in events(store) if e["kind"] == "note" and e.get("text") == NOTE]
    return str(note)


def test_each_view_loads_and_recorded_text_stays_text(
    browser: Any, worker: dict[str, Any], shots: Path
) -> None:
    page = _open(browser, worker)
    assert page.locator(".session").count() == 2
    assert page.locator(".step.failed").count() == 1 and page.locator(".step.ok").count() == 2
    assert "Error 2 <script>" in page.locator(".step.failed .err").inner_text()
    assert page.title() == "evolog"  # the hostile error text never ran
    assert page.locator("main script, main img").count() == 0
    page.screenshot(path=str(shots / "timeline.png"), full_page=True)
    for view, plot in (("memory", "svg.plot polyline"), ("survival", "svg.plot polyline"),
                       ("edges", "svg.plot")):  # fmt: skip
        _show(page, view)
        assert page.locator(plot).count() >= 1, view
        page.screenshot(path=str(shots / f"{view}.png"), full_page=True)
    assert page.locator("main script, main img").count() == 0
    assert page.errors == []
    page.close()


def test_forget_from_the_page_then_undo_it(
    browser: Any, worker: dict[str, Any], shots: Path
) -> None:
    store, note = worker["store"], _note(worker["store"])
    page = _open(browser, worker)
    _show(page, "survival")
    page.click(f'tr[data-entry="{note}"] button[data-op="forget"]')
    page.wait_for_selector(f'tr.dead[data-entry="{note}"]')
    assert page.locator(f'tr.dead[data-entry="{note}"] .cause').inner_text() == "forgotten"
    assert ledger_entry(store, note)["cause"] == "forgotten"
    (forget,) = [e for e in events(store) if e["kind"] == "lifecycle"]
    assert (forget["op"], forget["entry"], forget["agent"]) == ("forget", note, "evolog-ui")
    page.screenshot(path=str(shots / "forgotten.png"), full_page=True)
    _show(page, "timeline")
    page.click(f'li.steer[data-id="{forget["id"]}"] button[data-op="retract"]')
    # the steering list, drawn again after the action (or by the live follower), names it
    page.wait_for_selector(f'li.steer:has-text("undo {forget["id"]}")')
    assert ledger_entry(store, note)["alive"]
    retraction = [e for e in events(store) if e["kind"] == "retraction"]
    assert [r["targets"] for r in retraction] == [[forget["id"]]]
    _show(page, "survival")
    assert page.locator(f'tr.alive[data-entry="{note}"]').count() == 1
    assert page.errors == []
    page.close()


def test_undo_a_dream_cycle_from_the_page(browser: Any, worker: dict[str, Any]) -> None:
    store = worker["store"]
    cycle = next(e["cycle"] for e in events(store) if e["kind"] == "dream_begin")
    page = _open(browser, worker)
    _show(page, "memory")
    assert page.locator("tr.mem.strategy").count() >= 1
    page.click(f'li.cycle[data-cycle="{cycle}"] button[data-op="undo"]')
    page.wait_for_selector(f'li.cycle[data-cycle="{cycle}"]:has-text("undone")')
    assert any(e["kind"] == "retraction" and e.get("target_cycle") == cycle
               for e in events(store))  # fmt: skip
    assert page.locator("tr.mem.strategy").count() == 0
    assert page.errors == []
    page.close()


def test_time_travel_bad_parameters_and_live_updates(
    browser: Any, worker: dict[str, Any], shots: Path
) -> None:
    page = _open(browser, worker)
    page.fill("#as_of", "2")
    page.click("#filters button[type=submit]")
    page.wait_for_selector('body[data-loaded="timeline:2"]')
    assert page.locator(".attempt").count() == 0
    page.fill("#as_of", "")
    page.fill('input[name="since"]', "yesterday")
    page.click("#filters button[type=submit]")
    page.wait_for_selector("#error:not([hidden])")
    assert page.locator("#error").inner_text() == (
        "422: since: expected an ISO-8601 time (YYYY-MM-DD[THH:MM[:SS]]); got 'yesterday'"
    )
    page.screenshot(path=str(shots / "bad-parameter.png"))
    page.fill('input[name="since"]', "")
    page.click("#live")
    page.wait_for_selector('#status:has-text("(live)")')
    before = page.locator(".attempt").count()
    for payload in sessions()[0]:
        worker["hook"]({**payload, "session_id": "sess-live"})
    # no click: the page follows the log's SSE and draws the timeline again
    page.wait_for_selector("text=session sess-live", timeout=60_000)
    assert page.locator(".attempt").count() == before + 1
    page.screenshot(path=str(shots / "live.png"), full_page=True)
    page.close()


def test_evolog_ui_gives_the_workers_page_with_its_token(
    browser: Any, worker: dict[str, Any], tmp_path: Path
) -> None:
    env = {**os.environ, "EVOLOG_WORKER_PORT": worker["url"].rsplit(":", 1)[1]}

    def ui(*args: str, store: str = worker["store"]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([EVOLOG, "--store", store, "ui", "--no-open", *args], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    hidden = json.loads(ui().stdout)
    assert hidden == {"url": worker["url"] + "/ui", "token": True, "opened": False}
    shown = json.loads(ui("--show-token").stdout)
    assert shown["url"] == f"{worker['url']}/ui#token={worker['token']}"
    page = browser.new_page()
    page.goto(shown["url"])  # the URL as printed opens the views, token and all
    page.wait_for_selector('body[data-loaded^="timeline:"]')
    assert page.locator(".session").count() >= 2
    page.close()
    none = ui(store=str(tmp_path / "elsewhere"))
    assert none.returncode == 2 and none.stderr.startswith(
        "evolog: error: no worker is running for the store"
    )
    bad = ui("--url", "ftp://host")
    assert bad.returncode == 2
    assert bad.stderr == "evolog: error: --url: expected http://HOST:PORT; got 'ftp://host'\n"
