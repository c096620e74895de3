// The staff page, part 5 of 5 (staff_state.js says how they join): the live
// socket and its watchdog (liveConnection, live_helpers.js, as on the display
// page) with what this page reads and draws for it, and the start.
// --- the connection and the watchdog -----------------------------------------------------
let staleSince = null;   // the snapshot time shown on stale calls, null while live
const connection = liveConnection({
  url: liveUrl,
  async readSnapshot() {
    const eventsBefore = eventsApplied;
    const [person, data] = await Promise.all([api("GET", "/api/v1/staff/me"), api("GET", "/api/v1/staff/calls")]);
    me = person;
    applySnapshot(data, eventsBefore);
    renderDuty();
    return data;
  },
  afterSnapshot() {
    lastDrawn = "";
    render();
  },
  applyEvent,
  snapshotAt: () => snapshotAt,
  onStaleChange(since) { staleSince = since; lastDrawn = ""; render(); },
  onUnauthorized: unauthorized,
});
function unauthorized() {
  connection.stop();
  tones.stop();
  calls.clear();
  shareToken(null);
  document.getElementById("auth").hidden = false;
  for (const id of ["mine-box", "duty", "others", "quiet", "alerts", "forwarding", "silence", "notice"]) document.getElementById(id).hidden = true;
  document.querySelector('section[aria-labelledby="others-title"]').hidden = true;
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

if (!token) {
  unauthorized();
} else {
  shareToken(token);
  setInterval(tick, 250);
  setInterval(soundState, 1000);
  // Back from the background (a phone's screen turned on): read at once.
  document.addEventListener("visibilitychange", () => { if (!connection.stopped && document.visibilityState === "visible") connection.reread(); });
  render();
  renderDuty();
  soundState();
  connection.start();
  startWorker();
}
