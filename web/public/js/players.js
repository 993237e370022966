// Players' records as the page shows them: ratings, leaderboard lines, a profile's pools,
// races and the rating's history as a chart. Pure: it builds elements from messages.
//
// Ratings come in hundredths of the model's conservative estimate (docs/protocol.md,
// Ratings); a provisional one (fewer than 10 rated races in its pool) is marked with a
// "?", and a bot's name always with "bot".

import { h } from "./dom.js";

/** The boards, in the order the page offers them, with their titles. */
export const BOARDS = [["rating", "Rating"], ["wins", "Most wins"], ["best_score", "Best scores"]];

/** The command that watches a finished race again. */
export const watchCommand = (race) => `foursquare watch ${race}`;

/** A rating as shown: two decimals, "?" while provisional. */
export function ratingText(rating, provisional = false) {
  const sign = rating < 0 ? "-" : "";
  const whole = Math.floor(Math.abs(rating) / 100);
  const hundredths = String(Math.abs(rating) % 100).padStart(2, "0");
  return `${sign}${whole}.${hundredths}${provisional ? "?" : ""}`;
}

/** A player's name, a link to its profile, a bot's marked. */
export const playerLink = (player, name, bot) => h("span", {},
  h("a", { href: `/player/${player}`, class: "player" }, name),
  bot ? h("span", { class: "bot-mark" }, " bot") : null);

const dash = (value) => (value === null || value === undefined ? "—" : String(value));

/** A page of a leaderboard as a table. */
export function boardTable(page) {
  return h("table", { class: "leaderboard players", id: "board" },
    h("thead", {}, h("tr", {}, ["#", "Player", "Rating", "Games", "Wins", "Best"].map((t) => h("th", {}, t)))),
    h("tbody", {}, page.entries.map((entry) => h("tr", { dataset: { player: entry.player } },
      h("td", {}, entry.rank),
      h("td", {}, playerLink(entry.player, entry.name, entry.bot)),
      h("td", { class: "rating" }, ratingText(entry.rating, entry.provisional)),
      h("td", {}, entry.games), h("td", {}, entry.wins), h("td", {}, dash(entry.best_score))))));
}

/** The rules of a pool, shortly: "4x4 c4 d4 edge". */
export const rulesText = (rules) =>
  `${rules.grid_size}x${rules.grid_size} c${rules.pile_capacity} d${rules.face_down_limit} ${rules.adjacency}`;

/** The stock left on average over the games won, one decimal ("—" before the first). */
export const averageStockLeft = (pool) =>
  (pool.won_games ? (pool.stock_left / pool.won_games).toFixed(1) : "—");

/** A profile's pools as a table; `onChart(index)` charts a pool when its row is clicked. */
export function poolsTable(pools, onChart) {
  return h("table", { class: "leaderboard players", id: "pools" },
    h("thead", {}, h("tr", {}, ["Rules", "Rating", "Games", "Wins", "Won", "Best", "Avg stock left"].map((t) => h("th", {}, t)))),
    h("tbody", {}, pools.map((pool, index) => h("tr", { onclick: () => onChart(index) },
      h("td", {}, rulesText(pool.ruleset)),
      h("td", { class: "rating" }, ratingText(pool.rating, pool.provisional)),
      h("td", {}, pool.games), h("td", {}, pool.wins), h("td", {}, pool.won_games),
      h("td", {}, dash(pool.best_score)), h("td", { class: "average" }, averageStockLeft(pool))))));
}

/** A profile's recent races as a table: the race id (a link to watch it again in the
 * page, which replays a finished race) and the command that does it in a terminal. */
export function racesTable(recent) {
  return h("table", { class: "leaderboard players", id: "recent" },
    h("thead", {}, h("tr", {}, ["Race", "Ended", "Place", "Outcome", "Score", "Rating after", "Watch again"].map((t) => h("th", {}, t)))),
    h("tbody", {}, recent.map((race) => h("tr", {},
      h("td", {}, h("a", { href: `/watch/${race.race}`, class: "replay-link" }, h("code", {}, race.race))),
      h("td", {}, new Date(race.ended_at).toISOString().slice(0, 16).replace("T", " ")),
      h("td", {}, `${race.place}/${race.racers}`), h("td", {}, race.status),
      h("td", {}, dash(race.score)),
      h("td", {}, race.rating === null || race.rating === undefined ? "unrated" : ratingText(race.rating)),
      h("td", {}, h("code", { class: "watch-command" }, watchCommand(race.race)))))));
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/**
 * The rating after each of the latest rated races (`history`, hundredths, oldest first)
 * as a line in an SVG, with the lowest and highest values written on its axis.
 */
export function ratingChart(history, { width = 480, height = 160 } = {}) {
  if (!history.length) return h("p", { class: "note", id: "chart" }, "No rated race yet.");
  const pad = 36;
  const low = Math.min(...history, 0);
  const high = Math.max(...history, low + 1);
  const x = (index) => pad + (history.length === 1 ? (width - 2 * pad) / 2 : index * (width - 2 * pad) / (history.length - 1));
  const y = (value) => height - pad / 2 - (value - low) * (height - pad) / (high - low);
  const points = history.map((value, index) => `${x(index).toFixed(1)},${y(value).toFixed(1)}`).join(" ");
  return svg("svg", { id: "chart", class: "rating-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `Rating after each of the latest ${history.length} rated races` },
  svg("line", { x1: pad, y1: y(low), x2: width - pad / 2, y2: y(low), class: "axis" }),
  svg("text", { x: 2, y: y(high) + 4, class: "tick" }, ratingText(high)),
  svg("text", { x: 2, y: y(low) + 4, class: "tick" }, ratingText(low)),
  svg("polyline", { points, class: "history" }),
  ...history.map((value, index) => svg("circle", { cx: x(index), cy: y(value), r: 2.5, class: "point" },
    svg("title", {}, ratingText(value)))));
}
