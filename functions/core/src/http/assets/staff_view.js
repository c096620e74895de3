// The staff page, part 2 of 5 (staff_state.js says how they join): drawing
// the calls, answering them, duty.
// (elapsed, place, urgencyWord, byUrgency, acceptedAgo: live_helpers.js)
/* Who comes ("Anna kommt · 4 Min"), who did not ("Ben kam nicht"), nobody reachable, or the level. */
function alarmLine(held) {
  const alarm = held.call.alarm;
  if (!alarm) return null;
  const parts = [];
  if (alarm.state === "alerting" && alarm.level >= 2) parts.push(el("span", { class: "alarm-level", "data-role": "alarm-level" }, "Stufe " + alarm.level));
  /* "Anna kam nicht" (DECISIONS §19): the newest accept that timed out, while the alarm runs again. */
  const gone = (alarm.not_arrived || [])[(alarm.not_arrived || []).length - 1];
  if (gone && alarm.state !== "present" && alarm.state !== "ended" && !(alarm.accepted_by && alarm.accepted_by.id === gone.id)) {
    parts.push(el("span", { class: "alarm-not-arrived", "data-role": "alarm-not-arrived" }, gone.name + " kam nicht" + (me && gone.id === me.id ? " (Sie)" : "")));
  }
  if (alarm.state === "unattended") {
    parts.push(el("span", { class: "alarm-unattended", "data-role": "alarm-unattended" }, "Kein Personal erreichbar"));
  } else if (alarm.state === "accepted" && alarm.accepted_by) {
    const mine = me && alarm.accepted_by.id === me.id;
    parts.push(el("span", { class: "alarm-accepted", "data-role": "alarm-accepted" },
      el("span", { "data-role": "accepted-name" }, alarm.accepted_by.name + " kommt" + (mine ? " (Sie)" : "")), " · ",
      el("span", { "data-role": "accepted-since" }, durationText(acceptedAgo(held)))));
  } else if (alarm.state === "present") {
    parts.push(el("span", { class: "alarm-accepted" }, "Personal anwesend"));
  }
  return parts.length ? el("div", { class: "call-alarm", "data-role": "alarm" }, ...parts) : null;
}
function tile(held) {
  const call = held.call;
  const type = call.type || { name: "Ruf", color: "#808080", urgency: "NORMAL" };
  const color = /^#[0-9a-fA-F]{6}$/.test(type.color) ? type.color : "#808080";
  const meta = [call.address !== place(call) ? call.address : null, call.section ? "Bereich " + call.section : null, urgencyWord(type.urgency)].filter(Boolean).join(" · ");
  const node = el("li", { class: "call urgency-" + String(type.urgency || "normal").toLowerCase() + (held.alerting ? " alerting" : ""),
      "data-call-id": String(call.id), "data-alerting": String(held.alerting) },
    el("div", { class: "call-type" }, type.name),
    el("div", { class: "call-duration", "data-role": "duration" }, durationText(elapsed(held))),
    el("div", { class: "call-where" }, place(call)),
    meta ? el("div", { class: "call-meta" }, meta) : null,
    alarmLine(held),
    staleSince !== null ? el("div", { class: "call-stale", "data-role": "stale" }, "Stand " + staleSince) : null,
    held.alerting ? el("div", { class: "call-actions" },
      el("button", { type: "button", class: "accept", "data-action": "accepted" }, "Annehmen"),
      el("button", { type: "button", class: "decline", "data-action": "declined" }, "Ablehnen")) : null,
    held.error ? el("div", { class: "call-error", role: "alert" }, held.error) : null);
  node.style.background = color;
  node.style.color = textColorOn(color);
  if (focusCall === call.id) node.classList.add("focused");
  return node;
}
let lastDrawn = "";
function render() {
  if (connection.stopped) return;
  const all = [...calls.values()].filter((held) => !isPresence(held.call)).sort(byUrgency);
  const mine = all.filter((held) => held.alerting);
  const others = all.filter((held) => !held.alerting && covers(held.call));
  const signature = JSON.stringify([mine.map((h) => [h.call.id, h.call.version, h.error]), others.map((h) => [h.call.id, h.call.version, h.error]),
    staleSince, focusCall, me && me.id]);
  if (signature !== lastDrawn) {
    lastDrawn = signature;
    document.getElementById("mine").replaceChildren(...mine.map(tile));
    document.getElementById("mine-box").hidden = mine.length === 0;
    document.getElementById("others").replaceChildren(...others.map(tile));
    if (focusCall !== null) {
      const node = document.querySelector('.call[data-call-id="' + focusCall + '"]');
      if (node) { node.scrollIntoView({ block: "center" }); setTimeout(() => { focusCall = null; lastDrawn = ""; render(); }, 4000); }
    }
  }
  const quiet = document.getElementById("quiet");
  if (others.length > 0) quiet.hidden = true;
  else {
    quiet.hidden = false;
    quiet.textContent = staleSince !== null ? "Keine Verbindung – offene Rufe unbekannt"
      : !me ? "Verbinde …"
      : !me.duty ? "Nicht im Dienst: nur Rufe, die Sie alarmieren, erscheinen hier."
      : mine.length ? "Keine weiteren offenen Rufe" : "Keine offenen Rufe";
  }
}
function tick() {
  for (const node of document.querySelectorAll(".call[data-call-id]")) {
    const held = calls.get(Number(node.dataset.callId));
    if (!held) continue;
    const duration = node.querySelector("[data-role=duration]");
    const text = durationText(elapsed(held));
    if (duration.textContent !== text) duration.textContent = text;
    const since = node.querySelector("[data-role=accepted-since]");
    if (since) { const ago = durationText(acceptedAgo(held)); if (since.textContent !== ago) since.textContent = ago; }
  }
}

