// Watching a race (/watch/CODE): every board drawn as cards, the live leaderboard, the race
// clock and the fog as it is; when the race ends, the result checked in the page, and its
// replay (replay.js), move by move: at once for a race that was over before the page came
// (the server answers a race it no longer keeps with its result alone), on a click for a
// race watched to its end.
//
// Boards are drawn only when on screen: a 1,000-racer race changes a hundred boards at a
// time, ten times a second, and redrawing the ones nobody can see would make the tab fall
// behind. A board off screen is marked stale and drawn when it scrolls into view.

import { drawBoard } from "../board.js";
import { every, fill, h, plural, serverClock } from "../dom.js";
import { leaderboard, racerName, standingWords } from "../leaderboard.js";
import { RaceState } from "../race_state.js";
import { Replay, SPEEDS } from "../replay.js";
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
    replay: h("section", { class: "replay", id: "replay" }),
  };
  fill(root, h("div", { class: "watch" },
    h("header", { class: "top" }, parts.title, parts.phase, parts.clock, parts.status),
    parts.replay,
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
    if (!snapshot && state.finished) renderPhase(); // a race over, answered with its result
    if (!snapshot) return;
    if (replay.view) {
      if (dirty.snapshot) renderPhase();
      return; // the boards and the leaderboard are the replay's now
    }
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
    const racing = snapshot?.state === "running" && !state.finished;
    const racers = snapshot?.racers.length ?? state.finished.standings.length;
    fill(parts.phase, state.finished ? "Finished" : {
      lobby: "Waiting for racers", countdown: "Starting soon", running: "Racing", finished: "Finished",
    }[snapshot.state], ` · ${plural(racers, "racer")}`,
    !snapshot || snapshot.options.fog ? "" : " · no fog");
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
        seedLines(state.finished),
        // A race answered with its result alone is over and forgotten: no par will come.
        state.snapshot ? h("p", { class: "par", id: "par" }, parWords(state.par)) : null);
      // A race over before this page came is replayed at once; one watched to its end, on
      // a click (its last boards stay on screen until then).
      replay.offer(state.finished, state.published === null);
    } else if (state.finished) {
      const par = parts.result.querySelector("#par");
      if (par) par.textContent = parWords(state.par);
    }
  }

  const replay = replayView(parts, state);

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

/**
 * The replay of a finished race on the watch page: controls (start, back, play or pause,
 * step, end, speed, a slider) and the keys Space, ← and →, + and -. `offer(finished,
 * now)` opens it at once when `now`, else puts a button up to open it. While open, it
 * draws the boards into `parts.boards` and the leaderboard as the race stood.
 */
