// Shared by the two pages that show calls live, the display page and the
// staff page (live_helpers.js, filled in like page_helpers.js): the token from
// the URL fragment, the calls' order and times, the tones, the live socket.
// Declarations only: nothing here runs until a page calls it.

// --- the token: from the fragment into storage, out of the address bar ---------
/* The browser's storage, or one in memory where the browser refuses it (a
   private window): the page still works, until it is closed. */
function browserStore() {
  try { localStorage.setItem("nurse-call-probe", "1"); localStorage.removeItem("nurse-call-probe"); return localStorage; }
  catch (e) { const memory = new Map(); return { getItem: (k) => memory.get(k) ?? null, setItem: (k, v) => memory.set(k, v), removeItem: (k) => memory.delete(k) }; }
}
/* `#token=…` (never sent to a server) into `store` under `key` (empty:
   removed); `more(fragment)` takes the page's other parameters and says
   whether it used any. A used fragment leaves the address bar. The token
   kept, or null. */
function takeFragment(store, key, more) {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  let used = false;
  if (fragment.has("token")) {
    const token = fragment.get("token").trim();
    if (token) store.setItem(key, token); else store.removeItem(key);
    used = true;
  }
  if (more(fragment)) used = true;
  if (used) history.replaceState(null, "", location.pathname + location.search);
  return store.getItem(key);
}
/* A read answered 401: the token is missing or revoked. */
class Unauthorized extends Error {}

// --- a held call ({ call, since (ms, performance clock), … }): place, order, times ---
function elapsed(held) { return (performance.now() - held.since) / 1000; }
function place(call) { return call.position || call.element_name || call.address; }
function urgencyWord(urgency) { return { EMERGENCY: "Notfall", URGENT: "dringend" }[urgency] || ""; }
/* The read endpoint's order: priority ascending, then oldest first. */
function byUrgency(a, b) {
  const pa = a.call.type ? a.call.type.priority : 99, pb = b.call.type ? b.call.type.priority : 99;
  return pa - pb || (a.call.opened_at < b.call.opened_at ? -1 : a.call.opened_at > b.call.opened_at ? 1 : a.call.id - b.call.id);
}
/* Seconds between two wire times (`YYYY-MM-DD HH:MM:SS`, both the
   installation's local time): read as if UTC, so that the browser's own
   zone plays no part. */
function wireSeconds(from, to) {
  const read = (text) => Date.parse(String(text).replace(" ", "T") + "Z");
  const seconds = (read(to) - read(from)) / 1000;
  return Number.isFinite(seconds) ? seconds : 0;
}
/* How long ago the call was accepted, from the call's own running time. */
function acceptedAgo(held) {
  const alarm = held.call.alarm;
  return Math.max(0, elapsed(held) - Math.max(0, wireSeconds(held.call.opened_at, alarm.accepted_at)));
}

// --- the tones: one per urgency, made by Web Audio (no media file to allow) ----------
/* `volume` from 0 to 1. `audio` is null where the browser has none; it
   sounds only once the browser lets it run (after a tap or a key). */
function tonePlayer(volume) {
  let audio = null;
  try { audio = new (window.AudioContext || window.webkitAudioContext)(); } catch (e) { audio = null; }
  const TONES = {
    // [frequency Hz, seconds]; 0 Hz is a pause. Distinct by pitch and rhythm.
    EMERGENCY: [[988, .16], [0, .06], [740, .16], [0, .06], [988, .16], [0, .06], [740, .16], [0, .06], [988, .16], [0, .06], [740, .16]],
    URGENT: [[784, .22], [0, .12], [784, .22], [0, .12], [784, .22]],
    NORMAL: [[587, .35], [0, .15], [440, .5]],
  };
  let playing = null;  // { id, nodes }: the last tone, for the call `id`, until stopped
  function stop() {
    if (!playing) return;
    for (const node of playing.nodes) { try { node.stop(); } catch (e) { /* already ended */ } }
    playing = null;
  }
  /* The urgency's tone for the call `id`, in place of the one before. */
  function play(urgency, id) {
    stop();
    if (!audio || audio.state !== "running") return;
    const nodes = [];
    let at = audio.currentTime + 0.02;
    for (const [frequency, length] of TONES[urgency] || TONES.NORMAL) {
      if (frequency > 0) {
        const oscillator = audio.createOscillator();
        const gain = audio.createGain();
        oscillator.type = "triangle";
        oscillator.frequency.value = frequency;
        gain.gain.setValueAtTime(0, at);
        gain.gain.linearRampToValueAtTime(volume, at + 0.015);
        gain.gain.setValueAtTime(volume, at + length - 0.03);
        gain.gain.linearRampToValueAtTime(0, at + length);
        oscillator.connect(gain).connect(audio.destination);
        oscillator.start(at);
        oscillator.stop(at + length);
        nodes.push(oscillator);
      }
      at += length;
    }
    playing = { id, nodes };
  }
  return { audio, play, stop, get playing() { return playing; } };
}

