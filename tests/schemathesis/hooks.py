"""Schemathesis hooks for the nurse-call service (scripts/schemathesis, docs/openapi.md).

Schemathesis generates request bodies from docs/openapi.yaml, but a generated
`hash` never verifies: every such request would stop at 400 `invalid_hash` and
nothing behind the signature would be tested. `before_call` therefore signs
each generated display and element request the way a client does
(DECISIONS §2), just before it is sent:

    hash = hex HMAC-SHA256(secret, "<target>.<consumer>.<data_json>[.<signed_at>]")

with `data_json` the `data` of the body as it is sent: Schemathesis sends
JSON bodies through requests (`json.dumps` with its defaults: ASCII escapes,
", " and ": " separators), and the service removes the whitespace outside
strings, so the signed text is `json.dumps(data, separators=(",", ":"))`.
The multi form of the element request (no top-level target) signs an empty
target. Only requests whose `consumer` is a well-formed UUID and whose `hash`
is a string are signed: the negative cases that break those two keep them
broken and meet their 422. `after_call` fails the run if a request this hook
signed is answered `invalid_hash`, so a mistake in the signing cannot pass
unnoticed as a "documented 400".

To reach more than 422s, well-formed requests also get a configured call type
as `event`, a time of the last days as `created_at` / `closed_at` (DECISIONS
§5) and, in production, a registered element as `target` for three of
four generated values (chosen by a checksum of the generated value, so a run
is reproducible with `--seed`); a generated `signed_at` is replaced by the
current time. The display reads and the live socket get the display's
credentials, the sandbox state its consumer's proof. The staff operations
get a staff member's token (DECISIONS §14), and the responses path a call
the hook opened for three of four generated ids. An alarm server's response
(`POST /api/v1/response`, DECISIONS §16) is signed like the others; for
three of four generated values its `data.call` becomes that call (and
`target` its address) and its `data.staff` that staff member's id, so that
it reaches the 200 and 409 behind the state checks, not only their 422.

Configuration (environment):
    NC_BASE_URL       the server, e.g. http://127.0.0.1:3000
    NC_MODE           sandbox (default) or production
    sandbox:          the hook creates its consumer with POST /api/v1/sandbox/consumers
                      and reads with the test page's cookie
    production:       NC_CONSUMER, NC_SECRET (a seeded consumer), NC_TARGETS (a JSON
                      list of registered addresses), NC_DISPLAY_TOKEN (a display's token),
                      NC_STAFF_TOKEN, NC_STAFF_ID (a staff member's token and id)
    sandbox:          the staff member is created with POST /api/v1/sandbox/staff
    NC_HOOK_SUMMARY   a file the hook writes its counts to at exit (optional)
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import hmac
import json
import os
import re
import time
import zlib

import requests
import schemathesis

BASE_URL = os.environ["NC_BASE_URL"].rstrip("/")
MODE = os.environ.get("NC_MODE", "sandbox")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

SIGNED_PATHS = {"/api/v1/display", "/api/v1/element"}
ALARM_RESPONSE = "/api/v1/response"
HEARTBEAT = "/api/v1/heartbeat"
DISPLAY_READS = {"/api/v1/display/calls", "/api/v1/display/elements", "/api/v1/display/live"}
SANDBOX_STATE = "/api/v1/sandbox/state"
STAFF_PATHS = {
    "/api/v1/staff/me",
    "/api/v1/staff/duty",
    "/api/v1/staff/calls",
    "/api/v1/staff/calls/{id}/responses",
    "/api/v1/staff/push-key",
    "/api/v1/staff/push-subscriptions",
}
RESPONSES = "/api/v1/staff/calls/{id}/responses"


def _sandbox_consumer() -> tuple[str, str]:
    response = requests.post(f"{BASE_URL}/api/v1/sandbox/consumers", timeout=10)
    response.raise_for_status()
    data = response.json()["data"]
    return data["consumer"], data["secret"]


if MODE == "production":
    CONSUMER = os.environ["NC_CONSUMER"]
    SECRET = os.environ["NC_SECRET"]
    TARGETS: list[str] = json.loads(os.environ["NC_TARGETS"])
    DISPLAY_TOKEN: str | None = os.environ["NC_DISPLAY_TOKEN"]
    STAFF_TOKEN: str = os.environ["NC_STAFF_TOKEN"]
    STAFF_ID: str = os.environ["NC_STAFF_ID"]
else:
    CONSUMER, SECRET = _sandbox_consumer()
    TARGETS = []
    DISPLAY_TOKEN = None

EVENTS: list[str] = list(requests.get(f"{BASE_URL}/api/v1/display/call-types", timeout=10).json()["data"])


def hmac_hex(message: str) -> str:
    return hmac.new(SECRET.encode(), message.encode(), hashlib.sha256).hexdigest()


# The test page's cookie: `<consumer>.<proof>`, proof = HMAC of the consumer id.
PROOF = hmac_hex(CONSUMER)


def _sandbox_staff() -> tuple[str, str]:
    """A staff member of the hook's consumer: their token and id."""
    response = requests.post(
        f"{BASE_URL}/api/v1/sandbox/staff",
        params={"consumer": CONSUMER, "hash": PROOF},
        json={"name": "Schemathesis"},
        timeout=10,
    )
    response.raise_for_status()
    data = response.json()["data"]
    return data["token"], data["id"]


