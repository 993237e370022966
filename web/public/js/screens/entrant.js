// A tournament entered from the page (/t/CODE/play): the person joins as an entrant, sees
// where the tournament stands and its standings, and races each race it deals them in the
// page, coming back to the standings after each, to the final standings.
//
// The messages are the terminal client's (docs/protocol.md, "Tournaments"): join_tournament
// on a new session, watch_tournament on a resumed one (the server sends the race in
// progress again by itself). A race is ours when its `race` snapshot carries `you`: the
// tournament seats its entrants itself, so the snapshot that deals us in comes unasked.

import { every, fill, h, plural } from "../dom.js";
import { RaceView } from "../race_view.js";
import { phaseLine, racesInProgress, tournamentStandings } from "../tournament_view.js";
import { Connection, TokenStore } from "../wire.js";
import { askName, linkStatus, savedName } from "./common.js";

/** Refusals of these, before any state has come, leave nothing to show but a sentence. */
const FIRST_REQUESTS = ["join_tournament", "watch_tournament"];

/** The states in which an entrant may join. */
const ENTERABLE = ["open", "running"];

export function enterTournament(root, code) {
  const name = savedName();
  if (!name) {
    askName(root, "", () => enterTournament(root, code));
    return null;
  }
  return new Entrant(root, code.toUpperCase(), name);
}

class Entrant {
  constructor(root, code, name) {
    this.root = root;
    this.code = code;
    this.state = null; // the last `tournament` message
    this.you = null; // our entrant id, from the tournament's messages
    this.view = null; // the RaceView of our current (or last) race
    this.showingRace = false;
    this.enterWhenOpen = false; // our join came before registration opened: join then
    this.available = true; // arena: whether we asked to be paired (a no-show is taken out)
    this.problem = "";
    this.parts = {
      title: h("h1", {}, "Tournament ", h("code", {}, code)),
      phase: h("p", { class: "phase", id: "phase" }),
      clock: h("p", { class: "clock", id: "clock" }),
      status: h("p", { class: "link-status", role: "status" }),
      body: h("div", { id: "screen" }),
    };
    const p = this.parts;
    fill(root, h("div", { class: "tournament entrant" },
      h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"), p.title, p.phase, p.clock, p.status),
      p.body));
    fill(p.body, h("p", { class: "note" }, "Entering the tournament…"));
    document.addEventListener("keydown", (event) => this.view?.key(event));
    every(250, () => this.view?.tick());
    every(1000, () => { if (!this.showingRace && this.state) fill(p.phase, phaseLine(this.state)); });
    this.connection = new Connection({
      name,
      store: new TokenStore(`entrant.${code}`),
      onStatus: linkStatus(p.status),
      onMessage: (message) => this.receive(message),
    }).start();
  }

  send(message) {
    return this.connection.send(message);
  }

  receive(message) {
    switch (message.type) {
      case "welcome":
        this.send({ type: message.resumed ? "watch_tournament" : "join_tournament", tournament: this.code });
        return;
      case "error":
        this.refused(message);
        return;
      case "tournament":
        if (message.tournament !== this.code) return;
        this.tournamentChanged(message);
        return;
      case "race":
        if (message.you && message.race !== this.view?.race) {
          this.dealt(message);
          return;
        }
        break;
      default:
        break;
    }
    if (this.view?.receive(message) && message.type === "finished") this.ownRaceFinished(message);
  }

  /** In an arena, an entrant who made no move in its race is taken out of pairing until
   * it asks again: the standings then offer to. */
  ownRaceFinished(finished) {
    const mine = finished.standings.find((line) => line.racer === this.you);
    if (this.state?.format === "arena" && mine && !mine.moves.length) this.available = false;
  }

  setAvailable(available) {
    if (this.send({ type: "arena_available", tournament: this.code, available }) === null) return;
    this.available = available;
    this.renderStandings();
  }

  tournamentChanged(state) {
    this.state = state;
    if (state.you) this.you = state.you;
    if (this.enterWhenOpen && ENTERABLE.includes(state.status)) {
      this.enterWhenOpen = false;
      this.problem = "";
      this.send({ type: "join_tournament", tournament: this.code });
    }
    if (!this.showingRace) this.renderStandings();
  }

  /** A race snapshot naming us: a race the tournament dealt us (or, after a resume, the
   * one we are in). Seated ones only: one over already is in the standings. */
  dealt(snapshot) {
    if (snapshot.state !== "countdown" && snapshot.state !== "running") return;
    this.view?.hide();
    this.view = new RaceView({
      parts: this.parts,
      send: (message) => this.send(message),
      you: snapshot.you,
      invite: false,
      title: (race) => [this.state?.name ?? "Tournament", " · race ", h("code", {}, race.race)],
      resultsActions: () => [h("button", { id: "back-to-standings", onclick: () => this.renderStandings() },
        "Back to the standings")],
    });
    this.view.receive(snapshot);
    this.showingRace = true;
    this.view.render();
  }

