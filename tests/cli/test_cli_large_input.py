"""``evolog append`` with large NDJSON input and with Ctrl-C: bounded memory, no lost track.

All of stdin was once held in memory (1.6 KB per event), and a Ctrl-C could land after the
commit: everything written, exit 130, nothing printed, so a re-run duplicated every id-less
event. Now the printed receipts are always exactly what is in the log, and an interrupted
large input says where to resume.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _eventlog_util import REPO
from _signals import default_sigint
from evolog.eventlog import EventLog

from evolog.cli._ingest import CHUNK_EVENTS

# Runs ``evolog append`` in-process and reports its peak RSS (kB) on the last stderr line.
# VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across exec, so a child forked
# from a large pytest process would report the parent's size.
_RSS_RUNNER = (
    "import sys\n"
    "from evolog.cli._main import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
    "print(hwm.split()[1], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _ndjson(path: Path, n: int, text_bytes: int) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"kind": "note", "text": f"{i:08d}" + "x" * text_bytes}) + "\n")
    return path


def _append_measured(store: Path, source: Path, out: Path) -> int:
    with open(source, "rb") as stdin, open(out, "wb") as stdout:
        proc = subprocess.run(
            [sys.executable, "-c", _RSS_RUNNER, "--store", str(store), "append"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=REPO,
            timeout=600,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stderr.splitlines()[-1])


def _texts(store: Path) -> list[str]:
    with EventLog(store) as log:
        return [e.text for e in log.replay()]  # type: ignore[attr-defined]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_memory_stays_bounded_for_large_input(tmp_path: Path) -> None:
    small, large = 4_000, 60_000  # events of ~1 KB
    rss = {}
    for n in (small, large):
        store = tmp_path / f"s{n}"
        EventLog(store, create=True).close()
        out = tmp_path / f"out{n}.json"
        rss[n] = _append_measured(store, _ndjson(tmp_path / f"in{n}.ndjson", n, 1000), out)
        receipts = json.loads(out.read_bytes())
        assert [r["seq"] for r in receipts] == list(range(1, n + 1))
        assert len(_texts(store)) == n
        (tmp_path / f"in{n}.ndjson").unlink()
    # Held whole, the large input would add ~150 MB over the small one; in batches of
    # CHUNK_EVENTS it adds what one more batch costs at most.
    assert rss[large] - rss[small] < 60_000, rss
    assert rss[large] < 200_000, rss


def _interrupted(store: Path, source: Path, delay: float) -> subprocess.CompletedProcess[bytes]:
    with open(source, "rb") as stdin:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evolog", "--store", str(store), "append"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
            preexec_fn=default_sigint,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("n", [3_000, 3 * CHUNK_EVENTS + 17])
def test_an_interrupt_leaves_the_printed_receipts_equal_to_the_log(tmp_path: Path, n: int) -> None:
    source = _ndjson(tmp_path / "in.ndjson", n, 20)
    lines = source.read_bytes().splitlines(keepends=True)
    EventLog(tmp_path / "full", create=True).close()
    start = time.monotonic()
    with open(source, "rb") as stdin:
        full = subprocess.run(
            [sys.executable, "-m", "evolog", "--store", str(tmp_path / "full"), "append"],
            stdin=stdin, capture_output=True, cwd=REPO, timeout=600, check=False,
        )  # fmt: skip
    whole = time.monotonic() - start
    assert full.returncode == 0, full.stderr
    for k, fraction in enumerate((0.3, 0.5, 0.65, 0.8, 0.9, 0.97)):
        store = tmp_path / f"s{k}"
        EventLog(store, create=True).close()
        proc = _interrupted(store, source, whole * fraction)
        texts = _texts(store)
        err = proc.stderr.decode()
        receipts = json.loads(proc.stdout) if proc.stdout.strip() else []
        # What the command printed is exactly what it committed.
        assert [r["seq"] for r in receipts] == list(range(1, len(texts) + 1)), err
        assert not any(r["duplicate"] for r in receipts)
        if proc.returncode == 0:
            assert len(texts) == n
            continue
        if not texts:
            # Interrupted before the commit, or before any of our code ran: an interrupt
            # during the interpreter's own start-up (site) ends it with exit 1.
            assert proc.returncode in (130, -signal.SIGINT) or (
                proc.returncode == 1 and "KeyboardInterrupt" in err
            ), err
            continue
        assert proc.returncode in (130, -signal.SIGINT), err
        assert "interrupted" in err, err
        if len(texts) < n:  # a large input: resume where it says
            resume = int(err.rsplit("tail -n +", 1)[1].split()[0])
            rest = subprocess.run(
                [sys.executable, "-m", "evolog", "--store", str(store), "append"],
                input=b"".join(lines[resume - 1 :]),
                capture_output=True, cwd=REPO, timeout=600, check=False,
            )  # fmt: skip
            assert rest.returncode == 0, rest.stderr
            texts = _texts(store)
        assert sorted(texts) == sorted(json.loads(x)["text"] for x in lines)