// --- answering: "Annehmen", "Ablehnen" -------------------------------------------------
document.querySelector("main").addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const node = button.closest("[data-call-id]");
  const id = Number(node.dataset.callId);
  const response = button.dataset.action;
  for (const b of node.querySelectorAll("button[data-action]")) b.disabled = true;
  unlockSound();
  try {
    const call = await api("POST", "/api/v1/staff/calls/" + id + "/responses", { response });
    answered(id, call);
  } catch (error) {
    if (error instanceof Unauthorized) return unauthorized();
    const held = calls.get(id);
    if (held) {
      held.error = error.status === 409 ? refusalText(error) : "Antwort nicht angekommen (" + refusalText(error) + "). Bitte erneut tippen.";
      if (error.status === 409 || error.status === 404) held.alerting = false;
    }
    lastDrawn = "";
    render();
    connection.reread();
  }
});
/* The answer's call (200): no longer alerting me; the newer version shown at once. */
function answered(id, call) {
  const held = calls.get(id);
  if (call && (callVersions.get(id) ?? -Infinity) <= call.version) {
    remember(id, call.version);
    eventsApplied++;
    hold(call, false, eventsApplied);
  } else if (held) {
    held.alerting = false;
  }
  const now = calls.get(id);
  if (now) now.error = null;
  tones.stop();
  closeNotification(id);
  lastDrawn = "";
  render();
}
async function closeNotification(id) {
  try {
    const registration = await navigator.serviceWorker.getRegistration("/staff");
    if (registration) for (const n of await registration.getNotifications({ tag: String(id) })) n.close();
  } catch (e) { /* no notifications here */ }
}

// --- duty: on, off, sections -------------------------------------------------------------
function knownSections() {
  let kept = [];
  try { kept = JSON.parse(store.getItem(SECTIONS_KEY) || "[]"); } catch (e) { kept = []; }
  const all = new Set(kept);
  if (me && me.duty) for (const s of me.duty.sections) all.add(s);
  for (const held of calls.values()) if (held.call.section) all.add(held.call.section);
  return [...all].sort((a, b) => a.localeCompare(b, "de", { numeric: true }));
}
function chosenSections() {
  return [...document.querySelectorAll("#sections input:checked")].map((input) => input.value);
}
function renderSections(checked) {
  const box = document.getElementById("sections");
  const wanted = JSON.stringify([knownSections(), checked]);
  if (box.dataset.drawn === wanted) return;
  box.dataset.drawn = wanted;
  const legend = box.querySelector("legend");
  box.replaceChildren(legend, ...knownSections().map((section) => el("label", {},
    el("input", { type: "checkbox", name: "section", value: section, checked: checked.includes(section) }), "Bereich " + section)));
}
function renderDuty() {
  const duty = me && me.duty;
  document.body.classList.toggle("on-duty", Boolean(duty));
  document.getElementById("who").textContent = me ? me.name : "Rufe";
  document.title = (me ? me.name + " – " : "") + "Rufe – Personal";
  document.getElementById("duty-state").textContent = !me ? "Dienst wird gelesen …"
    : !duty ? "Nicht im Dienst"
    : "Im Dienst: " + (duty.sections.length ? duty.sections.map((s) => "Bereich " + s).join(", ") : "ganzes Haus") + " · bis " + String(duty.until).slice(11, 16);
  // Colleagues beside me whose phones got none of the last pushes (§18).
  const silent = (me && me.silent_colleagues) || [];
  const line = document.getElementById("silent-colleagues");
  line.hidden = silent.length === 0;
  line.textContent = silent.length ? "Telefon stumm: " + silent.map((c) => c.name + (c.sections.length ? " (Bereich " + c.sections.join(", ") + ")" : "")).join(" · ") : "";
  document.getElementById("duty-on").textContent = duty ? "Bereiche ändern" : "Dienst beginnen";
  document.getElementById("duty-off").hidden = !duty;
  const box = document.getElementById("sections");
  // While the person is choosing, their choice stays.
  if (!box.contains(document.activeElement) || !box.dataset.drawn) renderSections(duty ? duty.sections : chosenSections());
}
document.getElementById("section-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("section-new");
  const section = input.value.trim();
  if (!section) return;
  let kept = [];
  try { kept = JSON.parse(store.getItem(SECTIONS_KEY) || "[]"); } catch (e) { kept = []; }
  if (!kept.includes(section)) kept.push(section);
  store.setItem(SECTIONS_KEY, JSON.stringify(kept.slice(-50)));
  renderSections([...new Set([...chosenSections(), section])]);
  input.value = "";
});
async function setDuty(on) {
  const buttons = [document.getElementById("duty-on"), document.getElementById("duty-off")];
  for (const b of buttons) b.disabled = true;
  unlockSound();
  try {
    me = on ? await api("PUT", "/api/v1/staff/duty", { sections: chosenSections() }) : await api("DELETE", "/api/v1/staff/duty");
    document.getElementById("sections").dataset.drawn = "";
    renderDuty();
    lastDrawn = "";
    render();
    notice(null);
    connection.reread();
    // The sign-on test (DECISIONS §18): did this phone get the service's test push?
    if (on) signOnTest(me);
  } catch (error) {
    if (error instanceof Unauthorized) return unauthorized();
    notice("Dienst nicht geändert: " + refusalText(error));
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}
document.getElementById("duty-on").addEventListener("click", () => setDuty(true));
document.getElementById("duty-off").addEventListener("click", () => setDuty(false));
function notice(text) {
  const line = document.getElementById("notice");
  line.textContent = text || "";
  line.hidden = !text;
}
