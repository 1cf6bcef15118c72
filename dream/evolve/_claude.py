"""A model for the evolution strategies backed by Claude (the anthropic SDK).

It reuses the Claude dreamer's client, retries and error mapping (every SDK or HTTP
failure is a :class:`~evolog.dream.DreamerError`), with its own system prompt: a strategy
asks one question per call and reads a short answer. Optional: the strategies work
offline without a model.
"""

from __future__ import annotations

from typing import Any, Final

from .._claude import ClaudeDreamer

__all__ = ["ClaudeModel"]

SYSTEM: Final = (
    "You curate the memory of a software agent. Answer exactly in the format asked for, "
    "with no other text."
)


class ClaudeModel(ClaudeDreamer):
    """``model(prompt) -> reply`` over the Messages API (a :data:`~._items.Model`)."""

    def __init__(self, *, max_tokens: int = 512, **kwargs: Any) -> None:
        super().__init__(max_tokens=max_tokens, **kwargs)

    def __call__(self, prompt: str) -> str:
        text, _, _ = self.complete([{"role": "user", "content": prompt}])
        return text

    def _create(self, messages: list[dict[str, str]], send_temperature: bool) -> Any:
        extra = {"temperature": self._temperature} if send_temperature else None
        return self._client.messages.create(
            model=self.model,
            max_tokens=self._max_tokens,
            system=SYSTEM,
            messages=messages,
            extra_body=extra,
        )
