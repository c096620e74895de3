"""The events the cold-start harness hands the functions (README.md here):
API Gateway HTTP API payload 2.0 for the HTTP functions, signed as a
central system signs them, the stream batch for the broadcast, and the
check of each answer."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import broadcast
from report import BASELINE

CONSUMER = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f"
SECRET = "bench-secret"
# Table names and addresses differ per harness run, so that a store used
# before still answers every open with 201.
SESSION = uuid.uuid4().hex[:8]
ELEMENT_ADDRESS = "bench-element"


def http_event(method: str, path: str, body: str | None = None, query: str = "") -> dict:
    domain = "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com"
    headers = {
        "accept": "*/*",
        "host": domain,
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-6740c2a0-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(body.encode()))
    epoch_ms = int(time.time() * 1000)
    event = {
        "version": "2.0",
        "routeKey": f"ANY {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "domainName": domain,
            "domainPrefix": "a1b2c3d4e5",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "curl/8.5.0",
            },
            "requestId": uuid.uuid4().hex[:16] + "=",
            "routeKey": f"ANY {path}",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": epoch_ms,
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = dict(
            part.split("=", 1) for part in query.split("&") if "=" in part
        )
    if body is not None:
        event["body"] = body
    return event


def signed_body(target: str, data: dict) -> str:
    """A signed request (README "Trying it with curl", DECISIONS §2)."""
    data_json = json.dumps(data, separators=(",", ":"))
    message = f"{target}.{CONSUMER}.{data_json}".encode()
    digest = hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
    return (
        f'{{"target":{json.dumps(target)},"consumer":"{CONSUMER}",'
        f'"hash":"{digest}","data":{data_json}}}'
    )


def display_address(scenario: str, rep: int, k: int) -> str:
    return f"bench-{SESSION}-{scenario}-{rep}-{k}"


def events_for(function: str, scenario: str, rep: int, count: int) -> list[tuple[dict, int]]:
    """The events of one cold start and the status each must answer with."""
    events = []
    for k in range(count):
        if function == "display":
            # A fresh address each time: every open is a new call (201).
            address = display_address(scenario, rep, k)
            body = signed_body(address, {"event": "Normalruf", "battery": 80.0})
            events.append((http_event("POST", "/api/v1/display", body, "include=type"), 201))
        elif function == "element":
            body = signed_body(ELEMENT_ADDRESS, {"battery": float(50 + k), "reachable": True})
            events.append((http_event("POST", "/api/v1/element", body), 200))
        elif function == "call-types":
            events.append((http_event("GET", "/api/v1/display/call-types"), 200))
        elif function == "sandbox":
            events.append((http_event("POST", "/api/v1/sandbox/consumers"), 201))
        elif function == "broadcast":
            # The same call opened each time: every invocation posts it to
            # every connection again.
            events.append((broadcast.stream_event(), 0))
        else:  # the echo answers its event
            events.append((http_event("GET", "/api/v1/display/call-types"), 0))
    return events


def check_response(function: str, event: dict, expected: int, body: bytes) -> str | None:
    """None when the response is the expected one, else what is wrong."""
    try:
        response = json.loads(body)
    except ValueError:
        return f"response is not JSON: {body[:300]!r}"
    if function == BASELINE:
        return None if response == event else "the echo did not return its event"
    if function == "broadcast":
        return None if response == broadcast.ANSWER else f"records failed: {body[:500]!r}"
    status = response.get("statusCode") if isinstance(response, dict) else None
    if status != expected:
        return f"status {status}, expected {expected}: {body[:500]!r}"
    return None