function replayView(parts, state) {
  const view = { view: null, offer };
  let replay = null;
  let step = 0;
  let position = 0; // race time the replay's clock stands at (ms)
  let speed = SPEEDS.indexOf(1);
  let playing = null; // the timer while playing
  let ticked = 0;
  const controls = {
    start: h("button", { type: "button", title: "start", onclick: () => show(0, true) }, "|◀ start"),
    back: h("button", { type: "button", title: "one move back (←)", onclick: () => stepBy(-1) }, "◀ back"),
    play: h("button", { type: "button", class: "play", title: "play or pause (space)", onclick: () => toggle() }, "▶ play"),
    step: h("button", { type: "button", title: "one move on (→)", onclick: () => stepBy(1) }, "step ▶"),
    end: h("button", { type: "button", title: "end", onclick: () => { pause(); show(replay.length, true); } }, "end ▶|"),
    speed: h("select", { title: "speed (+ and -)", onchange: (event) => { speed = Number(event.target.value); where(); } },
      SPEEDS.map((value, index) => h("option", { value: String(index), selected: index === speed }, `x${value}`))),
    slider: h("input", { type: "range", min: "0", value: "0", "aria-label": "move",
      oninput: (event) => { pause(); show(Number(event.target.value), true); } }),
    where: h("p", { class: "where", id: "replay-where", role: "status" }),
  };

  function offer(finished, now) {
    const open = () => Replay.of(finished).then(start, (error) => {
      fill(parts.replay, h("p", { class: "note" }, `This race cannot be replayed: ${error.message}`));
    });
    if (now) open();
    else fill(parts.replay, h("button", { type: "button", class: "open-replay", onclick: open }, "▶ Replay this race"));
  }

  function start(made) {
    replay = made;
    view.view = replay;
    controls.slider.max = String(replay.length);
    fill(parts.replay, h("h2", {}, "Replay"),
      h("div", { class: "controls" }, controls.start, controls.back, controls.play, controls.step,
        controls.end, controls.speed, controls.slider),
      controls.where,
      h("p", { class: "note" }, "Nothing is hidden in a replay: the race is over and its seed revealed, "
        + "so every board shows every move as it was made (face-down cards as backs, as the racer saw them).",
      replay.timed ? "" : " This result does not say when moves were made: the racers' moves are played in turn."));
    document.addEventListener("keydown", onKey);
    parts.boards.replaceChildren();
    show(0, true);
    play();
  }

  function onKey(event) {
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
    const action = { " ": toggle, ArrowLeft: () => stepBy(-1), ArrowRight: () => stepBy(1),
      "+": () => faster(1), "-": () => faster(-1) }[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  function faster(by) {
    speed = Math.max(0, Math.min(SPEEDS.length - 1, speed + by));
    controls.speed.value = String(speed);
    where();
  }

  function toggle() { if (playing) pause(); else play(); }

  function play() {
    if (step >= replay.length) show(0, true);
    ticked = performance.now();
    playing ??= setInterval(tick, 50);
    where();
  }

  function pause() {
    clearInterval(playing);
    playing = null;
    where();
  }

  function tick() {
    const now = performance.now();
    position += (now - ticked) * SPEEDS[speed];
    ticked = now;
    const due = replay.stepAt(position);
    if (due !== step) show(due, false);
    if (due >= replay.length) pause();
    else where();
  }

  function stepBy(by) {
    pause();
    show(step + by, true);
  }

  /** Draw the race after `to` moves (`moveClock`: the replay's clock goes there too). */
  function show(to, moveClock) {
    const frame = replay.frame(to);
    step = frame.step;
    if (moveClock) position = frame.at;
    controls.slider.value = String(step);
    const size = replay.finished.ruleset.grid_size;
    parts.boards.replaceChildren(...frame.racers.map(({ racer, piles, entry }) => {
      const board = h("div", { class: "board small", dataset: { shown: String(entry.cards_played) } },
        drawBoard(piles, { size }));
      if (frame.last?.racer === racer) {
        board.querySelector(`.spot[data-row="${frame.last.position[0]}"][data-col="${frame.last.position[1]}"]`)
          ?.classList.add("last");
      }
      return h("article", { class: "tile", dataset: { racer } }, h("h3", {}, racerName(entry, null)), board,
        h("p", { class: "caption" }, standingWords(entry)));
    }));
    fill(parts.leaderboard, h("h2", {}, "Leaderboard"),
      leaderboard(frame.racers.map(({ entry }) => entry), { piles: size ** 2 }));
    where();
  }

  function where() {
    if (!replay) return;
    controls.play.textContent = playing ? "pause" : "▶ play";
    controls.play.setAttribute("aria-pressed", playing ? "true" : "false");
    const at = playing ? Math.min(position, replay.duration) : replay.timeOf(step);
    controls.where.textContent = `${playing ? "playing" : "paused"} x${SPEEDS[speed]} · `
      + `move ${step} of ${replay.length} · ${raceClock(at)} of ${raceClock(replay.duration)}`;
  }

  return view;
}

/** Race time as minutes, seconds and tenths: 1:23.4. */
function raceClock(ms) {
  const tenths = Math.floor(ms / 100);
  return `${Math.floor(tenths / 600)}:${String(Math.floor((tenths % 600) / 10)).padStart(2, "0")}.${tenths % 10}`;
}
