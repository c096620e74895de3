// The staff page, part 3 of 5 (staff_state.js says how they join): sound and
// vibration while the page is open, the service worker and Web Push.
// --- sound and vibration per urgency, while the page is open ------------------------------
// (the tones: tonePlayer, live_helpers.js, at this page's volume; the display page's is 0.35)
const tones = tonePlayer(0.4);
const audio = tones.audio;
const VIBRATION = {
  EMERGENCY: [400, 100, 400, 100, 400, 100, 400, 100, 400],
  URGENT: [300, 200, 300, 200, 300],
  NORMAL: [500, 300, 200],
};
let alertsPlayed = 0;
function soundState() {
  const button = document.getElementById("sound");
  const on = audio !== null && audio.state === "running";
  button.dataset.state = on ? "on" : "off";
  button.textContent = on ? "Ton und Vibration an" : (audio ? "Ton aus – hier tippen zum Einschalten" : "Ton nicht verfügbar");
}
function unlockSound() { if (audio && audio.state !== "running") audio.resume().then(soundState, soundState); }
document.getElementById("sound").addEventListener("click", unlockSound);
/* An alert (or re-alert) of `call`: its urgency's tone and vibration. */
function alertNow(call) {
  const urgency = (call.type && call.type.urgency) || "NORMAL";
  alertsPlayed++;
  document.body.dataset.alerts = String(alertsPlayed);
  document.body.dataset.lastAlertUrgency = urgency;
  try { if (navigator.vibrate) navigator.vibrate(VIBRATION[urgency] || VIBRATION.NORMAL); } catch (e) { /* not on this device */ }
  tones.play(urgency, call.id);
}

// --- the service worker and Web Push ---------------------------------------------------
const push = { supported: "serviceWorker" in navigator && "PushManager" in window && "Notification" in window, registration: null };
function pushStatus(text, on) {
  document.getElementById("push-status").textContent = text;
  document.getElementById("push-on").hidden = Boolean(on);
  document.getElementById("push-off").hidden = !on;
}
/* Every way push can be unavailable ends with what still works. */
const OPEN_ONLY = "Alarm nur, solange diese Seite offen ist: Ton und Vibration einschalten.";
const NO_PUSH = "Auf diesem Gerät sind keine Benachrichtigungen möglich (iPhone/iPad: erst ab iOS 16.4 und nur als App vom Home-Bildschirm). " + OPEN_ONLY;
function base64UrlBytes(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - text.length % 4) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}
async function startWorker() {
  if (!("serviceWorker" in navigator)) { pushStatus(NO_PUSH, false); return; }
  try {
    push.registration = await navigator.serviceWorker.register("/staff/sw.js", { scope: "/staff" });
    document.body.dataset.worker = "registered";
  } catch (e) {
    document.body.dataset.worker = "failed";
    pushStatus("Hintergrunddienst nicht gestartet (" + e.message + "). " + NO_PUSH, false);
    return;
  }
  navigator.serviceWorker.addEventListener("message", (event) => {
    const data = event.data || {};
    if (data.type === "push") applyEvent(data.message, true);
    else if (data.type === "responded" && data.result && data.result.ok) answered(Number(data.callId), data.result.body && data.result.body.data);
    else if (data.type === "show-call") { focusCall = Number(data.callId); lastDrawn = ""; render(); }
  });
  if (!push.supported) { pushStatus(NO_PUSH, false); return; }
  if (Notification.permission === "denied") { pushStatus("Benachrichtigungen sind für diese Seite gesperrt (Einstellungen des Browsers). " + OPEN_ONLY, false); return; }
  // Already subscribed on this device: told to the server again (it may have dropped it).
  try {
    const subscription = await push.registration.pushManager.getSubscription();
    if (subscription && Notification.permission === "granted") {
      rememberDevice(await api("POST", "/api/v1/staff/push-subscriptions", subscription.toJSON()));
      pushStatus("Benachrichtigungen an: Alarme kommen auch bei gesperrtem Bildschirm.", true);
      return;
    }
  } catch (e) { if (e instanceof Unauthorized) return unauthorized(); }
  pushStatus("Benachrichtigungen aus. " + OPEN_ONLY, false);
}
async function enablePush() {
  if (!push.supported || !push.registration) { pushStatus(NO_PUSH, false); return; }
  const button = document.getElementById("push-on");
  button.disabled = true;
  try {
    const permission = await Notification.requestPermission();
    if (permission !== "granted") { pushStatus("Benachrichtigungen nicht erlaubt. " + OPEN_ONLY, false); return; }
    let key;
    try { key = (await api("GET", "/api/v1/staff/push-key")).public_key; }
    catch (e) {
      if (e instanceof Unauthorized) return unauthorized();
      pushStatus("Dieser Server bietet keine Benachrichtigungen an (" + refusalText(e) + "). " + OPEN_ONLY, false);
      return;
    }
    await navigator.serviceWorker.ready;
    const wanted = base64UrlBytes(key);
    let subscription = await push.registration.pushManager.getSubscription();
    if (subscription) {
      // Made with another key (the installation's was renewed): made anew.
      const current = subscription.options && subscription.options.applicationServerKey;
      if (current && new Uint8Array(current).join() !== wanted.join()) { await subscription.unsubscribe(); subscription = null; }
    }
    try {
      subscription = subscription || await push.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: wanted });
    } catch (e) {
      pushStatus("Dieser Browser stellt keine Benachrichtigungen zu (" + e.message + "). " + OPEN_ONLY, false);
      return;
    }
    rememberDevice(await api("POST", "/api/v1/staff/push-subscriptions", subscription.toJSON()));
    pushStatus("Benachrichtigungen an: Alarme kommen auch bei gesperrtem Bildschirm.", true);
    // A new phone gets the sign-on test (DECISIONS §18): wait for it here.
    signOnTest(await api("GET", "/api/v1/staff/me"));
  } catch (e) {
    if (e instanceof Unauthorized) return unauthorized();
    pushStatus("Benachrichtigungen nicht eingeschaltet: " + refusalText(e) + ". " + OPEN_ONLY, false);
  } finally {
    button.disabled = false;
  }
}
async function disablePush() {
  try {
    const subscription = push.registration && await push.registration.pushManager.getSubscription();
    if (subscription) {
      await api("DELETE", "/api/v1/staff/push-subscriptions", { endpoint: subscription.endpoint });
      await subscription.unsubscribe();
    }
    pushStatus("Benachrichtigungen aus. " + OPEN_ONLY, false);
  } catch (e) {
    if (e instanceof Unauthorized) return unauthorized();
    pushStatus("Nicht ausgeschaltet: " + refusalText(e), true);
  }
}
document.getElementById("push-on").addEventListener("click", enablePush);
document.getElementById("push-off").addEventListener("click", disablePush);
