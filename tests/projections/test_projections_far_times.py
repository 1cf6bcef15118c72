"""A log that already holds an event time outside 1970-9999 (written before times were
checked, or by hand) must not break any reader: ``sql``, ``edges``, ``advise``, ``ledger``,
``route``, ``dream``'s traces. Such times are shown exactly (ISO text with an expanded
year where ``datetime`` cannot hold them); edges count the outcome as of the nearest time
the log accepts.
"""

from __future__ import annotations

import json
from pathlib import Path

import evolog.eventlog.wal._prepare as prepare
import pytest
from evolog.advice.evolver._export import iso_ms
from evolog.eventlog import Attempt, EventLog, Outcome, Signal
from evolog.projections._api import Projections
from evolog.projections._timefmt import iso_date, iso_us, py_rows

from evolog import Memory
from evolog.cli._main import main

T0 = 1_767_225_600_000_000
YEAR_10000 = 253_402_300_800_000_000  # the first µs the log refuses today
FAR = [YEAR_10000 + 5, 2**63 - 1, -1, -(2**63) + 1]
TS_MAX = 253_402_300_799_999_999


def _write(root: Path, far: int, *, sealed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store whose outcome (and its attempt) happened at ``far``, appended as an older
    version would have: with the envelope check switched off."""
    with monkeypatch.context() as m:
        m.setattr(prepare, "_envelope_ok", lambda event: True)
        m.setattr(prepare, "_check_envelope", lambda event, where: None)
        with EventLog(root, create=True, durability="none", auto_seal="off") as log:
            log.append_many(
                [
                    Signal(signals=["boom"], ts=T0, agent="x"),
                    Attempt(action_id="a1", signals=["boom"], key="k", gene="g", ts=T0 + 1),
                    Outcome(action_id="a1", key="k", gene="g", status="success", ts=far),
                    Attempt(action_id="a2", signals=["boom"], key="k", gene="g", ts=far),
                    Outcome(action_id="a2", key="k", gene="g", status="failed", ts=T0 + 3),
                ]
            )
            if sealed:
                log.seal()
    with EventLog(root) as log:
        assert [e.ts for e in log.replay()][2] == far  # the time really is in the log


@pytest.fixture(params=[(far, sealed) for far in FAR for sealed in (False, True)])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    far, sealed = request.param
    root = tmp_path / "store"
    _write(root, far, sealed=sealed, monkeypatch=monkeypatch)
    return str(root)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_cli_readers_answer(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with EventLog(store) as log:
        far = [e.ts for e in log.replay()][2]
    for fmt in ("table", "csv", "json"):
        out = _cli(capsys, "--store", store, "sql", "SELECT * FROM events", "--format", fmt)
        assert iso_us(far)[:8] in out
    out = _cli(capsys, "--store", store, "sql", "SELECT ts::DATE AS d, [ts] AS l FROM events")
    assert iso_date(far // 86_400_000_000) in out
    for mode in ("newest", "per_event"):
        for extra in ([], ["--priors"]):
            _cli(capsys, "--store", store, "edges", "--mode", mode, "--format", "table", *extra)
    rows = json.loads(_cli(capsys, "--store", store, "edges"))
    assert [(r["success"], r["fail"]) for r in rows] == [(1, 1)]
    genes = tmp_path / "genes.json"
    genes.write_text(json.dumps([{"id": "g", "signals_match": ["boom"]}]))
    for policy in ("evolog", "evolver"):
        out = _cli(
            capsys, "--store", store, "advise", "--genes", str(genes), "--signals", "boom",
            "--policy", policy,
        )  # fmt: skip
        assert json.loads(out)["currentSignalKey"]
    _cli(capsys, "--store", store, "ledger")
    _cli(capsys, "--store", store, "route", "fix boom")
    _cli(capsys, "--store", store, "replay")


def test_api_readers_answer(store: str) -> None:
    proj = Projections(store, cache=False)
    assert proj.sql("SELECT count(*) AS n FROM events")["n"].to_pylist() == [5]
    assert len(py_rows(proj.sql("SELECT * FROM traces"))) == 2
    edges = proj.edges(mode="per_event")
    assert edges.num_rows == 1
    newest = edges["newest_ts"].cast("int64").to_pylist()[0]
    first = edges["first_ts"].cast("int64").to_pylist()[0]
    assert 0 <= first <= newest <= TS_MAX  # the outcome counts as of a time in range
    assert proj.gene_priors().num_rows == 1
    cached = Projections(store)
    assert cached.edges(now=T0).equals(proj.edges(now=T0))  # checkpoint == rebuild
    con = proj.connect()
    try:
        assert con.sql("SELECT count(*) FROM outcomes").fetchall() == [(2,)]
    finally:
        con.close()
    with Memory(store) as mem:
        assert mem.sql("SELECT count(*) AS n FROM events").num_rows == 1
        mem.ledger()
        mem.route("fix boom")

    from evolog.dream._traces import load_traces

    with EventLog(store) as log:
        assert len(load_traces(log)) == 2


@pytest.mark.parametrize("us", [0, 1, T0, TS_MAX, -1, YEAR_10000 + 5, 2**63 - 1, -(2**63)])
def test_time_text_for_any_64_bit_time(us: int) -> None:
    from datetime import UTC, datetime, timedelta

    text = iso_us(us)
    try:
        expected = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).isoformat()
    except OverflowError:
        assert text[0] in "+-" and text.endswith("+00:00")
    else:
        assert text == expected
    assert iso_ms(us).endswith("Z")


def test_time_text_matches_javascript_outside_0000_9999() -> None:
    # Date.prototype.toISOString: six digits and a sign outside years 0-9999.
    assert iso_ms(YEAR_10000) == "+010000-01-01T00:00:00.000Z"
    assert iso_ms(-62_167_219_200_000_000 - 1_000) == "-000001-12-31T23:59:59.999Z"
    assert iso_ms(T0) == "2026-01-01T00:00:00.000Z"
    assert iso_us(YEAR_10000 + 5) == "+10000-01-01T00:00:00.000005+00:00"
    assert iso_date(-719_529) == "-0001-12-31"
