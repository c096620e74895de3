// The display page's layout and clock (display_layout.js, filled into
// display_page.html; the durations' words are page_helpers.js's): readable
// across a corridor (docs/displays.md).

/* At most this many tiles; the rest are counted ("+ 3 weitere Rufe"). Nine
   keep a call type's name at 60 px cap height or more on a 1920×1080 screen. */
const MAX_TILES = 9;
/* The smallest type size (px) the search tries: below it a tile is clipped
   rather than its name made unreadable. */
const MIN_TYPE_PX = 14;

/* The installation's time of day, "HH:MM". The server's `at` is the
   installation's local time (the same as "Stand"), so it is counted on from
   when it arrived: the browser's own zone and clock play no part, and the
   header clock never disagrees with "Stand". Null before the first read. */
let serverClock = null;  // { at: the wire time read as if UTC (ms), received: performance.now() }
function learnServerTime(at) {
  const ms = Date.parse(String(at).replace(" ", "T") + "Z");
  if (Number.isFinite(ms)) serverClock = { at: ms, received: performance.now() };
  document.getElementById("clock").textContent = installationClock();
}
function installationClock() {
  if (!serverClock) return "";
  const now = new Date(serverClock.at + (performance.now() - serverClock.received));
  return String(now.getUTCHours()).padStart(2, "0") + ":" + String(now.getUTCMinutes()).padStart(2, "0");
}

/* A name longer than the names that must stay large (NOTRUF … GERÄTERUF,
   up to 10 letters): PNEUMATISCHER RUF (REA), FUNKELEMENT-RUF. Such a name
   is made smaller on its own tile rather than every name smaller. */
function isLongName(name) { return name.textContent.length > 10; }

/* How far (px) the tile's content is over its tile; 0 when it fits. From
   the rects, not scrollHeight: content centred in an overflowing tile would
   spill above its top, where scrollHeight does not count it. */
function tileExcess(tile) {
  const wider = tile.scrollWidth - tile.clientWidth;
  const style = getComputedStyle(tile);
  const inner = tile.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  const rects = [...tile.children].map((child) => child.getBoundingClientRect()).filter((r) => r.height > 0);
  const taller = Math.max(...rects.map((r) => r.bottom)) - Math.min(...rects.map((r) => r.top)) - inner;
  return Math.max(0, wider > 1 ? wider : 0, taller > 1 ? taller : 0);
}

/* Sizes the tiles at type size `size` (px, the call type's name; the rest of
   a tile in em of it): a name whose longest word is wider than its tile is
   shrunk to the tile's width, a long name on more lines than its tile holds
   is shrunk in steps. How far the worst tile is over (0: all fit). */
function tilesFitAt(list, tiles, size) {
  list.style.setProperty("--s", size + "px");
  const names = tiles.map((tile) => tile.querySelector(".tile-type"));
  for (const name of names) name.style.fontSize = "";
  // Read every width before writing any size: one layout, not one per tile.
  const factors = names.map((name) => (name.scrollWidth > name.clientWidth + 1 ? name.clientWidth / name.scrollWidth : 1));
  names.forEach((name, i) => { if (factors[i] < 1) name.style.fontSize = Math.floor(size * factors[i] * 0.98) + "px"; });
  let excess = tiles.map(tileExcess);
  // Not below half the others' size: then the tile is too full as a whole.
  const smallest = Math.max(MIN_TYPE_PX, size / 2);
  for (let step = 0; step < 8; step++) {
    const shrink = names.filter((name, i) => excess[i] > 0 && isLongName(name) && parseFloat(getComputedStyle(name).fontSize) > smallest);
    if (shrink.length === 0) break;
    const sizes = shrink.map((name) => parseFloat(getComputedStyle(name).fontSize));
    shrink.forEach((name, i) => { name.style.fontSize = Math.max(smallest, Math.floor(sizes[i] * 0.85)) + "px"; });
    excess = tiles.map(tileExcess);
  }
  return Math.max(...excess);
}

/* The type size a layout reaches: the smallest name among the tiles whose
   names must stay large; long names do not count. */
