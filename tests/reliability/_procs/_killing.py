"""What the kill-at-a-save child programs share (``every_save_child``, ``answers_child``):
the store a command names, the effects file, and a store whose n-th save kills the
process before or after it is made. A sibling module: the children run as scripts, so
this folder is first on their ``sys.path``."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from research_fsm.engine import CheckpointStore


def effect(effects: Path, line: str) -> None:
    """Append ``line`` to the effects file (one line per node return or save)."""
    with effects.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def store_of(command: dict[str, Any]) -> CheckpointStore:
    """The command's store: PostgreSQL when it names a ``dsn``, else a file store."""
    if command.get("dsn"):
        from research_fsm.stores.postgres import PostgresCheckpointStore

        return PostgresCheckpointStore(command["dsn"], schema=command["schema"])
    from research_fsm.stores import JsonFileCheckpointStore

    return JsonFileCheckpointStore(Path(command["store"]), durability="fsync")


def killing_store(command: dict[str, Any], effects: Path) -> CheckpointStore:
    """``store_of(command)`` whose save number ``kill_at`` SIGKILLs this process: before
    the save is made (``when="before"``) or after (``"after"``); each save made is
    marked ``save <n>`` in ``effects``."""
    store = store_of(command)
    save = store.save
    count = {"saves": 0}

    async def killing_save(checkpoint: Any) -> None:
        count["saves"] += 1
        if count["saves"] == command["kill_at"] and command["when"] == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        await save(checkpoint)
        effect(effects, f"save {count['saves']}")
        if count["saves"] == command["kill_at"]:
            os.kill(os.getpid(), signal.SIGKILL)

    store.save = killing_save  # type: ignore[method-assign]
    return store
