// The players' pages: the leaderboards (/leaderboard) and a player's profile
// (/player/ID), from the same get_leaderboard and get_profile messages as the terminal
// client, as a spectator (nothing is raced, no name is taken).

import { every, fill, h } from "../dom.js";
import { BOARDS, boardTable, poolsTable, racesTable, ratingChart, ratingText, rulesText } from "../players.js";
import { Connection } from "../wire.js";
import { linkStatus, spectatorName } from "./common.js";

/** Lines on a page of the leaderboard. */
const PAGE_LINES = 25;
/** Milliseconds between two readings of the page shown: ratings move as races end. */
const REFRESH_MS = 10_000;

function frame(root, title, ...body) {
  const status = h("p", { class: "link-status", role: "status" });
  fill(root, h("div", { class: "players-page" },
    h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"),
      h("h1", {}, title), h("a", { href: "/leaderboard" }, "Leaderboards"), status),
    ...body));
  return status;
}

export function leaderboardPage(root) {
  const view = { board: "rating", bots: true, after: null, page: null };
  const tabs = h("div", { class: "board-tabs", role: "tablist" }, BOARDS.map(([board, title]) =>
    h("button", { type: "button", role: "tab", id: `board-${board}`, class: "secondary",
      onclick: () => choose(board, view.bots) }, title)));
  const bots = h("input", { type: "checkbox", id: "bots", checked: true,
    onchange: () => choose(view.board, bots.checked) });
  const where = h("p", { class: "note", id: "where" });
  const table = h("div", { id: "board-table" });
  const top = h("button", { type: "button", id: "top", class: "secondary", onclick: () => { view.after = null; read(); } }, "Top");
  const next = h("button", { type: "button", id: "next", class: "secondary", onclick: () => {
    if (view.page?.next) { view.after = view.page.next; read(); }
  } }, "Next page");
  const status = frame(root, "Leaderboards", h("section", { class: "panel" }, tabs,
    h("label", { class: "bots-filter" }, bots, " show bots (always marked)"), where, table,
    h("div", { class: "pager" }, top, next)));

  async function read() {
    const asked = { board: view.board, bots: view.bots };
    const answer = await connection.request({ type: "get_leaderboard", board: asked.board, bots: asked.bots,
      after: view.after, limit: PAGE_LINES });
    if (asked.board !== view.board || asked.bots !== view.bots) return; // a choice made since
    if (answer.type !== "leaderboard") {
      if (answer.code !== "disconnected") fill(where, answer.message);
      return;
    }
    view.page = answer;
    render();
  }
  function render() {
    for (const [board] of BOARDS) document.getElementById(`board-${board}`).setAttribute("aria-selected", String(board === view.board));
    const page = view.page;
    if (!page) return;
    const rules = `${rulesText(page.ruleset)} rules`;
    fill(where, page.entries.length
      ? `${page.entries[0].rank}–${page.entries.at(-1).rank} of ${page.total}, ${rules}`
      : `Nobody on this board yet (${rules}).`);
    fill(table, boardTable(page));
    next.disabled = !page.next;
    top.disabled = page.offset === 0;
  }
  function choose(board, withBots) {
    Object.assign(view, { board, bots: withBots, after: null, page: null });
    fill(table);
    render();
    read();
  }
  const connection = new Connection({
    name: spectatorName(), role: "spectator", onStatus: linkStatus(status),
    onMessage(message) { if (message.type === "welcome") read(); },
  }).start();
  every(REFRESH_MS, () => { if (connection.welcome) read(); });
  render();
  return { connection };
}

export function profilePage(root, player) {
  const title = h("p", { class: "phase", id: "who" }, `Player ${player}`);
  const summary = h("p", { class: "note", id: "summary" });
  const chart = h("div", { class: "chart-box" });
  const pools = h("div", {});
  const races = h("div", {});
  const status = frame(root, "Profile", title, summary,
    h("div", { class: "columns" },
      h("section", { class: "panel" }, h("h2", {}, "Ratings by rules"), pools),
      h("section", { class: "panel" }, h("h2", {}, "Rating history"), chart)),
    h("section", { class: "panel" }, h("h2", {}, "Recent races"),
      h("p", { class: "note" }, "Watch a race again: click its id to replay it here, or run the command beside it in a terminal."), races));

  function show(profile) {
    fill(title, profile.name, profile.bot ? h("span", { class: "bot-mark" }, " bot") : null);
    const first = profile.pools[0];
    fill(summary, first
      ? `Rating ${ratingText(first.rating, first.provisional)}${first.provisional ? " (provisional until 10 rated races)" : ""} · ${first.games} rated races · ${first.wins} wins`
      : "Not rated yet.");
    const chartPool = (index) => {
      const pool = profile.pools[index];
      fill(chart, h("p", { class: "note" }, `${rulesText(pool.ruleset)}: after each of the latest rated races`),
        ratingChart(pool.history));
    };
    fill(pools, poolsTable(profile.pools, chartPool));
    if (first) chartPool(0);
    else fill(chart, ratingChart([]));
    fill(races, profile.recent.length ? racesTable(profile.recent) : h("p", { class: "note" }, "No race yet."));
  }
  const connection = new Connection({
    name: spectatorName(), role: "spectator", onStatus: linkStatus(status),
    async onMessage(message) {
      if (message.type !== "welcome") return;
      const answer = await connection.request({ type: "get_profile", player });
      if (answer.type === "profile") show(answer);
      else if (answer.code !== "disconnected") fill(summary, answer.message);
    },
  }).start();
  return { connection };
}