// --- the live socket and the watchdog (DECISIONS §11) ----------------------------------
/* Connect, then read the snapshot, then apply the events that came
   meanwhile and every later one; ping every 5 s; the banner when the socket
   closes or nothing came for 15 s; reconnect with backoff; re-read every
   60 s and after each (re)connect. Both pages have the markup this shows
   (#banner, #banner-detail, #live-status, #snapshot-at, the body's classes
   stale, connecting and unauthorized). The page says the rest, in `page`:
   - url(): where the socket connects, asked at every connect;
   - readSnapshot(): reads and applies the snapshot, resolves to its data
     (`at`: its time; a 401 throws Unauthorized);
   - afterSnapshot(data): after the snapshot, and the events held back for
     it, are applied;
   - applyEvent(message): a live message, from the snapshot on;
   - snapshotAt(): the last snapshot's time, or null;
   - onStaleChange(since): the banner came (`since`: the time the stale
     calls show) or went (null): the page draws again;
   - onUnauthorized(): a read answered 401.
   Call start() once. */
function liveConnection(page) {
  const PING_EVERY_MS = 5000;
  const SILENCE_MS = 15000;
  const REREAD_EVERY_MS = 60000;
  const BACKOFF_MS = [500, 1000, 2000, 4000, 5000];
  // A socket is replaced after 1 h 50 min, before API Gateway's 2 h limit;
  // a replacement that fails is tried again after a minute.
  const ROTATE_AFTER_MS = 110 * 60 * 1000;
  const ROTATE_RETRY_MS = 60000;
  let socket = null;
  let attempts = 0;
  let lastMessageAt = 0;
  let stale = false;
  let stopped = false;
  let reconnectTimer = null;
  let rotateTimer = null;
  let connectStartedAt = 0;
  let snapshotRead = false;  // a snapshot was read since the socket (re)opened
  // Events that came before the snapshot was read: applied after it, when newer.
  let pending = [];
  let reading = null;
  let readAgain = false;

  function setStale(now, detail) {
    const was = stale;
    stale = now;
    document.body.classList.toggle("stale", now);
    document.body.classList.remove("connecting");
    document.getElementById("banner").hidden = !now;
    if (detail) document.getElementById("banner-detail").textContent = detail;
    document.getElementById("live-status").textContent = now ? "Keine Verbindung" : "Live";
    if (now !== was) page.onStaleChange(now ? page.snapshotAt() || "unbekannt" : null);
  }
  /* A new socket. With `rotating`, the current one stays the connection until
     the new one is open: then the new one takes over (re-reading the snapshot)
     and the old one is closed without the banner. API Gateway closes every
     WebSocket after 2 h (docs/displays.md, "In AWS"); a plain close would show
     "Verbindung unterbrochen" for the second a reconnect takes, on every
     display, every two hours: a false alarm nurses would learn to ignore. */
  function connect(rotating) {
    if (stopped) return;
    if (rotating && !(socket && socket.readyState === WebSocket.OPEN)) return;
    clearTimeout(reconnectTimer);
    clearTimeout(rotateTimer);
    const previous = rotating ? socket : null;
    let opened = false;
    const ws = new WebSocket(page.url());
    if (!rotating) {
      snapshotRead = false;
      pending = [];
      socket = ws;
      connectStartedAt = Date.now();
    }
    ws.onopen = () => {
      opened = true;
      if (rotating) {
        // The old socket was lost meanwhile: the reconnect took over.
        if (socket !== previous) { ws.close(); return; }
        snapshotRead = false;
        pending = [];
        socket = ws;
        previous.close();
      }
      lastMessageAt = Date.now();
      rotateTimer = setTimeout(() => connect(true), ROTATE_AFTER_MS);
      reread();
    };
    ws.onmessage = (event) => {
      // Only the current socket's: a rotating one's before it took over come
      // over the old one too.
      if (socket !== ws) return;
      lastMessageAt = Date.now();
      let message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      if (snapshotRead) page.applyEvent(message); else pending.push(message);
    };
    ws.onclose = () => {
      if (socket !== ws) {
        // A rotation that never opened: the old socket goes on; try again later.
        if (rotating && !opened && socket === previous) rotateTimer = setTimeout(() => connect(true), ROTATE_RETRY_MS);
        return;
      }
      // The socket cannot tell why it failed; a read can (401: token revoked).
      if (!opened) reread();
      const at = page.snapshotAt();
      lost("Angezeigt wird der letzte bekannte Stand" + (at ? " von " + at : "") + ". Neuer Verbindungsversuch läuft …");
    };
  }
  /* The banner at once, the old socket dropped (a dead one may take long to
     report its close), a new one after the backoff. */
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
  /* The snapshot, read again. */
  function reread() {
    // One read at a time; one asked for meanwhile runs after it, so that a
    // snapshot counted as "after connect" really started after the connect.
    if (reading) { readAgain = true; return reading; }
    reading = (async () => {
      const live = socket;
      const liveAtStart = live !== null && live.readyState === WebSocket.OPEN;
      try {
        const data = await page.readSnapshot();
        if (liveAtStart && socket === live && live.readyState === WebSocket.OPEN) {
          snapshotRead = true;
          attempts = 0;
          for (const message of pending.splice(0)) page.applyEvent(message);
          setStale(false);
        }
        document.getElementById("snapshot-at").textContent = "Stand " + data.at;
        page.afterSnapshot(data);
      } catch (e) {
        if (e instanceof Unauthorized) page.onUnauthorized();
        // Connected but not yet read (a 503, a timeout): try again soon, the banner stays till then.
        else if (socket && !snapshotRead) setTimeout(reread, 2000);
      } finally {
        reading = null;
        if (readAgain && !stopped) { readAgain = false; reread(); }
      }
    })();
    return reading;
  }
  /* For good, when the token is refused (a 401): no socket, no reconnect, no
     banner; the status says "Nicht angemeldet". */
  function stop() {
    stopped = true;
    clearTimeout(reconnectTimer);
    if (socket) { const ws = socket; socket = null; ws.close(); }
    document.getElementById("banner").hidden = true;
    document.body.classList.remove("stale", "connecting");
    document.body.classList.add("unauthorized");
    document.getElementById("live-status").textContent = "Nicht angemeldet";
  }
  function watchdog() {
    if (stopped) return;
    if (socket && socket.readyState === WebSocket.OPEN && Date.now() - lastMessageAt > SILENCE_MS) {
      // Nothing for 15 s, not even a pong: the connection is as good as gone.
      lost("Seit über 15 s keine Nachricht vom Server. Neuer Verbindungsversuch läuft …");
    } else if (socket && socket.readyState === WebSocket.CONNECTING && Date.now() - connectStartedAt > SILENCE_MS) {
      lost("Der Server antwortet nicht. Neuer Verbindungsversuch läuft …");
    }
  }
  function start() {
    setInterval(() => { if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ action: "ping" })); }, PING_EVERY_MS);
    setInterval(watchdog, 500);
    setInterval(() => { if (!stopped) reread(); }, REREAD_EVERY_MS);
    connect();
  }
  return { start, connect, reread, stop, get socket() { return socket; }, get stopped() { return stopped; } };
}

