"""TCP_NODELAY on the server's sockets: Streamlit 1.67 answers every request after the first on a connection about
40 ms late without it.

Streamlit binds its listening socket itself, as ``socket.socket(family)``, whose protocol number is 0, and asyncio
turns Nagle's algorithm off only on sockets whose protocol is IPPROTO_TCP (uvicorn has the same bug where it binds
the socket itself: Kludex/uvicorn#3149). With Nagle's algorithm on, a response's body, written after its headers,
waits until the browser acknowledges the headers, and a browser delays that acknowledgement by up to 40 ms on Linux.
A first visit loads about 140 of Streamlit's scripts over 6 connections, and every message of the websocket that
follows another one not yet acknowledged waits as well.

Linux passes a listening socket's TCP_NODELAY on to the connections it accepts, so the listener and the connections
already open are enough. Where the process's descriptors cannot be listed (Windows) nothing changes.
"""

from __future__ import annotations

import os
import socket
import stat

DESCRIPTOR_FOLDERS = ("/proc/self/fd", "/dev/fd")  # Linux; macOS and the BSDs


def open_descriptors() -> list[int]:
    """This process's open file descriptors (none where they cannot be listed)."""
    for folder in DESCRIPTOR_FOLDERS:
        if os.path.isdir(folder):
            return [int(name) for name in os.listdir(folder)]
    return []


def no_delay_on_tcp_sockets() -> None:
    """Turn Nagle's algorithm off on every TCP socket of this process, listening or connected."""
    for descriptor in open_descriptors():
        try:
            if not stat.S_ISSOCK(os.fstat(descriptor).st_mode):
                continue
            with socket.socket(fileno=os.dup(descriptor)) as sock:  # a duplicate: closing it leaves the socket open
                if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # closed meanwhile (the listing's own descriptor), or not a socket this platform can open
            continue
