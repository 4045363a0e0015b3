"""Loading the offline MiniLM leaves the process's Hugging Face settings alone: the Hub is
avoided for that load only (``local_files_only``), never by setting ``HF_HUB_OFFLINE`` for the
application that imported vectorport."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.memory

SCRIPT = """
import json, os
from vectorport.ingest import SentenceTransformerEmbedder
vector = SentenceTransformerEmbedder().embed_query("a summer's day")
import huggingface_hub.constants as hub
names = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS")
print(json.dumps({"env": {n: os.environ.get(n) for n in names}, "hub_offline": hub.HF_HUB_OFFLINE,
                  "dim": len(vector)}))
"""


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_minilm_does_not_set_hf_hub_offline_for_the_process() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["dim"] == 384
    assert data["env"] == {
        "HF_HUB_OFFLINE": None,
        "TRANSFORMERS_OFFLINE": None,
        "HF_HUB_DISABLE_PROGRESS_BARS": None,
    }
    assert data["hub_offline"] is False
