// Small helpers to build the page: elements, times, and the server's clock.

/**
 * An element: `h("p", { class: "note" }, "text", child)`. Attributes starting with `on`
 * are listeners; `null`, `undefined` and `false` children are left out. Text is always
 * set as text, never as HTML, so a racer's name can hold anything.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    // Through the CSSOM: the page's policy refuses inline style attributes.
    else if (name === "style") for (const [property, v] of Object.entries(value)) element.style.setProperty(property, v);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

/** Replace everything in `element` with `children`. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** Milliseconds as `m:ss` (or `h:mm:ss`); negative counts as 0. */
export function clock(ms) {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const s = String(seconds % 60).padStart(2, "0");
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}:${s}`;
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}:${s}`;
}

/** Milliseconds as seconds with a tenth: `83.4 s`. */
export const seconds = (ms) => (ms === null || ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`);

/** "1 card", "3 cards". */
export const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

/**
 * The server's clock as seen from here: every message with `server_time` sets the
 * offset, so countdowns and race clocks follow the server, not this machine's clock.
 */
export const serverClock = {
  offset: 0,
  heard(serverTime) {
    if (typeof serverTime === "number") this.offset = serverTime - Date.now();
  },
  now() {
    return Date.now() + this.offset;
  },
};

/** Calls `tick` now and about every `ms` until `stop()` (timers pause in hidden tabs). */
export function every(ms, tick) {
  tick();
  const id = setInterval(tick, ms);
  return { stop: () => clearInterval(id) };
}

/** Words for a racer's status, as the leaderboard and the results show it. */
export const STATUS_WORDS = {
  waiting: "waiting", racing: "racing", won: "won", lost: "lost",
  resigned: "resigned", timed_out: "timed out",
};

/** Words for why a game was lost. */
export const REASON_WORDS = {
  face_down: "too many face-down cards", stock_empty: "the stock ran out",
};
