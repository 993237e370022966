// Watching a tournament (/t/CODE): where it stands, the standings, and the races in
// progress, each a click away (/watch/RACE); while it may be entered, a link to enter it
// (/t/CODE/play).

import { every, fill, h } from "../dom.js";
import { phaseLine, racesInProgress, tournamentStandings } from "../tournament_view.js";
import { Connection, TokenStore } from "../wire.js";
import { linkStatus, spectatorName } from "./common.js";

export function watchTournament(root, code) {
  let state = null;
  const parts = {
    title: h("h1", {}, "Tournament ", h("code", {}, code)),
    phase: h("p", { class: "phase", id: "phase" }),
    status: h("p", { class: "link-status", role: "status" }),
    enter: h("p", { class: "enter" }),
    standings: h("section", { class: "panel" }),
    races: h("section", { class: "panel" }),
  };
  fill(root, h("div", { class: "tournament" },
    h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"), parts.title, parts.phase, parts.enter, parts.status),
    h("div", { class: "columns" }, parts.standings, parts.races)));
  function render() {
    if (!state) return;
    fill(parts.title, state.name, " ", h("code", {}, state.tournament));
    fill(parts.phase, phaseLine(state));
    fill(parts.enter, state.status === "open" || state.status === "running"
      ? h("a", { href: `/t/${state.tournament}/play`, id: "enter", class: "button" }, "Enter this tournament") : null);
    fill(parts.standings, h("h2", {}, "Standings"), tournamentStandings(state));
    fill(parts.races, h("h2", {}, "Races in progress"), racesInProgress(state));
  }
  every(1000, () => { if (state) fill(parts.phase, phaseLine(state)); });
  const connection = new Connection({
    name: spectatorName(), role: "spectator", store: new TokenStore(`tournament.${code}`),
    onStatus: linkStatus(parts.status),
    onMessage(message) {
      if (message.type === "welcome") connection.send({ type: "watch_tournament", tournament: code });
      else if (message.type === "tournament" && message.tournament === code) {
        state = message;
        render();
      } else if (message.type === "error" && message.in_reply_to === "watch_tournament") {
        fill(parts.phase, message.code === "tournament_not_found" ? `No tournament has the code ${code}.` : message.message);
      }
    },
  }).start();
  return { connection };
}
