"""Errors of the survival loop (``evolog survive`` and :mod:`evolog.survive._run`).

::

    SurvivalError        the loop could not run: a bad arm or environment name, a sandbox
    │                    the file system refused, a follower that disagrees with a replay
    └── PytestError      pytest could not be run on a test-suite project
"""

from __future__ import annotations


class SurvivalError(Exception):
    """The survival loop could not run (bad input, or a failure underneath it)."""


class PytestError(SurvivalError):
    """pytest could not be run on a project (the worker died, or pytest crashed)."""