function layoutScore(tiles, size) {
  let score = Infinity;
  for (const tile of tiles) {
    const name = tile.querySelector(".tile-type");
    if (!isLongName(name)) score = Math.min(score, parseFloat(getComputedStyle(name).fontSize));
  }
  return score === Infinity ? size : score;
}

/* Below this name size (px; about 24 px cap height) the details line
   (address, section, urgency in words) gives its room to the name. */
const COMPACT_BELOW_PX = 34;

/* The tiles share the list's whole height and width: every grid of columns
   × rows that can hold them is tried, each with the largest type size at
   which every tile's content fits (a binary search; a grid that cannot
   beat the best so far is left after one try), and the grid whose names
   come out largest wins (if none fits even at the smallest size, the one
   least over). One call fills the screen. Where the names would come
   out small, the tiles go without their details line if that makes them
   larger. True when every tile's content fits. */
function fit(list) {
  const tiles = [...list.children];
  if (tiles.length === 0) return true;
  list.classList.remove("compact");
  let best = bestLayout(list, tiles);
  if (best.excess > 0 || best.score < COMPACT_BELOW_PX) {
    list.classList.add("compact");
    const compact = bestLayout(list, tiles);
    if (better(compact, best)) best = compact; else list.classList.remove("compact");
  }
  list.style.setProperty("--cols", best.cols);
  list.style.setProperty("--rows", best.rows);
  tilesFitAt(list, tiles, best.size);
  list.dataset.layout = best.cols + "x" + best.rows + (list.classList.contains("compact") ? " compact" : "");
  return best.excess === 0;
}
function better(a, b) {
  if (a.excess > 0 || b.excess > 0) return a.excess < b.excess;
  return a.score > b.score || (a.score === b.score && a.size > b.size);
}
function bestLayout(list, tiles) {
  const n = tiles.length;
  const names = tiles.map((tile) => tile.querySelector(".tile-type")).filter((name) => !isLongName(name));
  const letters = Math.max(2, ...names.map((name) => name.textContent.length));
  const [width, height] = [list.clientWidth, list.clientHeight];
  const grids = [];
  for (let cols = 1; cols <= n; cols++) {
    const rows = Math.ceil(n / cols);
    // As many rows with fewer columns: wider tiles, never worse.
    if (cols > 1 && Math.ceil(n / (cols - 1)) === rows) continue;
    // The search's ceiling, from the grid alone: a name is at most a row
    // high, and a capital is at least half a type size wide.
    grids.push({ cols, rows, ceiling: Math.floor(Math.min(height / rows, width / cols / (0.5 * letters))) });
  }
  // Each try is a layout of the page at a new type size, and the new call
  // waits for them (about 2 ms each on a desktop core, far more on a
  // display's): the grid likeliest to win is searched first, and a grid
  // whose ceiling is below what another reached, or that does not fit just
  // above it, costs no search.
  grids.sort((a, b) => b.ceiling - a.ceiling);
  let best = null;
  for (const { cols, rows, ceiling } of grids) {
    const beaten = best !== null && best.excess === 0;
    if (beaten && ceiling <= best.score) continue;
    list.style.setProperty("--cols", cols);
    list.style.setProperty("--rows", rows);
    let low = MIN_TYPE_PX, high = Math.max(MIN_TYPE_PX, ceiling);
    if (beaten) {
      // Names no larger than the best's cannot win (a tie in score aside).
      low = best.score + 1;
      if (tilesFitAt(list, tiles, low) > 0) continue;
    } else if (tilesFitAt(list, tiles, low) > 0) {
      high = low;
    }
    // To within 3 %: finer steps are not seen, but cost a layout each.
    while (high - low > Math.max(1, low * 0.03)) {
      const middle = Math.floor((low + high) / 2);
      if (tilesFitAt(list, tiles, middle) > 0) high = middle; else low = middle;
    }
    const excess = tilesFitAt(list, tiles, low);
    const candidate = { cols, rows, size: low, score: layoutScore(tiles, low), excess };
    if (!best || better(candidate, best)) best = candidate;
  }
  return best;
}
