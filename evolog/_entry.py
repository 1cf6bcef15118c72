"""The ``evolog`` command's entry point: a Ctrl-C during start-up waits for the imports.

msgspec builds its decoders in C while our modules are imported, and a KeyboardInterrupt
raised in the middle of that build crashes the interpreter (SIGSEGV; 3 of 400 interrupted
starts of ``evolog append`` here). So the first imports run with SIGINT held, and a held
interrupt then ends the command with 130 before it does anything, as an interrupt during
start-up should. Only what the command itself imports later runs with Ctrl-C live.
"""

from __future__ import annotations

# `signal`'s C half, loaded in every interpreter (the `signal` module costs 0.6 ms to import).
import _signal  # type: ignore[import-not-found]


def main() -> int:
    held: list[int] = []
    hold = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    if hold:  # leave an ignored SIGINT (`cmd &` in a script) or an embedder's handler alone
        _signal.signal(_signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        from evolog.cli import main as cli_main
    finally:
        if hold:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    if held:
        return 130
    return cli_main()
