// The staff page, part 4 of 5: the sign-on test (DECISIONS §18; joined after
// staff_alerting.js, staff_state.js says how). Signing on, switching
// notifications on and "Erneut testen" make the service push a test to the
// person's phones; this phone's service worker shows it and posts its
// receipt. The page reads /api/v1/staff/me until this phone's device is no
// longer `waiting` (the service says `silent` once RECEIPT_SECONDS passed
// without the receipt) and then says either that alarms reach this phone or,
// full width, that it did not get the test and what to check. Which device
// is this phone: the id the registration answered, kept in the browser.
const DEVICE_KEY = "nurse-call-staff-device";
const TEST_POLL_MS = 1000;
// RECEIPT_SECONDS is at most 600: past that the service says silent anyway.
const TEST_LIMIT_MS = 620000;
let testRun = 0;

function rememberDevice(registered) { if (registered && registered.id) store.setItem(DEVICE_KEY, registered.id); }
function deviceOf(person) {
  const id = store.getItem(DEVICE_KEY);
  return (id && person && (person.devices || []).find((device) => device.id === id)) || null;
}
function showTest(state) {
  const box = document.getElementById("signon-test");
  box.hidden = state === null;
  box.dataset.state = state || "";
  box.setAttribute("role", state === "silent" ? "alert" : "status");
  document.getElementById("test-waiting").hidden = state !== "waiting";
  document.getElementById("test-ok").hidden = state !== "confirmed";
  document.getElementById("test-failed").hidden = state !== "silent";
}
/* Waits for this phone's test receipt; `person` is the answer that started the test. */
async function signOnTest(person) {
  const run = ++testRun;
  const started = performance.now();
  let device = deviceOf(person);
  showTest(device ? "waiting" : "silent");
  while (device && device.state === "waiting" && performance.now() - started < TEST_LIMIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, TEST_POLL_MS));
    if (run !== testRun) return;
    try { device = deviceOf(await api("GET", "/api/v1/staff/me")); }
    catch (e) { if (e instanceof Unauthorized) return unauthorized(); }
  }
  if (run !== testRun) return;
  showTest(device && device.state === "confirmed" ? "confirmed" : "silent");
}
async function testAgain() {
  const button = document.getElementById("test-again");
  button.disabled = true;
  try {
    signOnTest(await api("POST", "/api/v1/staff/device-tests", {}));
  } catch (e) {
    if (e instanceof Unauthorized) return unauthorized();
    notice("Test nicht gesendet: " + refusalText(e));
  } finally {
    button.disabled = false;
  }
}
document.getElementById("test-again").addEventListener("click", testAgain);
document.getElementById("test-close").addEventListener("click", () => { testRun++; showTest(null); });
