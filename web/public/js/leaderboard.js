// The live leaderboard: racers ranked by the standings rule (docs/rules.md), each with a
// bar of face-up piles, cards played, and how its game stands.

import { h, plural, REASON_WORDS, seconds, STATUS_WORDS } from "./dom.js";
import { rankRacers, tied } from "./verify.js";

/** What a racer's line says of its game: "racing", "won, 12 left", "lost (…)". */
export function standingWords(entry) {
  if (entry.status === "won") return `won, ${plural(entry.score ?? 0, "card")} left`;
  if (entry.status === "lost" && entry.reason) return `lost: ${REASON_WORDS[entry.reason]}`;
  return STATUS_WORDS[entry.status] ?? entry.status;
}

/** A racer's name with the labels the protocol reserves: "[bot]" and "(you)". */
export function racerName(entry, you) {
  return h("span", { class: "name" }, entry.name,
    entry.bot ? h("span", { class: "label" }, " [bot]") : null,
    entry.racer === you ? h("span", { class: "label you" }, " (you)") : null);
}

/**
 * The leaderboard of `entries` (progress entries), best first. `piles` is the grid's
 * size squared (a full bar); `limit` lines at most, the rest summed up in one line, and
 * `you` always shown. `away` maps racer ids to the server time they are counted out.
 */
export function leaderboard(entries, { piles = 16, limit = 50, you = null, away = new Map(),
  now = 0 } = {}) {
  const ranked = rankRacers(entries);
  let shown = ranked.slice(0, limit);
  const mine = ranked.findIndex((entry) => entry.racer === you);
  if (mine >= limit) shown = [...ranked.slice(0, limit - 1), ranked[mine]];
  const body = h("tbody");
  let place = 0;
  ranked.forEach((entry, index) => {
    if (index === 0 || !tied(ranked[index - 1], entry)) place = index + 1;
    if (!shown.includes(entry)) return;
    const isTied = (index > 0 && tied(ranked[index - 1], entry))
      || (index + 1 < ranked.length && tied(ranked[index + 1], entry));
    const out = away.get(entry.racer);
    body.append(h("tr", { class: entry.racer === you ? "you" : null, dataset: { racer: entry.racer } },
      h("td", { class: "place" }, `${isTied ? "=" : ""}${place}`),
      h("td", {}, racerName(entry, you),
        out ? h("div", { class: "away" }, `disconnected, out in ${Math.max(0, Math.ceil((out - now) / 1000))} s`) : null),
      h("td", { class: "bar" }, h("meter", { min: 0, max: piles, value: entry.face_up,
        title: `${entry.face_up} of ${piles} piles face up` })),
      h("td", { class: "played" }, entry.cards_played),
      h("td", { class: "down" }, entry.face_down),
      h("td", { class: `status ${entry.status}` }, standingWords(entry),
        entry.finish_ms !== null && entry.finish_ms !== undefined ? ` · ${seconds(entry.finish_ms)}` : "")));
  });
  const rest = ranked.length - shown.length;
  return h("table", { class: "leaderboard" },
    h("thead", {}, h("tr", {},
      h("th", {}, "#"), h("th", {}, "racer"), h("th", {}, "face up"),
      h("th", { title: "cards played" }, "played"), h("th", { title: "face-down tops" }, "down"),
      h("th", {}, ""))),
    body,
    rest > 0 ? h("tfoot", {}, h("tr", {}, h("td", { colspan: 6 }, `… and ${plural(rest, "more racer")}`))) : null);
}
