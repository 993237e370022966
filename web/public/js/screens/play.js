// Racing in the page: the waiting room, the race, and the results.
//
// The racer's own board is built from what the server says, never guessed: each `placed`
// puts its card and flips, a `board` (after a resume) replaces it whole, and the card in
// hand and its legal targets come in `card`. A placement is sent with its move number and
// the card is hidden until `placed` comes back, so a resend after a reconnect is safe and
// the screen never shows a move the server did not accept.

import { cardFace, cardWords, cursorKey, drawBoard } from "../board.js";
import { clock, every, fill, h, plural, REASON_WORDS, serverClock } from "../dom.js";
import { leaderboard, racerName } from "../leaderboard.js";
import { RaceState } from "../race_state.js";
import { parWords, seedLines, standingsTable, verification } from "../results.js";
import { Connection, TokenStore } from "../wire.js";
import { askName, linkStatus, savedName } from "./common.js";

const key = (row, col) => `${row},${col}`;

/**
 * Race: `plan` is `{ join: CODE }`, `{ quick: true }` or `{ create: RaceOptions }`. The
 * address becomes /race/ID once the race is known, so a reload (or a dropped link)
 * resumes the session and comes back to it.
 */
export function play(root, plan) {
  const name = savedName();
  if (!name) {
    askName(root, "", (chosen) => play(root, plan));
    return null;
  }
  return new Racer(root, plan, name);
}

