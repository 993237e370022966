// A tournament as the page shows it (its `tournament` message): where it stands, the
// standings (tied places as "=2"), and the races in progress, each a link to watch it.

import { clock, h, plural, seconds, serverClock } from "./dom.js";

/** Where the tournament stands, in a line (as the terminal client says it). */
export function phaseLine(state) {
  const entrants = state.standings.filter((line) => line.state === "active").length;
  if (state.status === "created") return "Not open yet: the host has not opened registration.";
  if (state.status === "open") return `Registration is open · ${plural(entrants, "entrant")} · waiting for the host to start.`;
  if (state.status === "finished") return "Finished · final standings.";
  const paused = state.paused ? " · paused by the host" : "";
  const ending = state.ending ? " · ending: the races in progress finish and count" : "";
  if (state.format === "rounds") {
    return `Round ${state.round} of ${state.rounds}${state.races.length ? "" : " over · the host starts the next"}${paused}${ending}`;
  }
  const left = state.ends_at ? state.ends_at - serverClock.now() : null;
  const window = left === null ? "the window has not opened"
    : left > 0 ? `${clock(left)} left` : "the window has closed; the last races are finishing";
  return `Arena · ${window}${paused}${ending}`;
}

/** The standings table; the line of `you` (an entrant id), if any, marked. */
export function tournamentStandings(state, you = null) {
  return h("table", { class: "standings", id: "tournament-standings" },
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "entrant"), h("th", {}, "points"),
      h("th", { title: "stock left over the games won" }, "stock"), h("th", {}, "time"), h("th", {}, "games"))),
    h("tbody", {}, state.standings.map((line) => h("tr", {
      class: [line.state !== "active" ? "inactive" : "", line.entrant === you ? "you" : ""].join(" ").trim() || null,
      dataset: { entrant: line.entrant } },
    h("td", {}, `${line.tied ? "=" : ""}${line.place}`),
    h("td", {}, line.name, line.bot ? h("span", { class: "label" }, " [bot]") : null,
      line.entrant === you ? h("span", { class: "label you" }, " (you)") : null,
      line.state !== "active" ? h("span", { class: "label" }, ` (${line.state})`) : null),
    h("td", { class: "points" }, line.points), h("td", {}, line.stock_left),
    h("td", {}, seconds(line.time_ms)), h("td", {}, line.games)))));
}

/**
 * The races in progress, each with its racers' names and a link to watch it; `newTab`
 * opens those in another tab (an entrant's page keeps its own session).
 */
export function racesInProgress(state, { newTab = false } = {}) {
  const names = new Map(state.standings.map((line) => [line.entrant, line.name]));
  if (!state.races.length) return h("p", { class: "note", id: "tournament-races" }, "No race in progress.");
  return h("ul", { class: "races-list", id: "tournament-races" }, state.races.map((race) => h("li", {},
    h("span", {}, race.round ? `Round ${race.round}: ` : "", race.racers.map((id) => names.get(id) ?? id).join(", ")),
    h("a", { href: `/watch/${race.race}`, class: "watch-race", target: newTab ? "_blank" : null,
      rel: newTab ? "noopener" : null }, race.finished ? "result" : "watch"))));
}
