// The staff page's service worker (staff_sw.js, served at /staff/sw.js with
// scope /staff, DECISIONS §15). A push's payload is the live message the
// page gets for this person: `call.alert` shows a notification (tag = the
// call id, so that a newer alert replaces it), `call.cancelled` closes it.
// The actions "Annehmen" and "Ablehnen" post the response with the staff
// token, which the page keeps for the worker in IndexedDB (a worker cannot
// read localStorage; both sides of that: staff_token_db.js, filled in
// here). A tap on the notification opens or focuses /staff on that call.
// Every alert carries a receipt id: once the notification is shown the
// worker posts it back (DECISIONS §18), so that the service knows this phone
// showed the alert, and starts the next level at once when no phone did.
// The sign-on test's push (`staff.test`) is shown briefly and its receipt
// posted the same way: it tells the page whether alerts reach this phone.
"use strict";

{{staff_token_db_js}}
const ICON = "{{icon_192}}";
// Per urgency, while the phone is locked: long and insistent for an emergency.
const VIBRATION = {
  EMERGENCY: [400, 100, 400, 100, 400, 100, 400, 100, 400],
  URGENT: [300, 200, 300, 200, 300],
  NORMAL: [500, 300, 200],
};
const RESPONSES = { accept: "accepted", decline: "declined" };

function place(call) { return call.position || call.element_name || call.address; }

/* The notification of a `call.alert`: title the call type and the room,
   body where and which level, the call id as its tag. */
function alertNotification(message) {
  const call = message.call || {};
  const type = call.type || {};
  const title = (type.name || "Ruf") + " – " + place(call);
  const where = [call.address !== place(call) ? call.address : null, call.section ? "Bereich " + call.section : null,
    "Stufe " + (message.level || (call.alarm && call.alarm.level) || 1)].filter(Boolean).join(" · ");
  return [title, {
    body: where + (message.repeat ? " · erneut" : ""),
    tag: String(call.id),
    renotify: true,
    requireInteraction: true,
    vibrate: VIBRATION[type.urgency] || VIBRATION.NORMAL,
    icon: ICON,
    badge: ICON,
    lang: "de",
    timestamp: Date.now(),
    data: { callId: call.id, version: message.version },
    actions: [{ action: "accept", title: "Annehmen" }, { action: "decline", title: "Ablehnen" }],
  }];
}

async function closeNotifications(tag) {
  for (const notification of await self.registration.getNotifications({ tag })) notification.close();
}

/* Posts an alert's receipt (after it was shown), with the stored token;
   `keepalive` so that it is sent even when the worker is stopped right after. */
async function confirmReceipt(receipt) {
  const token = receipt && await storedToken();
  if (!token) return;
  try {
    await fetch("/api/v1/staff/receipts", {
      method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify({ receipt }),
      cache: "no-store",
      keepalive: true,
    });
  } catch (e) {
    // Not sent: the service counts the alert as not received and alerts others.
  }
}

/* The sign-on test (DECISIONS §18): a short notification (a push must show
   one), then its receipt, which tells the service that alerts reach this
   phone; open pages are told and say so. */
async function onTest(message) {
  await self.registration.showNotification("Test: Alarme kommen an", {
    body: "Dieses Telefon zeigt Alarme der Rufanlage.",
    tag: "staff-test",
    icon: ICON,
    badge: ICON,
    lang: "de",
    timestamp: Date.now(),
    data: {},
  });
  await confirmReceipt(message.receipt);
}

/* A central system is silent (DECISIONS §19): Technik's alert, one
   notification per central system (a repeat replaces it), then its receipt. */
async function onSilent(message) {
  await self.registration.showNotification("Keine Verbindung zur Rufanlage " + message.name, {
    body: "Seit " + String(message.since).slice(11, 16) + " – neue Rufe kommen nicht an.",
    tag: "silent-" + message.consumer,
    renotify: true,
    requireInteraction: true,
    icon: ICON,
    badge: ICON,
    lang: "de",
    timestamp: Date.now(),
    data: {},
  });
  await confirmReceipt(message.receipt);
}

/* A push: what the page would get on its socket, shown while it is not. */
async function onPush(message) {
  if (message && message.type === "staff.test") {
    await onTest(message);
    for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
      client.postMessage({ type: "push", message });
    }
    return;
  }
  if (message && message.type === "consumer.silent") {
    await onSilent(message);
    for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
      client.postMessage({ type: "push", message });
    }
    return;
  }
  if (!message || !message.call) return;
  if (message.type === "call.alert") {
    const [title, options] = alertNotification(message);
    await self.registration.showNotification(title, options);
    await confirmReceipt(message.receipt);
  } else if (message.type === "call.cancelled") {
    await closeNotifications(String(message.call.id));
    // The cancel's receipt says that this phone still takes pushes.
    await confirmReceipt(message.receipt);
  }
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    client.postMessage({ type: "push", message });
  }
}

/* Posts the response; tells open pages the outcome (they show it). */
async function respond(callId, response) {
  const token = await storedToken();
  if (!token) return { ok: false, status: 401, error: "Kein Zugangsschlüssel gespeichert." };
  const answer = await fetch("/api/v1/staff/calls/" + encodeURIComponent(callId) + "/responses", {
    method: "POST",
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: JSON.stringify({ response }),
    cache: "no-store",
  });
  let body = null;
  try { body = await answer.json(); } catch (e) { body = null; }
  return { ok: answer.ok, status: answer.status, body };
}

async function openPage(callId) {
  const url = new URL("/staff" + (callId ? "#call=" + callId : ""), self.location.origin).href;
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const page = windows.find((client) => new URL(client.url).pathname === "/staff");
  if (page) {
    page.postMessage({ type: "show-call", callId });
    return page.focus();
  }
  return self.clients.openWindow(url);
}

/* The notification's tap (no action: open the page on the call) or one of
   its actions (post the response). The same function serves the message
   `{type: "notification-action", tag, action}` from the page. */
async function onNotificationAction(notification, action) {
  const callId = notification.data && notification.data.callId;
  notification.close();
  const response = RESPONSES[action];
  if (!response) return openPage(callId);
  const result = await respond(callId, response);
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
    client.postMessage({ type: "responded", callId, response, result });
  }
  if (!result.ok) {
    // The answer did not arrive: say so where it was given, and open the page.
    const why = result.body && result.body.messages && result.body.messages[0] ? result.body.messages[0].errors : "HTTP " + result.status;
    await self.registration.showNotification("Antwort nicht gesendet", {
      body: (typeof why === "string" ? why : JSON.stringify(why)) + " – bitte auf der Seite antworten.",
      tag: String(callId) + "-failed",
      icon: ICON,
      data: { callId },
    });
  }
  return result;
}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("push", (event) => {
  let message = null;
  try { message = event.data ? event.data.json() : null; } catch (e) { message = null; }
  event.waitUntil(onPush(message));
});
self.addEventListener("notificationclick", (event) => {
  event.waitUntil(onNotificationAction(event.notification, event.action));
});
self.addEventListener("message", (event) => {
  const data = event.data || {};
  if (data.type !== "notification-action") return;
  event.waitUntil((async () => {
    const [notification] = await self.registration.getNotifications({ tag: String(data.tag) });
    const result = notification ? await onNotificationAction(notification, data.action) : { ok: false, status: 0, error: "keine Benachrichtigung" };
    if (event.source) event.source.postMessage({ type: "notification-action-done", tag: data.tag, result });
  })());
});
