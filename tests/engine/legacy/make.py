"""Write the 0.1.0 threads: run with the 0.1.0 checkout first on the path,
``python -m legacy.make DIR`` (from tests/engine): a file store in ``DIR/file`` and
every checkpoint of it as JSON in ``DIR/checkpoints.json``.

Threads: ``fan`` (suspended in its fan-out: ``ask[0]`` waits, the others are done),
``top`` (suspended at ``review``), ``paused`` (paused before ``synth`` at a
breakpoint, its fan-out answered), ``done`` (completed, then ``update_state``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from research_fsm.stores import JsonFileCheckpointStore

from .graph import legacy_graph


async def main(directory: Path) -> None:
    store = JsonFileCheckpointStore(directory / "file", durability="none")
    app = legacy_graph(store)
    await app.run({}, thread_id="fan")

    first = await app.run({}, thread_id="top")
    second = await app.resume(first.suspensions[0].token, "yes")
    assert second.status == "suspended", second

    pausing = legacy_graph(store, interrupt_before=["synth"])
    first = await pausing.run({}, thread_id="paused")
    second = await pausing.resume(first.suspensions[0].token, "sure")
    assert second.suspension is not None and second.suspension.breakpoint == "before"

    first = await app.run({}, thread_id="done")
    second = await app.resume(first.suspensions[0].token, "ok")
    third = await app.resume(second.suspensions[0].token, "fine")
    assert third.status == "completed", third
    await app.update_state("done", {"verdict": "edited"})

    saved: dict[str, list[dict[str, Any]]] = {}
    for thread in ("fan", "top", "paused", "done"):
        rows = [c async for c in store.history(thread)][::-1]
        saved[thread] = [_json(c) for c in rows]
    (directory / "checkpoints.json").write_text(json.dumps(saved, indent=1, sort_keys=True))


def _json(checkpoint: Any) -> dict[str, Any]:
    fields = {f.name: getattr(checkpoint, f.name) for f in dataclasses.fields(checkpoint)}
    state = fields["state"]
    fields["state"] = state if isinstance(state, dict) else state.model_dump(mode="json")
    fields["changed_branches"] = None
    fields["changes"] = None
    fields["extra"] = {}
    return fields


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
