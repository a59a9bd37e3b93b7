"""A test double of the extraction worker (``research_fsm.documents._work``): it speaks
the same protocol and prepares files the same way, except a file whose name says
``crash`` (the process exits), ``hang`` (it sleeps), or ``garbage`` (it answers bytes
that are no pickle)."""

from __future__ import annotations

import os
import struct
import sys
import time

from research_fsm.documents._work import READY, read_frame, run_job, write_frame


def main() -> None:
    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    write_frame(outbox, READY)
    while True:
        try:
            job = read_frame(inbox)
        except EOFError:
            return
        name = job[4]
        if "crash" in name:
            os._exit(3)
        if "hang" in name:
            time.sleep(3600)
        if "garbage" in name:
            outbox.write(struct.pack(">Q", 9) + b"not a pkl")
            outbox.flush()
            continue
        write_frame(outbox, run_job(job))


if __name__ == "__main__":
    main()