# The address of the call the hook opens for the responses.
CALL_TARGET = TARGETS[0] if TARGETS else "Schemathesis-1"


def _open_call() -> str:
    """Opens a Notruf for the responses path; its id."""
    target = CALL_TARGET
    data = {"event": "Notruf"}
    data_json = json.dumps(data, separators=(",", ":"))
    body = {
        "target": target,
        "consumer": CONSUMER,
        "hash": hmac_hex(f"{target}.{CONSUMER}.{data_json}"),
        "data": data,
    }
    response = requests.post(f"{BASE_URL}/api/v1/display", json=body, timeout=10)
    response.raise_for_status()
    return str(response.json()["data"]["id"])


if MODE != "production":
    STAFF_TOKEN, STAFF_ID = _sandbox_staff()
CALL_ID = _open_call()

# What the hook did and what came back, for the run's record.
COUNTS: collections.Counter[str] = collections.Counter()
SIGNED: set[int] = set()


def _pick(value: object, choices: list[str]) -> str | None:
    """A choice for three of four generated values, stable for a value."""
    if not choices:
        return None
    checksum = zlib.crc32(repr(value).encode())
    if checksum % 4 == 0:
        return None
    return choices[checksum % len(choices)]


def _steer_item(item: dict) -> None:
    """A registered target (production) and a configured event, mostly."""
    target = item.get("target")
    if isinstance(target, str) and (choice := _pick(target, TARGETS)):
        item["target"] = choice
    event = item.get("event")
    if isinstance(event, str) and (choice := _pick(event, EVENTS)):
        item["event"] = choice
    for key in ("created_at", "closed_at"):
        value = item.get(key)
        if isinstance(value, str) and (choice := _pick(value, RECENT_TIMES)):
            item[key] = choice


def _recent_times() -> list[str]:
    """Wire times of a day ago, in UTC: in any zone within ±14 h of UTC they
    lie inside the week before the service's clock that DECISIONS §5 allows
    (a generated date of some year is refused with 422)."""
    day_ago = time.time() - 86_400
    return [time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(day_ago - hours * 3600)) for hours in range(4)]


RECENT_TIMES = _recent_times()


def _steer_response(body: dict) -> None:
    """An alarm server's response: mostly the hook's call on its address,
    answered by the hook's staff member."""
    data = body.get("data")
    if not isinstance(data, dict):
        return
    call = data.get("call")
    if isinstance(call, int) and not isinstance(call, bool) and _pick(call, [CALL_ID]):
        data["call"] = int(CALL_ID)
        if isinstance(body.get("target"), str):
            body["target"] = CALL_TARGET
    staff = data.get("staff")
    if isinstance(staff, str) and _pick(staff, [STAFF_ID]):
        data["staff"] = STAFF_ID


