// The staff page, part 4 of 4 (staff_state.js says how they join): the live
// socket, the watchdog and the start.
// --- the connection and the watchdog -----------------------------------------------------
let socket = null;
let attempts = 0;
let lastMessageAt = 0;
let staleSince = null;
let stopped = false;
let reconnectTimer = null;
let rotateTimer = null;
let connectStartedAt = 0;
let snapshotRead = false;
let pending = [];

function setStale(stale, detail) {
  const was = staleSince !== null;
  if (stale && !was) staleSince = snapshotAt || "unbekannt";
  if (!stale) staleSince = null;
  document.body.classList.toggle("stale", stale);
  document.body.classList.remove("connecting");
  document.getElementById("banner").hidden = !stale;
  if (detail) document.getElementById("banner-detail").textContent = detail;
  document.getElementById("live-status").textContent = stale ? "Keine Verbindung" : "Live";
  if (stale !== was) { lastDrawn = ""; render(); }
}
/* As the display page: a rotating socket takes over once open, without the banner. */
function connect(rotating) {
  if (stopped) return;
  if (rotating && !(socket && socket.readyState === WebSocket.OPEN)) return;
  clearTimeout(reconnectTimer);
  clearTimeout(rotateTimer);
  const previous = rotating ? socket : null;
  let opened = false;
  const ws = new WebSocket(liveUrl());
  if (!rotating) {
    snapshotRead = false;
    pending = [];
    socket = ws;
    connectStartedAt = Date.now();
  }
  ws.onopen = () => {
    opened = true;
    if (rotating) {
      if (socket !== previous) { ws.close(); return; }
      snapshotRead = false;
      pending = [];
      socket = ws;
      previous.close();
    }
    lastMessageAt = Date.now();
    rotateTimer = setTimeout(() => connect(true), ROTATE_AFTER_MS);
    rereadCalls();
  };
  ws.onmessage = (event) => {
    if (socket !== ws) return;
    lastMessageAt = Date.now();
    let message;
    try { message = JSON.parse(event.data); } catch (e) { return; }
    if (snapshotRead) applyEvent(message); else pending.push(message);
  };
  ws.onclose = () => {
    if (socket !== ws) {
      if (rotating && !opened && socket === previous) rotateTimer = setTimeout(() => connect(true), ROTATE_RETRY_MS);
      return;
    }
    if (!opened) rereadCalls();
    lost("Angezeigt wird der letzte bekannte Stand" + (snapshotAt ? " von " + snapshotAt : "") + ". Neuer Verbindungsversuch läuft …");
  };
}
function lost(detail) {
  const ws = socket;
  socket = null;
  if (ws && ws.readyState <= WebSocket.OPEN) ws.close();
  setStale(true, detail);
  clearTimeout(reconnectTimer);
  clearTimeout(rotateTimer);
  const delay = BACKOFF_MS[Math.min(attempts, BACKOFF_MS.length - 1)] * (0.8 + Math.random() * 0.4);
  attempts++;
  reconnectTimer = setTimeout(connect, delay);
}
let reading = null;
let readAgain = false;
async function rereadCalls() {
  if (reading) { readAgain = true; return reading; }
  reading = (async () => {
    const eventsBefore = eventsApplied;
    const live = socket;
    const liveAtStart = live !== null && live.readyState === WebSocket.OPEN;
    try {
      const [person, data] = await Promise.all([api("GET", "/api/v1/staff/me"), api("GET", "/api/v1/staff/calls")]);
      me = person;
      applySnapshot(data, eventsBefore);
      renderDuty();
      if (liveAtStart && socket === live && live.readyState === WebSocket.OPEN) {
        snapshotRead = true;
        attempts = 0;
        for (const message of pending.splice(0)) applyEvent(message);
        setStale(false);
      }
      document.getElementById("snapshot-at").textContent = "Stand " + data.at;
      lastDrawn = "";
      render();
    } catch (e) {
      if (e instanceof Unauthorized) unauthorized();
      else if (socket && !snapshotRead) setTimeout(rereadCalls, 2000);
    } finally {
      reading = null;
      if (readAgain && !stopped) { readAgain = false; rereadCalls(); }
    }
  })();
  return reading;
}
function unauthorized() {
  stopped = true;
  clearTimeout(reconnectTimer);
  if (socket) { const ws = socket; socket = null; ws.close(); }
  stopTone();
  calls.clear();
  shareToken(null);
  document.getElementById("auth").hidden = false;
  for (const id of ["mine-box", "duty", "others", "quiet", "alerts", "banner", "forwarding", "notice"]) document.getElementById(id).hidden = true;
  document.querySelector('section[aria-labelledby="others-title"]').hidden = true;
  document.body.classList.remove("stale", "connecting");
  document.body.classList.add("unauthorized");
  document.getElementById("live-status").textContent = "Nicht angemeldet";
}
document.getElementById("auth-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = document.getElementById("auth-link").value.trim();
  const match = /token=([0-9A-Za-z]+)/.exec(text);
  const value = match ? match[1] : text;
  if (!value) return;
  store.setItem(TOKEN_KEY, value);
  location.reload();
});
function watchdog() {
  if (stopped) return;
  if (socket && socket.readyState === WebSocket.OPEN && Date.now() - lastMessageAt > SILENCE_MS) {
    lost("Seit über 15 s keine Nachricht vom Server. Neuer Verbindungsversuch läuft …");
  } else if (socket && socket.readyState === WebSocket.CONNECTING && Date.now() - connectStartedAt > SILENCE_MS) {
    lost("Der Server antwortet nicht. Neuer Verbindungsversuch läuft …");
  }
}

if (!token) {
  unauthorized();
} else {
  shareToken(token);
  setInterval(() => { if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ action: "ping" })); }, PING_EVERY_MS);
  setInterval(watchdog, 500);
  setInterval(tick, 250);
  setInterval(soundState, 1000);
  setInterval(() => { if (!stopped) rereadCalls(); }, REREAD_EVERY_MS);
  // Back from the background (a phone's screen turned on): read at once.
  document.addEventListener("visibilitychange", () => { if (!stopped && document.visibilityState === "visible") rereadCalls(); });
  render();
  renderDuty();
  soundState();
  connect();
  startWorker();
}
