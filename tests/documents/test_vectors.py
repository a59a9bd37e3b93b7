"""Passage vectors beside the full-text index: kept with the passages, reused for an
unchanged file, made again for a changed one or another model; the nearest passages found
by meaning when no word is shared; words alone (said once) without a model; the bundled
WordLlama model loaded and used with no network."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

np = pytest.importorskip("numpy", reason="the semantic extra (numpy) is not installed")
pytest.importorskip("tokenizers", reason="the semantic extra (tokenizers) is not installed")

from research_fsm.documents import EMBEDDER_ENV, DocumentIndex, embedder  # noqa: E402
from research_fsm.documents import _vectors as vectors  # noqa: E402

CONCEPTS = {
    # words of one meaning share a direction: "bisect" and "broke" are both about
    # finding the change that introduced a bug
    "bisect": 0,
    "broke": 0,
    "regression": 0,
    "blame": 1,
    "author": 1,
    "changed": 1,
    "coffee": 2,
    "espresso": 2,
}


class ConceptModel:
    """A test model: each known word adds its concept's axis; texts are counted."""

    dim = 4

    def __init__(self, name: str = "concepts-1") -> None:
        self.name = name
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                if word in CONCEPTS:
                    out[row, CONCEPTS[word]] += 1.0
            if not out[row].any():
                out[row, 3] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConceptModel]:
    """The concept model, selected as ``$RESEARCH_FSM_EMBEDDER=concepts``."""
    chosen = ConceptModel()
    vectors.register("concepts", lambda: chosen)
    monkeypatch.setenv(EMBEDDER_ENV, "concepts")
    yield chosen
    vectors.register("concepts", lambda: None)


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bisect.md").write_text(
        "# git-bisect\n\nUse binary search to bisect the history until the first bad "
        "revision shows up.\n",
        encoding="utf-8",
    )
    (root / "blame.md").write_text(
        "# git-blame\n\nShow what revision and author last modified each line.\n",
        encoding="utf-8",
    )
    (root / "cafe.md").write_text(
        "# Cafe\n\nThe espresso machine needs descaling monthly.\n", encoding="utf-8"
    )
    return root


async def test_nearest_finds_a_passage_sharing_no_word(tmp_path: Path, model: ConceptModel) -> None:
    """A question in other words ("which commit broke it") finds the passage that says it
    differently (bisect), while the word search finds nothing."""
    async with await DocumentIndex.open(_folder(tmp_path), cache_dir=tmp_path / "c") as index:
        assert [] == await index.search("which commit broke it")
        found = await index.nearest("which commit broke it", limit=2)
        assert "bisect.md" == found[0].path
        assert found[0].score > found[1].score
        assert found[0].text.startswith("# git-bisect")
        assert "concepts-1" == index.semantic


async def test_similarity_reads_the_stored_vectors(tmp_path: Path, model: ConceptModel) -> None:
    """The similarity of passages a word search found comes from their stored vectors
    (nothing embedded but the question) and agrees with ``nearest``."""
    async with await DocumentIndex.open(_folder(tmp_path), cache_dir=tmp_path / "c") as index:
        found = await index.search("revision", match="any")
        assert ["bisect.md", "blame.md"] == sorted(p.path for p in found)
        before = len(model.texts)
        close = await index.similarity("what broke it", found)
        assert ["what broke it"] == model.texts[before:]
        nearest = {p.path: p.score for p in await index.nearest("what broke it", limit=3)}
        assert close == [nearest[p.path] for p in found]
        assert max(close) == nearest["bisect.md"] > nearest["blame.md"]


async def test_vectors_are_reused_for_unchanged_files(tmp_path: Path, model: ConceptModel) -> None:
    """A second open embeds nothing; a changed file's passages alone are embedded again,
    and a deleted file's vectors go with it."""
    root = _folder(tmp_path)
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c"):
        pass
    first = len(model.texts)
    assert 3 == first
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c"):
        pass
    assert first == len(model.texts)
    (root / "cafe.md").write_text("# Cafe\n\nCoffee beans are ground fresh.\n", encoding="utf-8")
    (root / "blame.md").unlink()
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c") as index:
        assert ["# Cafe\n\nCoffee beans are ground fresh."] == model.texts[first:]
        paths = [p.path for p in await index.nearest("who changed this line", limit=5)]
        assert sorted(paths) == ["bisect.md", "cafe.md"]


