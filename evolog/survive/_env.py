"""Survival environments: they act on something real and measure it, never grade it.

* :class:`StorageEnv`: a cleanup sandbox on the real file system. Each cycle writes files
  of five categories (log, cache, tmp are disposable; db and report are needed). Deleting a
  file frees its bytes, measured on disk; deleting a needed file forces a restore, which
  costs three times the bytes it writes back. Delta = bytes freed - 3 * bytes restored.
* :class:`TestSuiteEnv`: a generated Python micro-project with ten tests and seeded
  defects; candidate patches (real fixes, a destructive "dead code" removal, a cosmetic
  no-op) are applied on request, and delta = the change in passing tests, counted by
  running pytest (:mod:`evolog.survive._pytestenv`).

Worlds are seeded per (seed, cycle); the environment alone reads the agent's answer
(:func:`decision_polarity`) and decides what silence means (keep, do not apply).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ._errors import SurvivalError
from ._memory import decision_polarity
from ._project import Project
from ._pytestenv import PytestRunner


@dataclass(frozen=True)
class Task:
    """One decision the agent must make: a prompt, and what the environment knows of it."""

    prompt: str
    target: str
    needed: bool
    size: int = 0
    patch: str = ""


@dataclass(frozen=True)
class Measured:
    """A measured change of the environment's resource, and what happened."""

    delta: float
    detail: str


class Environment(Protocol):
    resource_scale: float
    name: str

    def tasks(self, cycle: int) -> list[Task]: ...

    def verify(self, task: Task, answer: str) -> Measured: ...

    def close(self) -> None: ...


def cycle_rng(stream: str, seed: int, cycle: int) -> random.Random:
    """The world of one cycle: independent of every other cycle and of the agent."""
    digest = hashlib.sha256(f"{stream}:{seed}:{cycle}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def disk_bytes(directory: Path) -> int:
    """Bytes of the regular files directly in ``directory`` (apparent size)."""
    with os.scandir(directory) as it:
        return sum(e.stat().st_size for e in it if e.is_file(follow_symlinks=False))


@dataclass
class StorageEnv:
    """Bytes freed on a real disk; restoring a needed file costs 3x its size."""

    root: Path
    seed: int = 7
    files_per_cycle: int = 12
    size_kib: tuple[int, int] = (16, 80)
    resource_scale: float = 100_000.0
    name: str = "storage"
    categories: tuple[tuple[str, bool], ...] = (
        ("log", False), ("cache", False), ("tmp", False), ("db", True), ("report", True),
    )  # fmt: skip
    _dir: Path | None = field(default=None, init=False)
    _backup: dict[str, bytes] = field(default_factory=dict, init=False)

    def tasks(self, cycle: int) -> list[Task]:
        rng = cycle_rng(self.name, self.seed, cycle)
        self._reset()
        self._dir = Path(self.root) / f"sandbox-{cycle}"
        try:
            self._dir.mkdir(parents=True)
            tasks = []
            for k in range(self.files_per_cycle):
                category, needed = rng.choice(self.categories)
                size = rng.randint(*self.size_kib) * 1024
                path = self._dir / f"{category}-{k:02d}.{category}"
                data = rng.randbytes(size)
                path.write_bytes(data)
                if needed:
                    self._backup[str(path)] = data
                tasks.append(Task(f"delete the {category} file {path.name}?", str(path), needed,
                                  size))  # fmt: skip
        except OSError as exc:
            raise SurvivalError(f"storage sandbox {self._dir}: {exc}") from None
        return tasks

    def verify(self, task: Task, answer: str) -> Measured:
        if decision_polarity(answer) is not True:
            return Measured(0.0, "kept")
        assert self._dir is not None
        try:
            before = disk_bytes(self._dir)
            os.remove(task.target)
            restored = 0
            if task.needed:  # the world needed it: restore from backup, at a price
                Path(task.target).write_bytes(self._backup[task.target])
                restored = os.stat(task.target).st_size
            after = disk_bytes(self._dir)
        except OSError as exc:
            raise SurvivalError(f"storage sandbox {task.target}: {exc}") from None
        delta = (before - after) - 3 * restored
        return Measured(float(delta), "restored" if restored else "freed")

    def _reset(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._backup.clear()

    def close(self) -> None:
        """Remove the sandbox."""
        self._reset()


@dataclass
class TestSuiteEnv:
    """Passing tests of a generated micro-project, counted by running pytest."""

    root: Path
    seed: int = 7
    defects_per_cycle: int = 3
    runner: PytestRunner | None = None
    resource_scale: float = 2.0
    name: str = "testsuite"
    _project: Project | None = field(default=None, init=False)
    _passing: int = field(default=0, init=False)
    _owns_runner: bool = field(default=False, init=False)

    __test__ = False  # not a pytest test class, whatever its name

    def tasks(self, cycle: int) -> list[Task]:
        rng = cycle_rng(self.name, self.seed, cycle)
        self._reset()
        if self.runner is None:
            self.runner = PytestRunner()
            self._owns_runner = True
        try:
            self._project = Project.generate(Path(self.root) / f"project-{cycle}", rng,
                                             self.defects_per_cycle)  # fmt: skip
        except OSError as exc:
            raise SurvivalError(f"test-suite project: {exc}") from None
        self._passing = self.runner.passed(self._project.directory)
        patches = self._project.patches(rng)
        rng.shuffle(patches)
        return [Task(f"apply patch: {title}", key, kind == "destructive", patch=kind)
                for key, title, kind in patches]  # fmt: skip

    def verify(self, task: Task, answer: str) -> Measured:
        if decision_polarity(answer) is not True:
            return Measured(0.0, "not applied")
        assert self._project is not None and self.runner is not None
        try:
            self._project.apply(task.target)
        except OSError as exc:
            raise SurvivalError(f"test-suite project: {exc}") from None
        passing = self.runner.passed(self._project.directory)
        delta, self._passing = passing - self._passing, passing
        return Measured(float(delta), f"{task.patch}: {passing} passing")

    def _reset(self) -> None:
        if self._project is not None:
            shutil.rmtree(self._project.directory, ignore_errors=True)
            self._project = None

    def close(self) -> None:
        """Remove the project; stop the pytest worker if this environment started it."""
        self._reset()
        if self._owns_runner and self.runner is not None:
            self.runner.close()
            self.runner = None
