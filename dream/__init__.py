"""Dream cycles: the opcode ISA, its parser and VM, dreamers and the memory graph."""
