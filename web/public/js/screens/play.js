// Racing in the page: a quick race, or a private race opened or joined by code. The race
// itself (waiting room, board, results) is a RaceView; this screen owns the connection,
// asks for the race, and keeps the address on it.

import { every, fill, h } from "../dom.js";
import { RaceView } from "../race_view.js";
import { Connection, TokenStore } from "../wire.js";
import { askName, linkStatus, savedName } from "./common.js";

/**
 * Race: `plan` is `{ join: CODE }`, `{ quick: true }` or `{ create: RaceOptions }`. The
 * address becomes /race/ID once the race is known, so a reload (or a dropped link)
 * resumes the session and comes back to it.
 */
export function play(root, plan) {
  const name = savedName();
  if (!name) {
    askName(root, "", () => play(root, plan));
    return null;
  }
  return new Racer(root, plan, name);
}

class Racer {
  constructor(root, plan, name) {
    this.root = root;
    this.plan = plan;
    const parts = {
      title: h("h1", {}, "Foursquare Race"),
      phase: h("p", { class: "phase", id: "phase" }),
      clock: h("p", { class: "clock", id: "clock" }),
      status: h("p", { class: "link-status", role: "status" }),
      body: h("div", { id: "screen" }),
    };
    fill(root, h("div", { class: "play" },
      h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"),
        parts.title, parts.phase, parts.clock, parts.status),
      parts.body));
    this.view = new RaceView({
      parts,
      send: (message) => this.connection.send(message),
      onLeave: () => this.leave(),
      resultsActions: () => [
        h("button", { id: "again", onclick: () => { this.connection.close({ forget: true }); location.assign("/?quick=1"); } }, "Race again"),
        h("a", { href: "/" }, "Back to the lobby")],
      onFinished: () => this.connection.store?.clear(), // nothing left to resume
    });
    this.view.render();
    document.addEventListener("keydown", (event) => this.view.key(event));
    every(250, () => this.view.tick());
    this.connection = new Connection({
      name,
      store: new TokenStore("play"),
      onStatus: linkStatus(parts.status),
      onMessage: (message) => this.receive(message),
    }).start();
  }

  /** The request that puts this session in its race. */
  request() {
    if (this.plan.join) return { type: "join_race", race: this.plan.join };
    if (this.plan.create) return { type: "create_race", options: this.plan.create };
    return { type: "quick_race" };
  }

  receive(message) {
    if (message.type === "welcome") {
      if (!message.resumed) {
        this.connection.send(this.request());
      } else {
        // The server sends the race's state again when the session is in one; if it
        // says nothing (the race is over and forgotten), ask to join as if new.
        setTimeout(() => { if (!this.view.state.snapshot) this.connection.send(this.request()); }, 1500);
      }
    } else if (message.type === "error") {
      this.refused(message);
    } else if (this.view.receive(message) && message.type === "race") {
      if (location.pathname !== `/race/${message.race}`) history.replaceState(null, "", `/race/${message.race}`);
      if (this.plan.create && !this.plan.join) this.plan = { join: message.race };
    }
  }

  refused(error) {
    if (error.code === "name_taken" || (error.in_reply_to === "hello" && error.code === "bad_message")) {
      askName(this.root, error.message, () => location.reload());
      this.connection.close();
    } else if (["quick_race", "join_race", "create_race"].includes(error.in_reply_to)) {
      fill(this.view.parts.body, h("p", { class: "error", id: "refusal" }, error.message),
        h("p", {}, h("a", { href: "/" }, "Back to the lobby")));
      this.view.hide();
      this.connection.close({ forget: true });
    } else {
      this.view.refused(error);
    }
  }

  leave() {
    this.connection.send({ type: "leave_race", race: this.view.race });
    this.connection.close({ forget: true });
    location.assign("/");
  }
}
