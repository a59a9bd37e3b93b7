"""Child program of the PostgreSQL crash tests: ``crash_child``'s conversations on Postgres.

Usage: ``python pg_crash_child.py MODE DSN SCHEMA LOG_FILE``. Runs the same
conversations as ``crash_child.py`` (threads ``<mode>-0``, ``<mode>-1``...,
continuing whatever a killed predecessor left) on a ``PostgresCheckpointStore``
in SCHEMA, logging (fsynced) every call that returned, until it is SIGKILLed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from crash_child import (
    ASSISTANT_KEEP,
    advance_assistant,
    advance_engine,
    engine_app,
    log_line,
    make_assistant,
)

from research_fsm.stores.postgres import PostgresCheckpointStore


async def main(mode: str, dsn: str, schema: str, log: Path) -> None:
    keep = ASSISTANT_KEEP if mode == "assistant" else None
    store = PostgresCheckpointStore(dsn, schema=schema, keep=keep)
    await store.load_latest("warm-up")  # connect and migrate before the parent says go
    if mode == "engine":
        app = engine_app(store)

        async def step(thread_id: str) -> dict[str, Any] | None:
            return await advance_engine(app, thread_id)
    else:
        assistant = make_assistant(store)
        await assistant.graph()

        async def step(thread_id: str) -> dict[str, Any] | None:
            return await advance_assistant(assistant, thread_id)

    print("ready", flush=True)
    if (await asyncio.to_thread(sys.stdin.readline)).strip() != "go":
        return
    number = 0
    while True:
        thread_id = f"{mode}-{number}"
        while (record := await step(thread_id)) is not None:
            log_line(log, record)
        number += 1


if __name__ == "__main__":
    from research_fsm import configure_logging

    configure_logging("WARNING")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])))
