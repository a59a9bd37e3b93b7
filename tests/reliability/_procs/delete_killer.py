"""Child program: builds a thread, then SIGKILLs itself in the middle of deleting it.

Usage: ``python delete_killer.py STORE_DIR K``. Runs two turns of the crash
child's engine conversation on thread ``t`` (the first suspends and is resumed)
on a store keeping 2 checkpoints (segments of 2 lines, so the thread spans
more than one segment file), prints the used resume token, the latest checkpoint id
and the number of segment files, then deletes the thread and dies at its K-th
file removal. Prints ``deleted`` and exits 0 only if the delete finished first.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from crash_child import advance_engine, engine_app

from research_fsm.stores import JsonFileCheckpointStore

KEEP = 2


async def main(directory: Path, kill_at: int) -> None:
    store = JsonFileCheckpointStore(directory, durability="fsync", keep=KEEP)
    app = engine_app(store)
    first = await app.run({"turn": 1, "log": ["in1"]}, thread_id="t")
    assert first.suspension is not None
    while (await advance_engine(app, "t")) is not None:
        snapshot = await app.get_state("t")
        assert snapshot is not None
        if snapshot.state.turn == 2 and snapshot.status == "completed":
            break
    segments = [p for p in store.thread_files("t") if p.name.endswith(".jsonl")]
    print(first.suspension.token, snapshot.checkpoint_id, len(segments), flush=True)
    real_unlink = os.unlink
    removed = {"n": 0}

    def unlink(path: str | os.PathLike[str], **kwargs: object) -> None:
        removed["n"] += 1
        if removed["n"] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        real_unlink(path, **kwargs)  # type: ignore[arg-type]

    os.unlink = unlink  # type: ignore[assignment]
    await app.delete_thread("t")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
    print("deleted", flush=True)
