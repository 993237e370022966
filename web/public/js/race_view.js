// One race raced in the page: its waiting room (or countdown), the race, and the results.
// The private-race screen (screens/play.js) and a tournament entrant's screen
// (screens/entrant.js) both race through it; each owns the connection and hands it the
// race's messages.
//
// The racer's own board is built from what the server says, never guessed: each `placed`
// puts its card and flips, a `board` (after a resume) replaces it whole, and the card in
// hand and its legal targets come in `card`. A placement is sent with its move number and
// the card is hidden until `placed` comes back, so a resend after a reconnect is safe and
// the screen never shows a move the server did not accept.

import { cardFace, cardWords, cursorKey, drawBoard } from "./board.js";
import { clock, fill, h, plural, REASON_WORDS, serverClock } from "./dom.js";
import { leaderboard, racerName } from "./leaderboard.js";
import { RaceState } from "./race_state.js";
import { parWords, seedLines, standingsTable, verification } from "./results.js";

const key = (row, col) => `${row},${col}`;

/** The messages about one race that a RaceView takes. */
const RACE_MESSAGES = new Set(["race", "card", "placed", "board", "progress", "finished", "race_par"]);

export class RaceView {
  /**
   * `parts` are the elements it draws into: `title`, `phase`, `clock` and `body`.
   * `send(message)` sends one message (returns null when offline). `you` is this racer's
   * id when known before the race's snapshot says it. `invite` shows the waiting room's
   * code to share (a private race's; a tournament seats its racers itself). `onLeave()`
   * leaves from the waiting room (null: no button). `resultsActions()` gives the buttons
   * under the results, and `onFinished()` hears that the race is over. `title(snapshot)`
   * gives the heading (by default "Race CODE").
   */
  constructor({ parts, send, you = null, invite = true, onLeave = null, resultsActions = () => [],
    onFinished = () => {}, title = (snapshot) => ["Race ", h("code", {}, snapshot.code ?? snapshot.race)] }) {
    this.title = title;
    this.parts = parts;
    this.send = send;
    this.you = you;
    this.invite = invite;
    this.onLeave = onLeave;
    this.resultsActions = resultsActions;
    this.onFinished = onFinished;
    this.state = new RaceState();
    this.piles = new Map(); // "row,col" -> { row, col, up, cards }
    this.hand = null; // the `card` message being answered
    this.pending = null; // the move number sent and not yet answered
    this.mine = null; // my last `placed`: counts, status, score, reason
    this.cursor = null;
    this.problem = "";
    this.scheduled = false;
    this.shown = true; // false while the screen shows something else
  }

  /** This race's id, once its snapshot has come. */
  get race() {
    return this.state.race;
  }

  /** Take one message about this race; returns true when it was (and redraws). */
  receive(message) {
    if (!RACE_MESSAGES.has(message.type)) return false;
    if (!this.state.about(message)) return false;
    switch (message.type) {
      case "race":
        if (!this.state.apply(message)) return false;
        if (message.you) this.you = message.you;
        break;
      case "card":
        this.hand = message;
        this.pending = null;
        if (!this.cursor || !message.targets.some(([r, c]) => r === this.cursor[0] && c === this.cursor[1])) {
          this.cursor = message.targets[0] ?? null;
        }
        break;
      case "placed":
        this.applyPlaced(message);
        break;
      case "board": {
        const mine = message.boards.find((board) => board.racer === this.you);
        if (mine) {
          this.piles = new Map(mine.piles.map(([row, col, up, cards]) => [key(row, col), { row, col, up, cards: [...cards] }]));
        }
        this.state.apply(message);
        break;
      }
      default:
        if (!this.state.apply(message)) return false;
    }
    this.schedule();
    return true;
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

  /** A refusal about this race (a placement, a ready, a resignation): said on screen. */
  refused(error) {
    if (error.in_reply_to === "place") this.pending = null; // the same card stands; it comes again
    this.problem = error.message;
    this.schedule();
  }

  schedule() {
    if (!this.scheduled && this.shown) {
      this.scheduled = true;
      requestAnimationFrame(() => {
        this.scheduled = false;
        if (this.shown) this.render();
      });
    }
  }

  /** Draw the race as it stands into `parts` (and show it from now on). */
  render() {
    this.shown = true;
    const snapshot = this.state.snapshot;
    this.state.takeDirty();
    if (!snapshot) {
      fill(this.parts.body, h("p", { class: "note" }, "Finding your race…"));
      return;
    }
    fill(this.parts.title, this.title(snapshot));
    if (this.state.finished) this.renderResults();
    else if (snapshot.state === "running") this.renderRace();
    else this.renderWaiting();
    this.tick();
  }

  /** Stop drawing (the screen shows something else until the next render()). */
  hide() {
    this.shown = false;
    this.parts.clock.textContent = "";
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
        h("p", { class: "note" }, snapshot.state === "countdown" ? "Everyone is seated: the race is about to start."
          : needed > 0 ? `The race starts once ${plural(needed, "more racer")} ${needed === 1 ? "has" : "have"} joined.`
            : snapshot.options.auto_start ? "The race is about to start." : "The race starts once everyone is ready."),
        h("div", { class: "row" },
          snapshot.options.auto_start ? null : h("button", {
            id: "ready", onclick: () => this.send({ type: "ready", race: snapshot.race, ready: !me?.ready }),
          }, me?.ready ? "Not ready" : "I'm ready"),
          snapshot.state === "lobby" && this.onLeave
            ? h("button", { class: "secondary", id: "leave", onclick: () => this.onLeave() }, "Leave") : null)),
      this.invite ? h("section", { class: "panel" },
        h("h2", {}, "Invite others"),
        h("p", {}, "Code: ", h("code", { class: "big-code", id: "code" }, code)),
        h("p", { class: "note" }, "Share this address: ", h("code", {}, `${location.origin}/race/${code}`)),
        rulesLine(snapshot.options)) : h("section", { class: "panel" }, h("h2", {}, "This race"), rulesLine(snapshot.options))));
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
        h("div", { class: "row" }, this.resultsActions())),
      h("div", { class: "board", id: "my-board" }, drawBoard([...this.piles.values()].map((pile) => [pile.row, pile.col, pile.up, pile.cards]),
        { size: finished.ruleset.grid_size }))));
    this.onFinished();
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

  /** A key pressed anywhere in the page: moves the cursor or places, while racing. */
  key(event) {
    const hand = this.pending === null ? this.hand : null;
    if (!this.shown || !hand || this.state.snapshot?.state !== "running" || event.target.closest?.("input")) return;
    const action = cursorKey(event, this.cursor, hand.targets, this.state.gridSize);
    if (!action) return;
    event.preventDefault();
    if (action.place) this.place(action.place);
    else this.cursor = action.cursor;
    this.schedule();
  }

  /** Redraw the race clock (the screen calls it a few times a second). */
  tick() {
    if (this.shown) this.parts.clock.textContent = this.state.clockText(serverClock.now());
  }
}

/** The race's rules and time limit, in a line. */
function rulesLine(options) {
  const rules = options.ruleset;
  return h("p", { class: "note" }, `Rules: ${rules.grid_size}×${rules.grid_size} grid, `
    + `piles of ${rules.pile_capacity}, at most ${rules.face_down_limit} face down; `
    + `time limit ${clock(options.time_limit * 1000)}.`);
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
