"""``evolog evolve``, ``Memory.evolve`` and the Claude model over a mock transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from evolog.dream import DreamerAPIError, SettingError, StrategyError
from evolog.dream.evolve import ACE, ReMe, apply, pipeline
from evolog.dream.evolve._claude import ClaudeModel
from evolog.eventlog import Attempt, Feedback, Outcome, Step

from evolog import Memory
from evolog.cli._main import main


def _store(path: Path) -> Memory:
    mem = Memory(path)
    mem.remember("ops", "deploy with the blue-green script, then check /health")
    mem.append_many(
        [
            Attempt(id="t1", action_id="t1", task="Deploy the web service"),
            Step(id="t1.s0", action_id="t1", index=0, action="build image", ok=True),
            Step(id="t1.s1", action_id="t1", index=1, action="switch traffic", ok=True),
            Outcome(id="t1.o", action_id="t1", status="success"),
        ]
    )
    return mem


def test_cli_dry_run_then_run_then_undo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "mem"
    _store(store).close()
    args = ["--store", str(store), "evolve"]
    assert main([*args, "ace >> reasoning_bank >> reme", "--dry-run", "--embedder", "none"]) == 0
    out, err = capsys.readouterr()
    dry = json.loads(out)
    assert dry["dry_run"] and len(dry["events"]) == 2 and dry["seqs"] == []
    assert "evolve: running ace >> reasoning_bank >> reme" in err
    assert main([*args, "ace >> reasoning_bank >> reme", "--quiet"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert len(report["seqs"]) == 2 and err == ""
    with Memory(store) as mem:
        block = mem.recall("deploy the web service", record=False).text
    assert "switch traffic" in block  # the recalled context includes evolved entries
    assert main([*args, "undo", report["run"]]) == 0
    assert json.loads(capsys.readouterr().out) == {"undone": report["run"], "events": 2}
    assert main([*args, "undo", report["run"]]) == 2
    assert "already undone" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ace >> nope"], "expected a strategy name (ace, reasoning_bank, reme) at position 8"),
        (["ace |"], "at position 6; got the end"),
        (["undo"], "expected a RUN id"),
        (["undo", "zzz"], "expected the id of an evolve run in this store"),
        (["ace", "--curate", "1.5"], "curate_threshold: expected a number from 0 to 1; got 1.5"),
        (["ace", "--harmful-share", "-0.1"], "harmful_share: expected a number from 0 to 1"),
        (["reme", "--curate", "nan"], "curate_threshold: expected a number from 0 to 1; got nan"),
    ],
)
def test_cli_errors_are_one_line_and_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    store = tmp_path / "mem"
    _store(store).close()
    before = (store / "wal").exists() and sorted(
        p.stat().st_size for p in (store / "wal").iterdir()
    )
    assert main(["--store", str(store), "evolve", *argv]) in (1, 2)
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    after = (store / "wal").exists() and sorted(p.stat().st_size for p in (store / "wal").iterdir())
    assert before == after


def _scored(mem: Memory) -> dict[str, str]:
    """Items with scores 1/3 (harmful share 2/3), 1/4 (harmful share 0) and 0.5 (no evidence)."""
    ids = {
        name: mem.remember(name, f"{name} lesson: {text}").item
        for name, text in (
            ("mixed", "restart the queue workers after a config change"),
            ("tolerated", "pin the base image digest in the dockerfile"),
            ("fresh", "rotate the api keys every ninety days"),
        )
    }
    for verdict in ("helpful", "harmful", "harmful"):
        mem.feedback(ids["mixed"], verdict)
    for verdict in ("helpful", "neutral", "neutral", "neutral"):
        mem.feedback(ids["tolerated"], verdict)
    return ids


def test_cli_curate_and_harmful_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "mem"
    with Memory(store) as mem:
        ids = _scored(mem)
    args = ["--store", str(store), "evolve", "ace", "--quiet", "--dry-run"]
    assert main(args) == 0  # the defaults: harmful share above 0.5, no curation
    assert json.loads(capsys.readouterr().out)["retired"] == [ids["mixed"]]
    assert main([*args, "--harmful-share", "0.7"]) == 0
    assert json.loads(capsys.readouterr().out)["retired"] == []
    assert main([*args, "--curate", "0.3", "--harmful-share", "1"]) == 0  # curate(0.3) alone
    assert json.loads(capsys.readouterr().out)["retired"] == [ids["tolerated"]]
    assert main([*args[:-1], "--curate", "0.3"]) == 0  # both rules, appended
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["retired"]) == sorted([ids["mixed"], ids["tolerated"]])
    assert len(report["seqs"]) == 2
    with Memory(store) as mem:
        left = mem.recall("lesson", record=False, include_dead=True).items
        assert [i.id for i in left] == [ids["fresh"]]


def test_memory_curate_returns_and_retires(tmp_path: Path) -> None:
    with Memory(tmp_path / "mem") as mem:
        ids = _scored(mem)
        assert mem.curate(0.3, dry_run=True) == [ids["tolerated"]]
        assert mem.curate(0.4) == [ids["mixed"], ids["tolerated"]]
        prunes = [e.node for e in mem.replay(kinds=["prune"])]
        assert prunes == [ids["mixed"], ids["tolerated"]]
        assert mem.curate(0.4) == []  # retired items are no longer staged
        with pytest.raises(SettingError, match="threshold: expected a number from 0 to 1"):
            mem.curate(2)
    with pytest.raises(SettingError, match="expected a strategy name"):
        pipeline("ace", {"acee": {}})
    with pytest.raises(SettingError, match="unexpected keyword argument 'curate'"):
        pipeline("ace", {"ace": {"curate": 0.3}})
    p = pipeline("ace >> (reme | ace)", {"ace": {"curate_threshold": 0.2}})
    assert p == ACE(curate_threshold=0.2) >> (ReMe() | ACE(curate_threshold=0.2))


def test_memory_evolve_api(tmp_path: Path) -> None:
    with _store(tmp_path / "mem") as mem:
        report = mem.evolve("reasoning_bank", dry_run=True)
        assert report.dry_run and report.written
        report = mem.evolve(ACE() >> ReMe())
        assert report.pipeline == "ace >> reme" and len(report.written) == 1
        assert len(mem.evolve_undo(report.run)) == 1


def _reply(text: str) -> httpx2.Response:
    body = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3},
    }  # fmt: skip
    return httpx2.Response(200, json=body, headers={"request-id": "req_1"})


def _model(handler: Any) -> ClaudeModel:
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return ClaudeModel(model="claude-test", api_key="sk-ant-test", http_client=client,
                       sleep=lambda _s: None, max_retries=0)  # fmt: skip


def test_claude_reflects_and_extracts_over_a_mock_transport(tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        sent.append(body)
        prompt = body["messages"][0]["content"]
        if "one word" in prompt:
            return _reply("harmful")
        return _reply('{"content": "Build, then switch traffic", "when_to_use": "deploys"}')

    with _store(tmp_path / "mem") as mem:
        item = mem.remember("db", "vacuum the orders table").item
        mem.append(Feedback(target=item, text="hmm"))  # the heuristic would say neutral
        report = apply(mem.log, ACE() >> ReMe(), model=_model(handler))
        assert report.retired == [item]
        (note,) = [e for e in report.events if e["kind"] == "note"]
        assert note["text"] == "When to use: deploys\nPattern: success\nBuild, then switch traffic"
    assert all(s["model"] == "claude-test" and "curate" in s["system"] for s in sent)


def test_claude_errors_are_mapped_and_fail_the_run(tmp_path: Path) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
        return httpx2.Response(400, json=body, headers={"request-id": "req_x"})

    with _store(tmp_path / "mem") as mem:
        before = list(mem.replay())
        with pytest.raises(StrategyError, match="strategy 'reme' failed: DreamerAPIError") as info:
            apply(mem.log, ReMe(), model=_model(handler))
        assert isinstance(info.value.__cause__, DreamerAPIError)
        assert list(mem.replay()) == before


def test_parallel_branches_wait_on_their_models_concurrently(tmp_path: Path) -> None:
    import asyncio
    import threading

    from evolog.dream.evolve import aevolve, stage

    both = threading.Barrier(2, timeout=10)  # broken unless two calls are in flight at once

    def model(prompt: str) -> str:
        both.wait()
        return "helpful" if "one word" in prompt else '{"content": "c", "when_to_use": "w"}'

    with _store(tmp_path / "mem") as mem:
        item = mem.remember("db", "vacuum the orders table").item
        mem.append(Feedback(target=item, text="hmm"))
        items, context = stage(mem.log)
    # ACE last: a parallel merge takes the last branch's value, even an unchanged one.
    out = asyncio.run(aevolve(ReMe(model=model) | ACE(model=model), items, context))
    assert not both.broken
    assert {i.id: i.helpful for i in out}[item] == 1 and any(i.when_to_use == "w" for i in out)
