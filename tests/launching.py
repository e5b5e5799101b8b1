"""Starting `accelerate launch` in tests without choosing a free port first (no tests here).

A port found free and then handed to a child can be taken by anyone in between. Instead the
test holds a listening socket on a port the OS picked and names that port: `accelerate launch`
on one machine sees it in use and starts torchrun in standalone mode, whose rendezvous store
binds port 0 itself and tells the workers which port it got.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port held (listening) for the duration of the block."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


STANDALONE_NOTE = "already in use"  # accelerate's warning when it falls back to standalone
