"""The dream instruction set: opcodes, the program model, the parser and serializer of its
text form, argument rules, and the VM that applies a program to the memory graph.

Internal: import the public names from the parent package.
"""

__all__: list[str] = []
