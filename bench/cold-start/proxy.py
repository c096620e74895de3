"""The store's side of the cold-start harness (README.md here): a timing
proxy in front of moto, plain or TLS-terminating with a CA made for the run,
which records when a request to the store was in flight."""

from __future__ import annotations

import select
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

now = time.perf_counter_ns



class TimingProxy:
    """Forwards loopback connections to moto and records, per request, the time
    from the request's first byte to the response's last byte (the store's
    share of an invocation). With `tls`, terminates TLS first; of a new
    connection's handshake only the server's steps count as the store's time
    (`handshake`)."""

    def __init__(self, upstream: tuple[str, int], tls: ssl.SSLContext | None = None,
                 record_in: TimingProxy | None = None):
        self.upstream = upstream
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        # With `record_in`, the exchanges go into that proxy's record: one
        # function's time at all the services it talks to, in one `busy_ns`.
        self.lock = record_in.lock if record_in else threading.Lock()
        self.exchanges: list[list[int | None]] = record_in.exchanges if record_in else []
        threading.Thread(target=self.accept_loop, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def accept_loop(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def busy_ns(self, start: int, end: int) -> int:
        """How long within [start, end] at least one request was in flight."""
        with self.lock:
            spans = sorted(
                (max(s, start), min(e if e is not None else end, end))
                for s, e in self.exchanges
                if s is not None and s < end and (e is None or e > start)
            )
        total, cursor = 0, start
        for s, e in spans:
            s = max(s, cursor)
            if e > s:
                total += e - s
                cursor = e
        return total

    def handshake(self, client: socket.socket) -> ssl.SSLSocket:
        """The server's side of the TLS handshake, step by step, each step
        recorded as the store's time: reading the ClientHello and writing
        its flight (key share, certificate, signature), then reading the
        client's Finished. The time in between is the client's: its key
        exchange and certificate check run on the function's CPU share, so
        they count to its own time, as in Lambda."""
        client.recv(1, socket.MSG_PEEK)  # the ClientHello is here
        tls = self.tls.wrap_socket(client, server_side=True, do_handshake_on_connect=False)
        tls.setblocking(False)
        while True:
            step = [now(), None]
            try:
                tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            step[1] = now()
            with self.lock:
                self.exchanges.append(step)
            if done:
                break
            if not select.select([tls], [], [], 60)[0]:
                raise OSError("the client's handshake stalled")
        tls.setblocking(True)
        return tls

    def first_start(self, start: int, end: int) -> int | None:
        """When the first request (or handshake) within [start, end) began."""
        with self.lock:
            starts = [s for s, _ in self.exchanges if s is not None and start <= s < end]
        return min(starts, default=None)

    def serve(self, client: socket.socket) -> None:
        exchange: list[int | None] | None = None
        try:
            # Before the handshake, so that the client never waits for it.
            upstream = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                client = self.handshake(client)
        except (OSError, ssl.SSLError):
            client.close()
            upstream.close()
            return
        answering = False
        try:
            while True:
                pending = isinstance(client, ssl.SSLSocket) and client.pending()
                readable = [client] if pending else select.select([client, upstream], [], [])[0]
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        if exchange is None or answering:
                            exchange = [now(), None]
                            answering = False
                            with self.lock:
                                self.exchanges.append(exchange)
                        upstream.sendall(data)
                    else:
                        client.sendall(data)
                        answering = True
                        if exchange is not None:
                            exchange[1] = now()
        except (OSError, ssl.SSLError):
            return
        finally:
            if exchange is not None and exchange[1] is None:
                # A request cut off by the process's end (the harness stops
                # it once every invocation is answered; display's alarm step
                # may still be writing): it ends here, not never.
                exchange[1] = now()
            client.close()
            upstream.close()


def make_tls(workdir: Path) -> tuple[ssl.SSLContext, Path]:
    """A CA and a server certificate for 127.0.0.1 (RSA 2048 like DynamoDB's),
    and a CA bundle of the system's roots plus this CA (so that loading the
    roots costs what it costs in Lambda)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=workdir)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=cold-start bench CA", "-keyout", "ca.key", "-out", "ca.pem",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")
    (workdir / "ext.cnf").write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1\n"
    )
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")
    (workdir / "chain.pem").write_bytes(
        (workdir / "server.pem").read_bytes() + (workdir / "ca.pem").read_bytes()
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(workdir / "chain.pem", workdir / "server.key")
    system = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    bundle = workdir / "bundle.pem"
    bundle.write_bytes(Path(system).read_bytes() + b"\n" + (workdir / "ca.pem").read_bytes())
    return context, bundle


