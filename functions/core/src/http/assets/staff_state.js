// The staff page's script (DECISIONS §11, §14, §15, §18), in five files that
// staff_page.rs joins in this order into the page's one <script>, with the
// shared helpers after the first: page_helpers.js (all three pages),
// live_helpers.js (the token from the fragment, the calls' order and times,
// the tones, the live socket: shared with the display page) and
// staff_token_db.js (the token in IndexedDB: shared with the service
// worker). The five: staff_state.js (the token, the reads, what is held,
// the live events), staff_view.js (drawing, answering, duty),
// staff_alerting.js (sound, vibration, the service worker and Web Push),
// staff_test.js (the sign-on test), staff_connection.js (what the live socket reads, the start). One script:
// later files use what the earlier ones declare.
"use strict";
// DECISIONS §11, §14, §15: connect (the displays' live socket, with the staff
// token), then read the snapshot (/api/v1/staff/me and /api/v1/staff/calls),
// then apply newer events; ping every 5 s; the banner when the socket closes
// or nothing came for 15 s; reconnect with backoff; re-read every 60 s and
// after each reconnect (liveConnection, live_helpers.js, as the display page).
const READ_TIMEOUT_MS = 10000;
const TOKEN_KEY = "nurse-call-staff-token";
const SECTIONS_KEY = "nurse-call-staff-sections";

// --- the token: from the fragment into storage, out of the address bar ---------
// (the service worker's copy of it, which it cannot read from localStorage:
// shareToken, staff_token_db.js)
const store = browserStore();
let focusCall = null;  // a call to show (a notification's tap: /staff#call=ID)
const token = takeFragment(store, TOKEN_KEY, (fragment) => {
  if (!fragment.has("call")) return false;
  focusCall = Number(fragment.get("call"));
  return true;
});

function liveUrl() {
  const configured = document.querySelector('meta[name="live-url"]').content.trim();
  const url = configured || ((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/display/live");
  return url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token || "");
}
class Refused extends Error {
  constructor(status, body) { super("HTTP " + status); this.status = status; this.body = body; }
}
async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), READ_TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, { method, headers, cache: "no-store", signal: abort.signal,
      body: body === undefined ? undefined : JSON.stringify(body) });
  } finally {
    clearTimeout(timer);
  }
  if (response.status === 401) throw new Unauthorized();
  let json = null;
  try { json = response.status === 204 ? null : await response.json(); } catch (e) { json = null; }
  if (!response.ok) throw new Refused(response.status, json);
  return json ? json.data : null;
}
function refusalText(error) {
  const first = error && error.body && error.body.messages && error.body.messages[0];
  if (!first) return error && error.message ? error.message : "Fehler";
  return typeof first.errors === "string" ? first.errors : Object.values(first.errors).flat().join(" ");
}

// --- what is held: the person, their duty, the open calls ------------------------
let me = null;                // GET /api/v1/staff/me: { id, name, groups, duty, devices, silent_colleagues }
const calls = new Map();      // id -> { call, alerting, since (ms, performance clock), learned }
const callVersions = new Map();
let eventsApplied = 0;
let snapshotAt = null;

function remember(key, version) {
  callVersions.set(key, version);
  if (callVersions.size > 20000) callVersions.delete(callVersions.keys().next().value);
}
function isPresence(call) { return call.type && call.type.type === "PRESENCE"; }
/* My duty's sections show the call (none: the whole house; a call without section: everyone). */
function covers(call) {
  if (!me || !me.duty) return false;
  const sections = me.duty.sections || [];
  return !call.section || sections.length === 0 || sections.includes(call.section);
}
function hold(call, alerting, learned) {
  const held = calls.get(call.id);
  calls.set(call.id, {
    call,
    alerting,
    since: performance.now() - (call.duration || 0) * 1000,
    learned,
    error: held ? held.error : null,
  });
}
function applySnapshot(data, eventsBefore) {
  const listed = new Set(data.calls.map((call) => call.id));
  for (const [id, held] of calls) {
    if (!listed.has(id) && held.learned <= eventsBefore) calls.delete(id);
  }
  for (const call of data.calls) {
    const held = calls.get(call.id);
    if ((callVersions.get(call.id) ?? -Infinity) > call.version && held) continue;
    remember(call.id, call.version);
    if (held && held.learned > eventsBefore) continue;
    const fresh = call.alerting && !(held && held.alerting);
    hold(call, Boolean(call.alerting), held ? held.learned : eventsBefore);
    if (fresh) alertNow(call);
  }
  snapshotAt = data.at;
  renderForwarding(data.forwarding || []);
  silenceFromRead(data.silent);
}
/* "Weiterleitung gestört: <name>" while an alarm server's endpoint fails (DECISIONS §16), as displays show it. */
function renderForwarding(failing) {
  const line = document.getElementById("forwarding");
  line.textContent = failing.length ? "Weiterleitung gestört: " + failing.map((f) => f.name + (f.since ? " (seit " + String(f.since).slice(11, 16) + ")" : "")).join(", ") : "";
  line.hidden = failing.length === 0;
}

const CALL_MESSAGES = new Set(["call.opened", "call.closed", "call.escalated", "call.accepted", "call.unattended", "call.declined"]);
/* A live message (or, `pushed`, a push the service worker passed on). A
   call's newest version replaces what is held; `call.alert` and
   `call.cancelled` say whether it alerts me (they carry the version of the
   change that caused them, so the same version as its call.* message is
   applied too). An alert this page shows, visible, is confirmed with its
   receipt (DECISIONS §18; a pushed one the worker confirmed already). */
function applyEvent(message, pushed) {
  if (silenceFromMessage(message)) {
    // Technik's alert carries a receipt (§19): confirmed as an alert's is.
    if (!pushed && message.receipt && document.visibilityState === "visible") {
      api("POST", "/api/v1/staff/receipts", { receipt: message.receipt }).catch(() => {});
    }
    return;
  }
  if (!message || !message.call) return;
  const call = message.call;
  const version = message.version ?? call.version;
  const known = callVersions.get(call.id) ?? -Infinity;
  const held = calls.get(call.id);
  if (CALL_MESSAGES.has(message.type)) {
    if (known >= version) return;
    remember(call.id, version);
    eventsApplied++;
    if (message.type === "call.closed" || call.closed_at) calls.delete(call.id);
    else hold(call, Boolean(held && held.alerting && call.alarm && call.alarm.state === "alerting"), eventsApplied);
  } else if (message.type === "call.alert") {
    if (known > version) return;
    remember(call.id, version);
    eventsApplied++;
    if (call.closed_at) return;
    hold(call, true, eventsApplied);
    alertNow(call);
    if (!pushed && message.receipt && document.visibilityState === "visible") {
      api("POST", "/api/v1/staff/receipts", { receipt: message.receipt }).catch(() => {});
    }
  } else if (message.type === "call.cancelled") {
    if (known > version) return;
    remember(call.id, version);
    eventsApplied++;
    if (call.closed_at) calls.delete(call.id);
    else hold(call, false, eventsApplied);
  } else {
    return;
  }
  render();
}

// --- drawing ------------------------------------------------------------------------
