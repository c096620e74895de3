"""The broadcast function's side of the cold-start harness (issue 30): the
second function a call crosses on its way to a screen. Its connections table
in moto, a stand-in of API Gateway's management API that counts the posts,
and its stream event: one call opened, the record `call-opened` of
functions/live-aws/tests/fixtures/stream-batch.json (scope `installation`,
event Notruf), so the bench and the function's tests read the same record."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURE = (Path(__file__).resolve().parents[2]
           / "functions/live-aws/tests/fixtures/stream-batch.json")
RECORD = "call-opened"
SCOPE = "installation"
# Displays connected: each record is posted to every one of them, as in a
# care home with a display per corridor.
CONNECTIONS = 10
# What the broadcast answers when every record went through.
ANSWER = {"batchItemFailures": []}


def stream_event() -> dict:
    records = json.loads(FIXTURE.read_text())["Records"]
    record = next(r for r in records if r["eventID"] == RECORD)
    return {"Records": [record]}


def create_connections(dynamodb, table: str) -> None:
    """The connections table as the stack makes it (keys only: the broadcast
    queries by scope and needs no index) with CONNECTIONS displays of the
    record's scope. `dynamodb(operation, body)` sends one request to moto."""
    dynamodb("CreateTable", {
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "scope", "AttributeType": "S"},
                                 {"AttributeName": "connection_id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "scope", "KeyType": "HASH"},
                      {"AttributeName": "connection_id", "KeyType": "RANGE"}],
    })
    for k in range(CONNECTIONS):
        dynamodb("PutItem", {"TableName": table, "Item": {
            "scope": {"S": SCOPE},
            # API Gateway's form: 12 bytes in base64.
            "connection_id": {"S": f"benchConn{k:03d}="},
            "sections": {"L": []},
            "connected_at": {"S": "2026-01-05T09:00:00Z"},
            "ttl": {"N": "4102444800"},
        }})


class ManagementApi(ThreadingHTTPServer):
    """`POST /live/@connections/{id}`: 200 for the bench's connections,
    410 for any other id (the broadcast's warm-up posts to one that does
    not exist). Counts the delivered posts."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.delivered = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server_address[:2]
        return host, port


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ManagementApi

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        known = "/%40connections/benchConn" in self.path or "/@connections/benchConn" in self.path
        if known:
            with self.server.lock:
                self.server.delivered += 1
        status, body = (200, b"") if known else (410, b'{"message":"Gone"}')
        # One write: no Nagle delay between head and body.
        head = (f"HTTP/1.1 {status} {'OK' if known else 'Gone'}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self.wfile.write(head.encode() + body)
        self.wfile.flush()