class Racer {
  constructor(root, plan, name) {
    this.root = root;
    this.plan = plan;
    this.state = new RaceState();
    this.you = null;
    this.piles = new Map(); // "row,col" -> { row, col, up, cards }
    this.hand = null; // the `card` message being answered
    this.pending = null; // the move number sent and not yet answered
    this.mine = null; // my last `placed`: counts, status, score, reason
    this.cursor = null;
    this.problem = "";
    this.scheduled = false;
    this.parts = {
      title: h("h1", {}, "Foursquare Race"),
      phase: h("p", { class: "phase", id: "phase" }),
      clock: h("p", { class: "clock", id: "clock" }),
      status: h("p", { class: "link-status", role: "status" }),
      body: h("div", { id: "screen" }),
    };
    fill(root, h("div", { class: "play" },
      h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"),
        this.parts.title, this.parts.phase, this.parts.clock, this.parts.status),
      this.parts.body));
    document.addEventListener("keydown", (event) => this.key(event));
    every(250, () => this.tick());
    this.connection = new Connection({
      name,
      store: new TokenStore("play"),
      onStatus: linkStatus(this.parts.status),
      onMessage: (message) => this.receive(message),
    }).start();
  }

  send(message) {
    return this.connection.send(message);
  }

  /** The request that puts this session in its race. */
  request() {
    if (this.plan.join) return { type: "join_race", race: this.plan.join };
    if (this.plan.create) return { type: "create_race", options: this.plan.create };
    return { type: "quick_race" };
  }

  receive(message) {
    switch (message.type) {
      case "welcome":
        if (!message.resumed) {
          this.send(this.request());
        } else {
          // The server sends the race's state again when the session is in one; if it
          // says nothing (the race is over and forgotten), ask to join as if new.
          setTimeout(() => { if (!this.state.snapshot) this.send(this.request()); }, 1500);
        }
        return;
      case "error":
        this.refused(message);
        return;
      case "race":
        if (message.you) this.you = message.you;
        if (this.state.apply(message)) {
          if (location.pathname !== `/race/${message.race}`) history.replaceState(null, "", `/race/${message.race}`);
          if (this.plan.create && !this.plan.join) this.plan = { join: message.race };
        }
        break;
      case "card":
        if (message.race !== this.state.race) return;
        this.hand = message;
        this.pending = null;
        if (!this.cursor || !message.targets.some(([r, c]) => r === this.cursor[0] && c === this.cursor[1])) {
          this.cursor = message.targets[0] ?? null;
        }
        break;
      case "placed":
        if (message.race !== this.state.race) return;
        this.applyPlaced(message);
        break;
      case "board": {
        if (message.race !== this.state.race) return;
        const mine = message.boards.find((board) => board.racer === this.you);
        if (mine) {
          this.piles = new Map(mine.piles.map(([row, col, up, cards]) => [key(row, col), { row, col, up, cards: [...cards] }]));
        }
        this.state.apply(message);
        break;
      }
      default:
        if (!this.state.apply(message)) return;
    }
    this.schedule();
  }

  applyPlaced(placed) {
    const [row, col] = placed.position;
    const pile = this.piles.get(key(row, col)) ?? { row, col, up: true, cards: [] };
    if (!pile.cards.includes(placed.card)) pile.cards.push(placed.card); // an answer again: once
    pile.up = true;
    this.piles.set(key(row, col), pile);
    for (const [r, c, up] of placed.flips) {
      const flipped = this.piles.get(key(r, c));
      if (flipped) flipped.up = up;
    }
    this.mine = placed;
    if (this.hand?.move === placed.move) this.hand = null;
    this.pending = null;
  }

  refused(error) {
    if (error.in_reply_to === "place") {
      this.pending = null; // the same card stands; the server sends it again when it can
      this.problem = error.message;
    } else if (error.code === "name_taken" || (error.in_reply_to === "hello" && error.code === "bad_message")) {
      askName(this.root, error.message, () => location.reload());
      this.connection.close();
      return;
    } else if (["quick_race", "join_race", "create_race"].includes(error.in_reply_to)) {
      this.problem = error.message;
      fill(this.parts.body, h("p", { class: "error", id: "refusal" }, error.message),
        h("p", {}, h("a", { href: "/" }, "Back to the lobby")));
      this.connection.close({ forget: true });
      return;
    } else {
      this.problem = error.message;
    }
    this.schedule();
  }

  schedule() {
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => {
        this.scheduled = false;
        this.render();
      });
    }
  }

  render() {
    const snapshot = this.state.snapshot;
    this.state.takeDirty();
    if (!snapshot) {
      fill(this.parts.body, h("p", { class: "note" }, "Finding your race…"));
      return;
    }
    fill(this.parts.title, "Race ", h("code", {}, snapshot.code ?? snapshot.race));
    if (this.state.finished) this.renderResults();
    else if (snapshot.state === "running") this.renderRace();
    else this.renderWaiting();
    this.tick();
  }

  renderWaiting() {
    const snapshot = this.state.snapshot;
    const code = snapshot.code ?? snapshot.race;
    const me = snapshot.racers.find((racer) => racer.racer === this.you);
    const needed = Math.max(0, snapshot.options.min_racers - snapshot.racers.length);
    fill(this.parts.phase, snapshot.state === "countdown" ? "Starting soon" : "Waiting room");
    fill(this.parts.body, h("div", { class: "waiting columns" },
      h("section", { class: "panel" },
        h("h2", {}, `Racers (${snapshot.racers.length} of at most ${snapshot.options.max_racers})`),
        h("ul", { class: "racer-list", id: "racers" }, snapshot.racers.map((racer) => h("li", {},
          racerName(racer, this.you), racer.ready ? h("span", { class: "ready-mark" }, " ✓ ready") : ""))),
        h("p", { class: "note" }, needed > 0
          ? `The race starts once ${plural(needed, "more racer")} ${needed === 1 ? "has" : "have"} joined.`
          : snapshot.options.auto_start ? "The race is about to start." : "The race starts once everyone is ready."),
        h("div", { class: "row" },
          snapshot.options.auto_start ? null : h("button", {
            id: "ready", onclick: () => this.send({ type: "ready", race: snapshot.race, ready: !me?.ready }),
          }, me?.ready ? "Not ready" : "I'm ready"),
          snapshot.state === "lobby" ? h("button", { class: "secondary", id: "leave", onclick: () => this.leave() }, "Leave") : null)),
      h("section", { class: "panel" },
        h("h2", {}, "Invite others"),
        h("p", {}, "Code: ", h("code", { class: "big-code", id: "code" }, code)),
        h("p", { class: "note" }, "Share this address: ", h("code", {}, `${location.origin}/race/${code}`)),
        h("p", { class: "note" }, `Rules: ${snapshot.options.ruleset.grid_size}×${snapshot.options.ruleset.grid_size} grid, `
          + `piles of ${snapshot.options.ruleset.pile_capacity}, at most ${snapshot.options.ruleset.face_down_limit} face down; `
          + `time limit ${clock(snapshot.options.time_limit * 1000)}.`))));
  }

  leave() {
    this.send({ type: "leave_race", race: this.state.race });
    this.connection.close({ forget: true });
    location.assign("/");
  }

  renderRace() {
    const snapshot = this.state.snapshot;
    const rules = snapshot.options.ruleset;
    const hand = this.pending === null ? this.hand : null;
    fill(this.parts.phase, "Racing");
    const board = h("div", { class: "board", id: "my-board" }, drawBoard([...this.piles.values()]
      .sort((a, b) => a.row - b.row || a.col - b.col)
      .map((pile) => [pile.row, pile.col, pile.up, pile.cards]), {
      size: rules.grid_size,
      targets: hand ? hand.targets : [],
      cursor: hand ? this.cursor : null,
      onPick: (position) => this.place(position),
    }));
    // Over when a placement ended it, or (a resignation, a time-out) my progress says so.
    const status = this.state.progress.get(this.you)?.status;
    let end = null;
    if (this.mine && this.mine.status !== "racing") end = this.mine;
    else if (status === "resigned" || status === "timed_out") end = { status };
    const over = end !== null;
    const faceDown = this.mine?.face_down ?? 0;
    fill(this.parts.body, h("div", { class: "race-layout" },
      h("div", {}, board,
        h("p", { class: "keys" }, "Click a green spot, or move with the arrow keys (Tab: next spot) and place with Enter or Space.")),
      h("div", { class: "side" },
        h("section", { class: "panel hand" },
          h("div", { class: "in-hand", id: "in-hand" }, hand ? cardFace(hand.card) : null),
          h("dl", { class: "facts" },
            h("dt", {}, "card to place"), h("dd", { id: "card-words" }, hand ? cardWords(hand.card) : over ? "—" : "…"),
            h("dt", {}, "stock left"), h("dd", { id: "stock" }, hand ? hand.stock_left : this.mine?.stock_left ?? "—"),
            h("dt", {}, "cards played"), h("dd", { id: "played" }, this.mine?.move ?? 0),
            h("dt", {}, "face down"), h("dd", {}, faceDownMeter(faceDown, rules.face_down_limit)))),
        over ? h("p", { class: "verdict", id: "my-end" }, myEnd(end), " Waiting for the others to finish…") : null,
        this.problem ? h("p", { class: "error" }, this.problem) : null,
        h("section", { class: "panel", id: "leaderboard" }, h("h2", {}, "Racers"),
          leaderboard(this.state.entries(), { piles: rules.grid_size ** 2, you: this.you,
            away: this.state.away(), now: serverClock.now() })),
        over ? null : h("button", { class: "secondary", id: "resign", onclick: () => this.resign() }, "Resign"))));
  }

  renderResults() {
    const finished = this.state.finished;
    fill(this.parts.phase, "Finished");
    const mine = finished.standings.find((line) => line.racer === this.you);
    fill(this.parts.body, h("div", { class: "results columns" },
      h("section", { class: "result" }, h("h2", {}, "Results"),
        standingsTable(finished, this.you),
        verification(finished, this.state.published),
        h("p", { class: "par", id: "par" }, parWords(this.state.par)),
        seedLines(finished),
        mine ? h("p", { class: "note" }, "Your moves: ", h("code", {}, mine.moves.map(([r, c]) => `r${r}c${c}`).join(" "))) : null,
        h("div", { class: "row" },
          h("button", { id: "again", onclick: () => { this.connection.close({ forget: true }); location.assign("/?quick=1"); } }, "Race again"),
          h("a", { href: "/" }, "Back to the lobby"))),
      h("div", { class: "board", id: "my-board" }, drawBoard([...this.piles.values()].map((pile) => [pile.row, pile.col, pile.up, pile.cards]),
        { size: finished.ruleset.grid_size }))));
    this.connection.store?.clear(); // nothing left to resume
  }

  place(position) {
    const hand = this.hand;
    if (!hand || this.pending !== null) return;
    if (!hand.targets.some(([r, c]) => r === position[0] && c === position[1])) return;
    this.problem = "";
    this.cursor = position;
    if (this.send({ type: "place", race: hand.race, move: hand.move, row: position[0], col: position[1] }) !== null) {
      this.pending = hand.move;
      this.schedule();
    }
  }

  resign() {
    if (confirm("Resign from this race? Your game ends here.")) this.send({ type: "resign", race: this.state.race });
  }

  key(event) {
    const hand = this.pending === null ? this.hand : null;
    if (!hand || this.state.snapshot?.state !== "running" || event.target.closest?.("input")) return;
    const action = cursorKey(event, this.cursor, hand.targets, this.state.gridSize);
    if (!action) return;
    event.preventDefault();
    if (action.place) this.place(action.place);
    else this.cursor = action.cursor;
    this.schedule();
  }

  tick() {
    this.parts.clock.textContent = this.state.clockText(serverClock.now());
  }
}

/** The face-down meter: one box per face-down top allowed, and one more that loses. */
function faceDownMeter(count, limit) {
  const boxes = [];
  for (let i = 1; i <= limit + 1; i++) {
    boxes.push(h("span", { class: `${i <= count ? "on" : ""} ${i === limit + 1 ? "over" : ""}`,
      title: i === limit + 1 ? "one more than the limit loses" : "" }));
  }
  return h("span", { class: "meter-down", id: "face-down", title: `${count} face down of at most ${limit}`,
    dataset: { count: String(count) } }, boxes);
}

/** How my game ended, in a sentence. */
function myEnd(placed) {
  if (placed.status === "won") return `You won with ${plural(placed.score ?? 0, "card")} left in the stock!`;
  if (placed.status === "lost") return `Your game is over: ${REASON_WORDS[placed.reason] ?? "lost"}.`;
  return `Your game is over (${placed.status}).`;
}
