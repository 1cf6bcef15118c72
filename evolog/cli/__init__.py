"""The ``evolog`` command line: the argument parser and one module per command family.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
