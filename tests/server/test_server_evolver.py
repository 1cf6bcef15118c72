"""The real evolver adapter (``@evomap/evolver`` from the npm registry, run by node) against a
real server: its remote memory graph records a cycle in the store and gets its advice."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from _server_util import LiveServer, new_store
from evolog.advice import to_evolver
from evolog.eventlog import EventLog, kind_of

EVOLVER_VERSION = "1.94.0"
KEY = "evolver-remote-key-0123456789"
GENES = [
    {"type": "Gene", "id": "gene_guard", "category": "repair"},
    {"type": "Gene", "id": "gene_retry", "category": "repair"},
]
SIGNALS = ["log_error", "errsig:TypeError: x is undefined"]

# One evolver cycle through the adapter, as evolve.js runs it, printing the advice it got.
DRIVER = """
const path = require('path');
const a = require(path.join(process.argv[2], 'src/gep/memoryGraphAdapter'));
const genes = JSON.parse(process.argv[3]);
const signals = JSON.parse(process.argv[4]);
(async () => {
  a.recordSignalSnapshot({signals, observations: {cycle: process.argv[5]}});
  const advice = await a.getAdvice({signals, genes, driftEnabled: false});
  const gene = genes[0];
  const common = {signals, mutation: null, personality_state: null, selectedGene: gene,
                  selector: null, driftEnabled: false, selectedBy: 'selector',
                  capsulesUsed: [], observations: {}};
  const hyp = a.recordHypothesis(common);
  a.recordAttempt({...common, hypothesisId: hyp && hyp.hypothesisId});
  a.recordOutcome({signals: ['all_clear'], observations: {}});
  await new Promise(r => setTimeout(r, 800));  // fire-and-forget ingests
  const banned = [...(advice.bannedGeneIds || [])];
  console.log(JSON.stringify({advice: {...advice, bannedGeneIds: banned}}));
})();
"""


def _evolver_package() -> Path:
    """The evolver package with its dependencies, cached in the temp directory."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: the real evolver adapter cannot run")
    cache = Path(tempfile.gettempdir()) / "evolog-test-npm" / f"evolver-{EVOLVER_VERSION}"
    cache.mkdir(parents=True, exist_ok=True)
    package = cache / "package"
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (package / "node_modules" / ".ok").exists():
            return package
        shutil.rmtree(package, ignore_errors=True)
        try:
            subprocess.run(
                ["npm", "pack", f"@evomap/evolver@{EVOLVER_VERSION}"],
                cwd=cache, check=True, capture_output=True, timeout=180,
            )  # fmt: skip
            with tarfile.open(cache / f"evomap-evolver-{EVOLVER_VERSION}.tgz") as tar:
                tar.extractall(cache, filter="data")
            subprocess.run(
                ["npm", "install", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"],
                cwd=package, check=True, capture_output=True, timeout=600,
            )  # fmt: skip
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            stderr = getattr(exc, "stderr", b"") or b""
            pytest.skip(f"the npm registry could not supply @evomap/evolver: {stderr[-300:]!r}")
        (package / "node_modules").mkdir(exist_ok=True)
        (package / "node_modules" / ".ok").touch()
    return package


def test_real_evolver_adapter_records_and_gets_advice(tmp_path: Path) -> None:
    package = _evolver_package()
    store = new_store(tmp_path / "s")
    driver = tmp_path / "drive.js"
    driver.write_text(DRIVER)
    evolution = tmp_path / "evolution"
    evolution.mkdir()
    local = evolution / "memory_graph.jsonl"
    with LiveServer(store, env={"MEMORY_GRAPH_REMOTE_KEY": KEY}) as server:
        env = {
            "PATH": os.environ["PATH"], "HOME": str(tmp_path),
            "MEMORY_GRAPH_PROVIDER": "remote", "MEMORY_GRAPH_REMOTE_URL": server.url,
            "MEMORY_GRAPH_REMOTE_KEY": KEY, "EVOLUTION_DIR": str(evolution),
            "MEMORY_GRAPH_PATH": str(local),
        }  # fmt: skip
        advice = []
        for cycle in range(2):
            args = [str(driver), str(package), json.dumps(GENES), json.dumps(SIGNALS), str(cycle)]
            out = subprocess.run(
                ["node", *args], env=env, capture_output=True, text=True, timeout=120, check=True
            )
            advice.append(json.loads(out.stdout.strip().splitlines()[-1])["advice"])
        import httpx

        query = {
            "signals": SIGNALS,
            "genes": GENES,
            "driftEnabled": False,
            "now": "2030-01-01T00:00:00Z",
        }
        served = httpx.post(
            server.url + "/kg/advice", json=query, headers={"authorization": f"Bearer {KEY}"}
        ).json()
    with EventLog(store) as log:
        events = list(log.replay())
    kinds = [kind_of(e) for e in events]
    assert kinds == ["signal", "hypothesis", "attempt", "outcome"] * 2, kinds
    # Signals and outcomes arrive whole: stored exactly as evolver wrote them locally.
    lines = {o["id"]: o for o in map(json.loads, local.read_text().splitlines())}
    whole = [e for e in events if kind_of(e) in ("signal", "outcome")]
    assert [to_evolver(e) for e in whole] == [lines[e.id] for e in whole]
    # The second cycle's advice came from the server, from the first cycle's outcome.
    assert advice[1]["preferredGeneId"] == "gene_guard"
    assert advice[1]["currentSignalKey"] == events[0].key  # type: ignore[attr-defined]
    cli = subprocess.run(
        [sys.executable, "-m", "evolog", "--store", store, "advise", "--policy", "evolver"],
        input=json.dumps(query), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert served == json.loads(cli.stdout)
