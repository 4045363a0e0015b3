"""One app process of the cut-over test: a LangChain ``LangChainStore("alias://…")`` serving
steady queries with filters and writes (adds, updates, deletes) until a stop file appears.

Each call is logged as one JSON line: start and end time, operation, key, the metadata written,
whether it failed, and which member served it (``AliasStore.served_by``). Keys are this process's
own (``p<N>-…``), so the last acknowledged write of each key is what the final store must hold.

Run: ``python -m tests.alias._app ALIAS_URL PROCESS LOG STOP_FILE [MODEL]``; the calls begin when
``STOP_FILE`` with the suffix ``.go`` appears (the process imports its libraries meanwhile, and
loads ``MODEL`` once, an embedder spec the alias will embed with).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from vectorport.ingest.embedders import resolve_embedder
from vectorport.langchain import LangChainStore

DIM = 16
TEXTS = [f"topic {i} about {w}" for i in range(40) for w in ("ports", "vectors", "tables")]


def main(url: str, proc: int, log_path: str, stop: str, preload: str | None = None) -> None:
    rng = random.Random(proc)
    if preload:  # the model's libraries imported and its files read while the test seeds
        resolve_embedder(preload).embed_query("warm")
    Path(log_path).with_suffix(".ready").touch()
    while not Path(stop).with_suffix(".go").exists():
        time.sleep(0.05)
    lc = LangChainStore(url, DeterministicFakeEmbedding(size=DIM))
    live: list[str] = []
    version = 0
    with open(log_path, "w", encoding="utf-8") as log:
        while not Path(stop).exists():
            roll = rng.random()
            entry: dict[str, object] = {"start": time.time()}
            try:
                if roll < 0.6 or (not live and roll < 0.75):
                    flt = rng.choice([None, {"lang": "en"}, {"year": {"$gte": 2003}}])
                    entry |= {"op": "query", "filter": flt}
                    lc.similarity_search(rng.choice(TEXTS), k=5, filter=flt)
                elif roll < 0.9 or not live:
                    update = roll >= 0.75 and bool(live)
                    key = rng.choice(live) if update else f"p{proc}-{version}"
                    version += 1
                    meta = {"lang": rng.choice(["en", "fr"]), "year": 2000 + version % 7, "v": version}
                    entry |= {"op": "update" if update else "add", "key": key, "metadata": meta}
                    # a text of its own: equal vectors would tie, and stores break ties differently
                    lc.add_texts([f"{rng.choice(TEXTS)} ({key} v{version})"], metadatas=[meta], ids=[key])
                    if not update:
                        live.append(key)
                else:
                    key = live.pop(rng.randrange(len(live)))
                    entry |= {"op": "delete", "key": key}
                    lc.delete([key])
                entry["ok"] = True
            except Exception as exc:  # the test counts every failed call
                entry |= {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            entry |= {"end": time.time(), "served_by": getattr(lc.store, "served_by", None)}
            log.write(json.dumps(entry) + "\n")
            log.flush()
            time.sleep(0.01)
    lc.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], *sys.argv[5:6])
    sys.stdout.flush()
    os._exit(0)  # the store is closed: the drivers' interpreter-exit teardown is not under test
