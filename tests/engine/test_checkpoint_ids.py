"""Checkpoint ids (``new_checkpoint_id``): their random part is drawn from a pool of
``os.urandom`` bytes, never shared by two ids: not across calls, threads nor a fork."""

from __future__ import annotations

import os
import re
import sys
import threading

import pytest

from research_fsm.engine.store import new_checkpoint_id, seq_hint

_ID = re.compile(r"[0-9a-f]{24}")


def test_ids_are_24_hex_digits_with_their_seq_and_never_repeat() -> None:
    """Ten thousand ids (several pools' worth) are well formed, carry their seq and are all different."""
    ids = [new_checkpoint_id(seq) for seq in range(10_000)]
    assert all(_ID.fullmatch(i) for i in ids)
    assert [seq_hint(i) for i in ids] == list(range(10_000))
    assert len({i[8:] for i in ids}) == len(ids)


def test_threads_draw_different_digits() -> None:
    """Ids made at once in several threads share no random part."""
    made: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        out.extend(new_checkpoint_id(1)[8:] for _ in range(3_000))

    threads = [threading.Thread(target=draw, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for out in made for i in out]
    assert len(set(every)) == len(every) == 12_000


@pytest.mark.skipif(sys.platform == "win32", reason="os.fork")
def test_a_forked_child_draws_afresh() -> None:
    """A child forked with part of the parent's pool left makes ids the parent does not make next."""
    new_checkpoint_id(1)  # the pool is drawn, most of it left
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, " ".join(new_checkpoint_id(1)[8:] for _ in range(50)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {new_checkpoint_id(1)[8:] for _ in range(50)}
    assert len(child) == 50
    assert not child & parent
