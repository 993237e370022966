// Watching a race (/watch/CODE): every board drawn as cards, the live leaderboard, the race
// clock and the fog as it is; when the race ends, the result checked in the page.
//
// Boards are drawn only when on screen: a 1,000-racer race changes a hundred boards at a
// time, ten times a second, and redrawing the ones nobody can see would make the tab fall
// behind. A board off screen is marked stale and drawn when it scrolls into view.

import { drawBoard } from "../board.js";
import { every, fill, h, plural, serverClock } from "../dom.js";
import { leaderboard, racerName, standingWords } from "../leaderboard.js";
import { RaceState } from "../race_state.js";
import { parWords, seedLines, standingsTable, verification } from "../results.js";
import { Connection, TokenStore } from "../wire.js";
import { linkStatus, spectatorName, trace } from "./common.js";

export function watchRace(root, code) {
  const state = new RaceState();
  const parts = {
    title: h("h1", {}, "Watching race ", h("code", {}, code)),
    phase: h("p", { class: "phase", id: "phase" }),
    clock: h("p", { class: "clock", id: "clock" }),
    fog: h("p", { class: "fog-note", id: "fog" }),
    leaderboard: h("section", { class: "panel", id: "leaderboard" }),
    result: h("section", { class: "result", id: "result" }),
    boards: h("section", { class: "boards", id: "boards" }),
    status: h("p", { class: "link-status", role: "status" }),
  };
  fill(root, h("div", { class: "watch" },
    h("header", { class: "top" }, parts.title, parts.phase, parts.clock, parts.status),
    h("div", { class: "columns" },
      h("div", { class: "side" }, parts.leaderboard, parts.fog, parts.result),
      parts.boards)));

  const tiles = new Map(); // racer -> { tile, board, caption, stale }
  const visible = new Set();
  const observer = new IntersectionObserver((seen) => {
    for (const item of seen) {
      const racer = item.target.dataset.racer;
      if (item.isIntersecting) {
        visible.add(racer);
        if (tiles.get(racer)?.stale) drawTile(racer);
      } else {
        visible.delete(racer);
      }
    }
  }, { rootMargin: "200px" });

  function tileFor(racer) {
    let tile = tiles.get(racer);
    if (!tile) {
      const info = state.racerInfo(racer) ?? state.progress.get(racer) ?? { racer, name: racer };
      const element = h("article", { class: "tile", dataset: { racer } });
      tile = { element, name: info.name, bot: info.bot, board: h("div", { class: "board small" }),
        caption: h("p", { class: "caption" }), stale: true };
      element.append(h("h3", {}, racerName({ ...info, racer }, null)), tile.board, tile.caption);
      tiles.set(racer, tile);
      parts.boards.append(element);
      observer.observe(element);
    }
    return tile;
  }

  function drawTile(racer) {
    const tile = tileFor(racer);
    const board = state.boards.get(racer);
    const entry = state.progress.get(racer);
    const hidden = board && entry ? Math.max(0, entry.cards_played - board.shown) : 0;
    fill(tile.board, drawBoard(board?.piles ?? [], { size: state.gridSize, fogged: hidden > 0 }));
    tile.board.dataset.shown = String(board?.shown ?? 0);
    fill(tile.caption, entry ? standingWords(entry) : "",
      hidden > 0 ? h("span", { class: "hidden" }, ` · ${plural(hidden, "card")} in the fog`) : "");
    tile.stale = false;
  }

  let scheduled = false;
  function schedule() {
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(render);
    }
  }

  function render() {
    scheduled = false;
    const dirty = state.takeDirty();
    const snapshot = state.snapshot;
    if (!snapshot) return;
    for (const racer of snapshot.racers.map((r) => r.racer)) tileFor(racer);
    const changed = new Set([...dirty.boards, ...dirty.progress]);
    for (const racer of changed) {
      if (visible.has(racer)) drawTile(racer);
      else tileFor(racer).stale = true;
    }
    if (dirty.progress.size || dirty.snapshot) {
      fill(parts.leaderboard, h("h2", {}, "Leaderboard"),
        leaderboard(state.entries(), { piles: state.gridSize ** 2, away: state.away(), now: serverClock.now() }));
    }
    if (dirty.snapshot) renderPhase();
    trace.drawn(dirty.progress, state.progress);
  }

  function renderPhase() {
    const snapshot = state.snapshot;
    const racing = snapshot.state === "running" && !state.finished;
    fill(parts.phase, state.finished ? "Finished" : {
      lobby: "Waiting for racers", countdown: "Starting soon", running: "Racing", finished: "Finished",
    }[snapshot.state], ` · ${plural(snapshot.racers.length, "racer")}`,
    snapshot.options.fog ? "" : " · no fog");
    fill(parts.fog, racing && state.fogLine !== null
      ? `Fog: each board shows its first ${plural(state.fogLine, "card")} at most, as far as every `
        + "racer still racing has drawn; face-down cards are shown as backs, and spots that may "
        + "hold a card still hidden as fog."
      : "");
    parts.fog.dataset.fogLine = state.fogLine === null ? "" : String(state.fogLine);
    if (state.finished && !parts.result.dataset.shown) {
      parts.result.dataset.shown = "1";
      fill(parts.result, h("h2", {}, "Result"), standingsTable(state.finished),
        verification(state.finished, state.published),
        state.published ? null : h("p", { class: "note" },
          "This page joined after the start, so it checked the seed against the commitment sent with the result."),
        seedLines(state.finished), h("p", { class: "par", id: "par" }, parWords(state.par)));
    } else if (state.finished) {
      const par = parts.result.querySelector("#par");
      if (par) par.textContent = parWords(state.par);
    }
  }

  every(250, () => { parts.clock.textContent = state.clockText(serverClock.now()); });

  const connection = new Connection({
    name: spectatorName(),
    role: "spectator",
    store: new TokenStore(`watch.${code}`),
    onStatus: linkStatus(parts.status),
    onMessage(message) {
      if (message.type === "welcome") {
        connection.send({ type: "spectate", race: code }); // on a resume too: harmless
      } else if (message.type === "error" && message.in_reply_to === "spectate") {
        fill(parts.phase, message.code === "race_not_found"
          ? `No race has the code ${code}.` : message.message);
      } else if (state.apply(message)) {
        schedule();
      }
    },
  }).start();
  return { state, connection };
}