async def test_another_model_embeds_every_passage_again(
    tmp_path: Path, model: ConceptModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors are kept under their model's name: another model re-embeds them all."""
    root = _folder(tmp_path)
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c"):
        pass
    other = ConceptModel("concepts-2")
    vectors.register("other", lambda: other)
    monkeypatch.setenv(EMBEDDER_ENV, "other")
    try:
        async with await DocumentIndex.open(root, cache_dir=tmp_path / "c") as index:
            assert 3 == len(other.texts)
            assert "blame.md" == (await index.nearest("who is the author", limit=1))[0].path
    finally:
        vectors.register("other", lambda: None)


async def test_without_a_model_words_alone_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that is not installed: searching by words works, nearest finds nothing,
    and one warning says so however often it is asked."""
    vectors.register("absent", lambda: None)
    monkeypatch.setenv(EMBEDDER_ENV, "absent")
    with capture_logs() as logs:
        async with await DocumentIndex.open(_folder(tmp_path), cache_dir=tmp_path / "c") as index:
            assert ["cafe.md"] == [p.path for p in await index.search("espresso")]
            assert [] == await index.nearest("espresso")
            assert index.semantic is None
            assert embedder() is None
    said = [e for e in logs if "words alone" in e["event"] and e.get("model") == "absent"]
    assert 1 == len(said)
    assert "not installed" in said[0]["reason"]


def test_an_unknown_model_name_is_named_with_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``$RESEARCH_FSM_EMBEDDER`` naming no model: words alone, the warning lists the
    names it takes."""
    monkeypatch.setenv(EMBEDDER_ENV, "no-such-model")
    with capture_logs() as logs:
        assert embedder() is None
    (said,) = [e for e in logs if e.get("model") == "no-such-model"]
    assert "unknown model" in said["reason"] and "wordllama" in said["reason"]


def test_safetensors_are_read_with_numpy(tmp_path: Path) -> None:
    """F16, F32 and BF16 tensors come back as the float32 values written."""
    values = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32)
    blobs = {
        "a": ("F16", values.astype("<f2").tobytes()),
        "b": ("F32", values.astype("<f4").tobytes()),
        "c": ("BF16", (values.view(np.uint32) >> 16).astype("<u2").tobytes()),
    }
    header: dict[str, Any] = {}
    data = b""
    for name, (kind, blob) in blobs.items():
        header[name] = {
            "dtype": kind,
            "shape": [2, 2],
            "data_offsets": [len(data), len(data) + len(blob)],
        }
        data += blob
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    for name in blobs:
        assert values.tolist() == vectors.read_safetensors(path, name).tolist()


def test_code_blocks_are_not_part_of_a_passage_vector() -> None:
    """A passage's vector is made of its prose: a fenced code block is left out."""
    text = "Run it like this:\n\n```\nlet x = foo();\n```\n\nThen it works."
    made = vectors.passage_text("Title", ("Heading",), text)
    assert "foo" not in made
    assert "Run it like this:" in made and "Then it works." in made


def test_wordllama_loads_from_its_wheel_with_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled model and tokenizer load and embed with every socket refused: nothing
    is downloaded, and a question is closest to the sentence that means it."""
    pytest.importorskip("wordllama", reason="the semantic extra (wordllama) is not installed")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a socket was opened: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = vectors.load_wordllama()
    assert model is not None and 256 == model.dim
    found = model.embed(
        [
            "Who last changed each line of a file?",
            "Show what revision and author last modified each line of a file.",
            "The espresso machine needs descaling monthly.",
        ]
    )
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-5)
    assert float(found[0] @ found[1]) > float(found[0] @ found[2])


async def test_an_index_of_the_previous_schema_is_rebuilt_with_vectors(
    tmp_path: Path, model: ConceptModel
) -> None:
    """An index written before vectors existed (schema 4) is rebuilt once, saying so, and
    its passages get vectors."""
    import sqlite3

    root = _folder(tmp_path)
    async with await DocumentIndex.open(root, cache_dir=tmp_path / "c"):
        pass
    (path,) = (tmp_path / "c").glob("*.sqlite")
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='research-fsm-documents-4+bigrams' WHERE key='schema'")
    db.execute("DROP TABLE vectors")
    db.commit()
    db.close()
    with capture_logs() as logs:
        async with await DocumentIndex.open(root, cache_dir=tmp_path / "c") as index:
            assert 3 == index.stats.read
            assert "bisect.md" == (await index.nearest("what broke", limit=1))[0].path
    rebuilt = [e for e in logs if e["event"] == "document index rebuilt"]
    assert ["another schema version"] == [e["reason"] for e in rebuilt]