def _sign(body: dict, steer: bool = True) -> bool:
    """Signs `body` in place with the hook's consumer; False if it is not
    signable. `steer`: pick targets, events and times first (the display
    and element requests)."""
    if not (isinstance(body.get("consumer"), str) and UUID.match(body["consumer"])):
        return False
    if not isinstance(body.get("hash"), str) or "data" not in body:
        return False
    data = body["data"]
    if steer and isinstance(data, dict):
        _steer_item(data)
    elif steer and isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                _steer_item(item)
    target = body.get("target")
    if isinstance(target, str):
        if steer:
            _steer_item(body)
        target = body["target"]
    signed_target = "" if isinstance(data, list) else target
    if not isinstance(signed_target, str):
        return False
    body["consumer"] = CONSUMER
    string = f"{signed_target}.{CONSUMER}.{json.dumps(data, separators=(',', ':'))}"
    signed_at = body.get("signed_at")
    if isinstance(signed_at, int) and not isinstance(signed_at, bool):
        body["signed_at"] = int(time.time())
        string += f".{body['signed_at']}"
    elif "signed_at" in body:
        return False  # a mistyped signed_at is a 422 before any signature
    body["hash"] = hmac_hex(string)
    return True


@schemathesis.hook
def before_call(context, case, kwargs):
    path = case.operation.path
    if path in SIGNED_PATHS and isinstance(case.body, dict):
        if _sign(case.body):
            SIGNED.add(id(case))
            COUNTS["signed"] += 1
    elif path == HEARTBEAT and isinstance(case.body, dict):
        # Mostly its own id as target (anything else is a 422 `address`).
        if isinstance(case.body.get("target"), str) and _pick(case.body["target"], [CONSUMER]):
            case.body["target"] = CONSUMER
        if _sign(case.body, steer=False):
            SIGNED.add(id(case))
            COUNTS["signed"] += 1
    elif path == ALARM_RESPONSE and isinstance(case.body, dict):
        _steer_response(case.body)
        if _sign(case.body, steer=False):
            SIGNED.add(id(case))
            COUNTS["signed"] += 1
    elif path in DISPLAY_READS:
        if DISPLAY_TOKEN and path.endswith("/live"):
            case.query["token"] = DISPLAY_TOKEN
        elif DISPLAY_TOKEN:
            case.headers["Authorization"] = f"Bearer {DISPLAY_TOKEN}"
        else:
            case.cookies["nc_sandbox"] = f"{CONSUMER}.{PROOF}"
    elif path in STAFF_PATHS:
        case.headers["Authorization"] = f"Bearer {STAFF_TOKEN}"
        if path == RESPONSES:
            call = case.path_parameters.get("id")
            if isinstance(call, str) and _pick(call, [CALL_ID]):
                case.path_parameters["id"] = CALL_ID
    elif path == SANDBOX_STATE:
        consumer, proof = case.query.get("consumer"), case.query.get("hash")
        if isinstance(consumer, str) and UUID.match(consumer) and isinstance(proof, str):
            case.query["consumer"] = CONSUMER
            case.query["hash"] = PROOF


@schemathesis.hook
def after_call(context, case, response):
    COUNTS[f"{case.operation.path} {response.status_code}"] += 1
    if id(case) not in SIGNED:
        return
    SIGNED.discard(id(case))
    if response.status_code == 400:
        try:
            code = response.json()["messages"][0]["code"]
        except (ValueError, KeyError, IndexError, TypeError):
            code = None
        if code == "invalid_hash":
            raise AssertionError(
                f"the hook signed {case.method} {case.operation.path} but the service found the hash "
                f"invalid: the hook's signing does not match the body sent ({response.text[:500]})"
            )


@atexit.register
def _summary() -> None:
    path = os.environ.get("NC_HOOK_SUMMARY")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(dict(sorted(COUNTS.items())), out)