/* Central systems that are silent (DECISIONS §19): one full-width line each in
   #silence, "Keine Verbindung zur Rufanlage <name> seit HH:MM – neue Rufe kommen
   hier nicht an". Not the page's own "Verbindung unterbrochen" (#banner, this
   page's socket): this one says the service hears nothing from a central
   system, so calls may be missing from the board. Held per consumer: every
   read's `silent` replaces them, `consumer.silent` adds one, `consumer.back`
   removes it. */
const silentLinks = new Map();
function silenceFromRead(list) {
  silentLinks.clear();
  for (const link of list || []) silentLinks.set(link.consumer, link);
  renderSilence();
}
/* Whether `message` was one of the two (then it is applied). */
function silenceFromMessage(message) {
  if (!message || !message.consumer) return false;
  if (message.type === "consumer.silent") {
    silentLinks.set(message.consumer, { consumer: message.consumer, name: message.name, since: message.since });
  } else if (message.type === "consumer.back") {
    silentLinks.delete(message.consumer);
  } else {
    return false;
  }
  renderSilence();
  return true;
}
function renderSilence() {
  const box = document.getElementById("silence");
  const links = [...silentLinks.values()].sort((a, b) => String(a.since).localeCompare(String(b.since)));
  box.replaceChildren(...links.map((link) => {
    const line = document.createElement("p");
    line.className = "silent-link";
    line.dataset.consumer = link.consumer;
    line.textContent = "Keine Verbindung zur Rufanlage " + link.name + " seit " + String(link.since).slice(11, 16) + " – neue Rufe kommen hier nicht an";
    return line;
  }));
  box.hidden = links.length === 0;
}
