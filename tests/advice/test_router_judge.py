"""A model as the router's applicability judge: its answer replaces the offline verdict, its
failures never do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from evolog.advice import JudgedRouter, JudgeReplyError, ModelJudge, Router, RouterPath
from evolog.advice.routing._judge import judge_prompt, read_choice
from evolog.dream.evolve._claude import ClaudeModel

from tests.advice.test_router_applicability import I18N, _node_of, i18n_fastlane_router
from tests.dream.test_evolve_cli import _reply

RELATED = "mark the strings in the Django templates for translation into .po files"
NEAR = "upgrade the Django project from 3.2 to 4.2"


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Router:
    return i18n_fastlane_router(tmp_path_factory.mktemp("judge") / "store")


class Scripted:
    """A model that answers from a script and keeps the prompts it was sent."""

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_the_judge_can_refuse_what_the_offline_rule_claims(router: Router) -> None:
    assert router.route(RELATED).path is RouterPath.MEMORY_TRAVERSAL
    model = Scripted("0 the task is about templates, not the stored job")
    decision = JudgedRouter.around(router, ModelJudge(model, name="m")).route(RELATED)
    assert decision.path is RouterPath.ZERO_SHOT and decision.entry is None
    assert decision.reasoning.startswith("judge m: no memory applies (the task is about")
    assert "offline: " in decision.reasoning and decision.candidates
    prompt = model.prompts[0]
    assert RELATED in prompt and I18N[0] in prompt and "run makemessages -l fr" in prompt


def test_the_judge_can_accept_what_the_offline_rule_refuses(router: Router) -> None:
    offline = router.route(NEAR)
    assert offline.path is RouterPath.ZERO_SHOT
    eligible = [
        c
        for c in offline.candidates
        if c.similarity >= router.min_similarity and c.composite >= router.config.threshold
    ]
    assert eligible, offline.candidates
    decision = JudgedRouter.around(router, ModelJudge(Scripted("1"))).route(NEAR)
    assert decision.path is RouterPath.MEMORY_TRAVERSAL
    assert decision.entry is not None and decision.entry.node == eligible[0].node
    assert decision.reasoning.startswith(f"{eligible[0].node} applies: judge model;")


def test_the_judge_sees_at_most_its_candidates_and_only_eligible_ones(router: Router) -> None:
    model = Scripted("1 same job")
    JudgedRouter.around(router, ModelJudge(model, candidates=1)).route(RELATED)
    assert model.prompts[0].count("] goal: ") == 1
    # Nothing passes the floor: the model is not asked at all.
    silent = Scripted()
    decision = JudgedRouter.around(router, ModelJudge(silent)).route("bake a chocolate cake")
    assert decision.path is RouterPath.ZERO_SHOT and silent.prompts == []


@pytest.mark.parametrize(
    ("reply", "error"),
    [("I think the first one", "JudgeReplyError"), (TimeoutError("slow"), "TimeoutError")],
)
def test_a_failing_judge_leaves_the_offline_decision(
    router: Router, reply: str | Exception, error: str
) -> None:
    offline = router.route(RELATED)
    decision = JudgedRouter.around(router, ModelJudge(Scripted(reply))).route(RELATED)
    assert decision.path is offline.path and decision.entry == offline.entry
    assert decision.reasoning.startswith(offline.reasoning)
    assert f"judge model failed ({error}: " in decision.reasoning


def test_drift_checks_stay_offline(router: Router) -> None:
    node = _node_of(router, "i18n")
    silent = Scripted()
    judged = JudgedRouter.around(router, ModelJudge(silent)).route(RELATED, current=node)
    assert judged == router.route(RELATED, current=node) and silent.prompts == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("2 same failure, same fix", (1, "same failure, same fix")),
        ("[3] the third", (2, "the third")),
        ("\n0", (None, "")),
        ("1. yes\nmore text", (0, "yes")),
    ],
)
def test_replies_are_read_strictly(reply: str, expected: tuple[int | None, str]) -> None:
    assert read_choice(reply, 3) == expected


@pytest.mark.parametrize("reply", ["none", "", "4 out of range", "memory 2"])
def test_unreadable_replies_are_refused_in_one_line(reply: str) -> None:
    with pytest.raises(JudgeReplyError, match=r"^judge reply: expected a number from 0 to 3") as e:
        read_choice(reply, 3)
    assert "\n" not in str(e.value)


def test_the_prompt_names_every_memory_with_its_first_steps(router: Router) -> None:
    entries = router.route(RELATED).candidates[:2]
    steps = ["a", "b", "c", "d", "e"]
    prompt = judge_prompt(" the task ", [(e, steps) for e in entries])
    assert "New task: the task\n" in prompt and "steps: a; b; c; d\n" in prompt
    assert [f"[{i}] goal: {e.goal}" in prompt for i, e in enumerate(entries, 1)] == [True] * 2


def test_the_claude_model_judges_over_the_real_client(router: Router) -> None:
    sent: list[dict[str, Any]] = []
    answers = iter([_reply("0 another job"), httpx2.Response(500, json={"error": {}})])

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return next(answers)

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    model = ClaudeModel(
        model="claude-test", api_key="sk-ant-test", http_client=client,
        sleep=lambda _s: None, max_retries=0,
    )  # fmt: skip
    judged = JudgedRouter.around(router, ModelJudge(model, name="claude"))
    assert judged.route(RELATED).path is RouterPath.ZERO_SHOT
    assert RELATED in sent[0]["messages"][0]["content"]
    # A server error is the dreamer's mapped error, and the offline verdict stands.
    decision = judged.route(RELATED)
    assert decision.path is RouterPath.MEMORY_TRAVERSAL
    assert "judge claude failed (DreamerAPIError: " in decision.reasoning


def test_cli_judge_without_a_key_is_refused_before_the_store_is_opened(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "EVOLOG_STORE": str(tmp_path / "none")}
    cmd = [sys.executable, "-m", "evolog", "route", "fix the build", "--judge", "claude-x"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "ANTHROPIC_API_KEY" in done.stderr
    assert not (tmp_path / "none").exists()
