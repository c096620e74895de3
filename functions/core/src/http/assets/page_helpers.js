// Shared by the display page, the staff page and the test page (page_helpers.js).
/* A new element with `attrs` (class, data-*, else properties) and children (text or nodes). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
/* Black or white text, whichever contrasts more with the colour (WCAG luminance). */
function textColorOn(hex) {
  if (!/^#[0-9a-fA-F]{6}$/.test(hex)) return "#000";
  const lin = (i) => { const c = parseInt(hex.slice(i, i + 2), 16) / 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return (l + 0.05) * (l + 0.05) >= 0.0525 ? "#000" : "#fff";
}
/* A running duration as words, never like a clock time ("14:13" beside the
   clock "14:19" reads as a time of day): "35 s", "4 Min", "1 Std 12",
   "3 Tage". Seconds only in the first minute, to show that a call is new. */
function durationText(seconds) {
  const s = Math.max(0, Math.floor(Number(seconds) || 0));
  if (s < 60) return s + " s";
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return minutes + " Min";
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return hours + " Std" + (minutes % 60 ? " " + (minutes % 60) : "");
  const days = Math.floor(hours / 24);
  return days + (days === 1 ? " Tag" : " Tage");
}