  refused(error) {
    if (error.code === "name_taken" || (error.in_reply_to === "hello" && error.code === "bad_message")) {
      askName(this.root, error.message, () => location.reload());
      this.connection.close();
    } else if (error.code === "already_entered") {
      this.send({ type: "watch_tournament", tournament: this.code });
    } else if (FIRST_REQUESTS.includes(error.in_reply_to) && !this.state) {
      if (error.code !== "tournament_state") {
        fill(this.parts.body, h("p", { class: "error", id: "refusal" }, error.message),
          h("p", {}, h("a", { href: "/" }, "Back to the lobby")));
        this.connection.close({ forget: true });
        return;
      }
      // Not open yet (or over): show it, and enter as soon as registration opens.
      this.enterWhenOpen = true;
      this.problem = error.message;
      this.send({ type: "watch_tournament", tournament: this.code });
    } else if (this.showingRace && this.view) {
      this.view.refused(error);
    } else {
      this.problem = error.message;
      if (this.state) this.renderStandings();
    }
  }

  /** Where the tournament stands, where we stand in it, and its races in progress. */
  renderStandings() {
    this.showingRace = false;
    this.view?.hide();
    const state = this.state;
    const p = this.parts;
    if (!state) {
      fill(p.body, h("p", { class: "note" }, this.problem || "Entering the tournament…"));
      return;
    }
    fill(p.title, state.name, " ", h("code", {}, state.tournament));
    fill(p.phase, phaseLine(state));
    const mine = state.standings.find((line) => line.entrant === this.you) ?? null;
    const lastRace = this.view?.state.finished ? this.view : null;
    fill(p.body, h("div", { class: "columns" },
      h("div", { class: "side" },
        h("section", { class: "panel" }, h("h2", {}, "Standings"), tournamentStandings(state, this.you)),
        this.problem ? h("p", { class: "error", role: "alert" }, this.problem) : null),
      h("div", { class: "side" },
        h("section", { class: "panel" }, h("h2", {}, "You"),
          h("p", { class: "verdict", id: "entrant-line" }, entrantLine(state, mine, this.you, this.available)),
          h("div", { class: "row" },
            state.format === "arena" && state.status === "running" && mine?.state === "active"
              ? h("button", { class: this.available ? "secondary" : null, id: "arena-available",
                onclick: () => this.setAvailable(!this.available) },
              this.available ? "Take a break from pairing" : "Pair me again") : null,
            mine?.state === "active" && state.status !== "finished"
              ? h("button", { class: "secondary", id: "leave-tournament", onclick: () => this.leave() }, "Leave the tournament")
              : null,
            mine?.state === "left" && state.status !== "finished"
              ? h("button", { id: "enter-again", onclick: () => this.send({ type: "join_tournament", tournament: this.code }) },
                "Enter again") : null,
            lastRace ? h("button", { class: "secondary", id: "last-race", onclick: () => {
              this.showingRace = true;
              lastRace.render();
            } }, "Your last race's results") : null)),
        h("section", { class: "panel" }, h("h2", {}, "Races in progress"), racesInProgress(state, { newTab: true })))));
  }

  leave() {
    if (confirm("Leave the tournament? Your points stay; you are dealt no more races.")) {
      this.send({ type: "leave_tournament", tournament: this.code });
    }
  }
}

/** What the entrant should know now, in a sentence (as the terminal client says it). */
function entrantLine(state, mine, you, available) {
  // The standings leave a removed entrant out.
  if (!mine || mine.state === "removed") return you ? "The host removed you from this tournament." : "Entering…";
  if (mine.state === "left") return "You have left: your points stay.";
  if (state.status === "finished") {
    return `You finished ${mine.tied ? "tied " : ""}in place ${mine.place} of ${state.standings.length}, with ${plural(mine.points, "point")}.`;
  }
  if (state.races.some((race) => !race.finished && race.racers.includes(you))) return "Your race is on.";
  if (state.status !== "running") return "You are in. Your first race starts when the host starts the tournament.";
  if (state.format === "rounds") return "Waiting for the next round (the round ends when every race is over).";
  if (state.ending) return "No more races are formed.";
  if (!available) return "You are taking a break from pairing.";
  return "Waiting to be paired into the next race…";
}
