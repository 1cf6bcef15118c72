"""The write path: the checksummed write-ahead log files, their frames, the writer that hands
out seqs under the cross-process lock, group commit, and the fork handler.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
