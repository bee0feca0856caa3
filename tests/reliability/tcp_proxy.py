"""A TCP proxy on 127.0.0.1 that can cut the database off and bring it back.

Stopping the shared PostgreSQL server would break every other test using it; cutting the
only path between the service and its database is the same outage from the service's
side: established connections die and new ones are refused.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        self._up = threading.Event()
        self._up.set()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """The database becomes unreachable: live connections drop, new ones are refused."""
        self._up.clear()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:  # a pipe thread shut it down already (its peer hung up)
                pass
            finally:
                s.close()  # always: a socket left open is a ResourceWarning when collected

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()
