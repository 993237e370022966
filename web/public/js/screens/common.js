// What every screen shares: the person's name, the link's state, and the trace the
// benchmark reads.

import { fill, h } from "../dom.js";

const NAME_KEY = "foursquare.name";

/** The name this browser last raced under ("" the first time). */
export const savedName = () => localStorage.getItem(NAME_KEY) ?? "";

/** Remember the name for next time. */
export const saveName = (name) => localStorage.setItem(NAME_KEY, name);

/** A spectator's name: the saved one, else "spectator" (spectators' names are not checked
 * against players'). */
export const spectatorName = () => savedName() || "spectator";

/** An `onStatus` for a Connection that writes the link's state into `element`. */
export function linkStatus(element) {
  return (state, sentence) => {
    element.dataset.state = state;
    fill(element, state === "online" ? "" : sentence || {
      connecting: "Connecting…", reconnecting: "Reconnecting…", closed: "Disconnected.",
    }[state]);
  };
}

/**
 * When the page's address holds `?trace=1`, the time each progress entry was drawn (ms
 * since the Unix epoch, after the frame that drew it), by racer and cards played: the
 * load benchmark compares it with the terminal spectator's.
 */
export const trace = {
  on: new URLSearchParams(location.search).get("trace") === "1",
  drawnAt: [],
  drawn(racers, progress) {
    if (!this.on || !racers.size) return;
    const at = performance.timeOrigin + performance.now();
    for (const racer of racers) this.drawnAt.push([racer, progress.get(racer).cards_played, at]);
  },
};
if (trace.on) globalThis.foursquareTrace = trace;

/**
 * Ask for the name to race under (checked by the server as docs/protocol.md says; a
 * refusal comes back as `problem`), then call `then(name)`.
 */
export function askName(root, problem, then) {
  const input = h("input", { id: "name", name: "name", maxlength: 32, required: true,
    autocomplete: "nickname", value: savedName() });
  fill(root, h("form", { class: "panel name-form", id: "name-form", onsubmit: (event) => {
    event.preventDefault();
    const name = input.value.trim();
    if (!name) return;
    saveName(name);
    then(name);
  } },
  h("h1", {}, "Foursquare Race"),
  h("label", {}, "Your name, as the other racers will see it", input),
  problem ? h("p", { class: "error", role: "alert" }, problem) : null,
  h("button", { type: "submit" }, "Go")));
  input.focus();
}
