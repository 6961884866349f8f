"""Idempotency keys: unique per request, across threads and across a fork, without a system call each."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from holysheep._core.call import new_idempotency_key


def test_keys_are_unique_and_share_this_processes_random_prefix() -> None:
    keys = [new_idempotency_key() for _ in range(10_000)]
    assert len(set(keys)) == 10_000
    prefixes = {k.rsplit("-", 1)[0] for k in keys}
    assert len(prefixes) == 1
    (prefix,) = prefixes
    assert prefix.startswith("hs-") and len(prefix) == len("hs-") + 16  # 64 random bits, in hex
    int(prefix[3:], 16)


def test_keys_from_many_threads_never_repeat() -> None:
    found: list[list[str]] = [[] for _ in range(8)]

    def take(slot: list[str]) -> None:
        slot.extend(new_idempotency_key() for _ in range(2_000))

    threads = [threading.Thread(target=take, args=(slot,)) for slot in found]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = [k for slot in found for k in slot]
    assert len(keys) == len(set(keys)) == 16_000


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")
def test_a_forked_child_draws_a_new_prefix() -> None:
    parent_key = new_idempotency_key()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next key and leave at once
        try:
            os.write(write, new_idempotency_key().encode())
        finally:
            os._exit(0)
    os.close(write)
    child_key = os.read(read, 200).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child_key.startswith("hs-")
    assert child_key.rsplit("-", 1)[0] != parent_key.rsplit("-", 1)[0]
    assert new_idempotency_key().rsplit("-", 1)[0] == parent_key.rsplit("-", 1)[0]  # the parent's is unchanged
