// The staff token in IndexedDB, for the service worker: a worker cannot read
// localStorage, so the page keeps a copy there (shareToken) and the worker
// reads it (storedToken) to answer a notification's "Annehmen" or
// "Ablehnen" while no page is open. Filled in (staff_page.rs) both into the
// page's script and into the worker (staff_sw.js), so that both name the same
// database; nothing here touches the page's document.
const DB_NAME = "nurse-call-staff";
const DB_STORE = "keys";
const DB_TOKEN_KEY = "token";

function openDb() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(DB_STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}
/* The page: the token for the service worker (null: removed). */
async function shareToken(value) {
  try {
    const db = await openDb();
    await new Promise((resolve, reject) => {
      const tx = db.transaction(DB_STORE, "readwrite");
      if (value) tx.objectStore(DB_STORE).put(value, DB_TOKEN_KEY); else tx.objectStore(DB_STORE).delete(DB_TOKEN_KEY);
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    db.close();
  } catch (e) { /* no IndexedDB (a private window): the notifications' actions open the page instead */ }
}
/* The worker: the token the page shared, or null. */
async function storedToken() {
  const db = await openDb();
  try {
    return await new Promise((resolve, reject) => {
      const request = db.transaction(DB_STORE, "readonly").objectStore(DB_STORE).get(DB_TOKEN_KEY);
      request.onsuccess = () => resolve(request.result || null);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}
