// The staff page's script (DECISIONS §11, §14, §15), in four files that
// staff_page.rs joins in this order into the page's one <script>, with the
// pages' shared helpers (page_helpers.js) after the first:
// staff_state.js (the token, the reads, what is held, the live events),
// staff_view.js (drawing, answering, duty), staff_alerting.js (sound,
// vibration, the service worker and Web Push), staff_connection.js (the
// socket, the watchdog, the start). One script: later files use what the
// earlier ones declare.
"use strict";
// DECISIONS §11, §14, §15: connect (the displays' live socket, with the staff
// token), then read the snapshot (/api/v1/staff/me and /api/v1/staff/calls),
// then apply newer events; ping every 5 s; the banner when the socket closes
// or nothing came for 15 s; reconnect with backoff; re-read every 60 s and
// after each reconnect.
const PING_EVERY_MS = 5000;
const SILENCE_MS = 15000;
const REREAD_EVERY_MS = 60000;
const BACKOFF_MS = [500, 1000, 2000, 4000, 5000];
const ROTATE_AFTER_MS = 110 * 60 * 1000;
const ROTATE_RETRY_MS = 60000;
const READ_TIMEOUT_MS = 10000;
const TOKEN_KEY = "nurse-call-staff-token";
const SECTIONS_KEY = "nurse-call-staff-sections";
// The service worker's copy of the token (it cannot read localStorage).
const DB_NAME = "nurse-call-staff";
const DB_STORE = "keys";

// --- the token: from the fragment into storage, out of the address bar ---------
const store = (() => {
  try { localStorage.setItem("nurse-call-probe", "1"); localStorage.removeItem("nurse-call-probe"); return localStorage; }
  catch (e) { const memory = new Map(); return { getItem: (k) => memory.get(k) ?? null, setItem: (k, v) => memory.set(k, v), removeItem: (k) => memory.delete(k) }; }
})();
let focusCall = null;  // a call to show (a notification's tap: /staff#call=ID)
(function takeFragment() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  let used = false;
  if (fragment.has("token")) {
    const token = fragment.get("token").trim();
    if (token) store.setItem(TOKEN_KEY, token); else store.removeItem(TOKEN_KEY);
    used = true;
  }
  if (fragment.has("call")) { focusCall = Number(fragment.get("call")); used = true; }
  if (used) history.replaceState(null, "", location.pathname + location.search);
})();
const token = store.getItem(TOKEN_KEY);

function openDb() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(DB_STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}
/* The token for the service worker (null: removed). */
async function shareToken(value) {
  try {
    const db = await openDb();
    await new Promise((resolve, reject) => {
      const tx = db.transaction(DB_STORE, "readwrite");
      if (value) tx.objectStore(DB_STORE).put(value, "token"); else tx.objectStore(DB_STORE).delete("token");
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    db.close();
  } catch (e) { /* no IndexedDB (a private window): the notifications' actions open the page instead */ }
}

function liveUrl() {
  const configured = document.querySelector('meta[name="live-url"]').content.trim();
  const url = configured || ((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/display/live");
  return url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token || "");
}
class Unauthorized extends Error {}
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
let me = null;                // { id, name, groups, duty }
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
}
/* "Weiterleitung gestört: <name>" while an alarm server's endpoint fails (DECISIONS §16), as displays show it. */
function renderForwarding(failing) {
  const line = document.getElementById("forwarding");
  line.textContent = failing.length ? "Weiterleitung gestört: " + failing.map((f) => f.name + (f.since ? " (seit " + String(f.since).slice(11, 16) + ")" : "")).join(", ") : "";
  line.hidden = failing.length === 0;
}

const CALL_MESSAGES = new Set(["call.opened", "call.closed", "call.escalated", "call.accepted", "call.unattended", "call.declined"]);
/* A live message (or a push the service worker passed on). A call's newest
   version replaces what is held; `call.alert` and `call.cancelled` say
   whether it alerts me (they carry the version of the change that caused
   them, so the same version as its call.* message is applied too). */
function applyEvent(message) {
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
