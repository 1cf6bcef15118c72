"""Agent hooks (Claude Code and generic JSON): event mapping, content policy and files.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
