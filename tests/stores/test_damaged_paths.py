"""File-store paths something else took the place of (issue 36, bug 15): a directory
or a dangling symbolic link where a thread's segment, list or marker should be. Reads
raise the store's ``CorruptCheckpoint`` naming the path, never a raw ``OSError``; and
``delete_thread`` still deletes the thread and its subgraph's child thread."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from engine.test_delete_safety import Calls, parent

from research_fsm.engine import CorruptCheckpoint, EngineError
from research_fsm.stores import JsonFileCheckpointStore


def _directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _full_directory(path: Path) -> None:
    _directory(path)
    (path / "inside").mkdir()
    (path / "inside" / "file").write_text("x")
    (path / "link").symlink_to(path.parent / ".secret")  # never followed


def _dangling(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(path.parent / "nowhere")


PLACES: dict[str, Callable[[str, str], str]] = {
    "segment": lambda thread, child: f"{thread}=000000000001.jsonl",
    "next segment": lambda thread, child: f"{thread}=000000000009.jsonl",
    "list": lambda thread, child: f"{thread}.idx",
    "pruned marker": lambda thread, child: f"{thread}=pruned",
    "list being written": lambda thread, child: f"{thread}=idx.tmp",
    "lines moved aside": lambda thread, child: f"{thread}=000000000001.jsonl.corrupt",
    "child's segment": lambda thread, child: f"{child}=000000000001.jsonl",
    "child's list": lambda thread, child: f"{child}.idx",
}
KINDS = {"directory": _directory, "full directory": _full_directory, "dangling link": _dangling}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("place", list(PLACES))
async def test_a_damaged_path_is_the_store_s_error_and_delete_thread_deletes_it(
    tmp_path: Path, place: str, kind: str
) -> None:
    """Whatever stands where a file of the thread (or of its child) should be: every
    read either works or raises ``CorruptCheckpoint`` naming that path, and
    ``delete_thread`` removes it with the rest (the thread, and the child when what
    names it is readable), never a raw ``OSError``."""
    directory = tmp_path / "s"
    app = parent(JsonFileCheckpointStore(directory, durability="none"), Calls())
    first = await app.run({"topic": "t"}, thread_id="p")
    assert first.suspension is not None
    (child,) = {p.name.split("=")[0] for p in directory.glob("p.research.*=*")}
    name = PLACES[place]("p", child)
    KINDS[kind](directory / name)
    store = JsonFileCheckpointStore(directory, durability="none")
    reader = parent(store, Calls())
    for call in (
        lambda: reader.get_state("p"),
        lambda: reader.history("p").__anext__(),
        lambda: reader.history("p", limit=1).__anext__(),
        lambda: reader.resume(first.suspension.token, "yes"),  # type: ignore[union-attr]
    ):
        try:
            await call()
        except CorruptCheckpoint as exc:
            assert name in str(exc)
        except EngineError:
            pass
    await reader.delete_thread("p")
    left = sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))
    named_child = place.startswith("child") or place not in ("segment",)
    expected = [] if named_child else [f"{child}=000000000001.jsonl"]
    assert left == expected
    assert await store.load_latest("p") is None
    await reader.delete_thread("p")  # twice is harmless
