// The daily deal (/daily): today's board, sealed (each line's outcome, score and time, and
// this session's own line), a button that races today's deal in the page and ends on the
// room's sealed result, and yesterday's board once revealed, with its seed, its par, and
// every line replayed on the seed here (docs/protocol.md, "The daily deal").
//
// The page races as a guest (it claims no name), so its own result is `you` on the board,
// unplaced; the session is kept across reloads, and with it the day's one try.

import { every, fill, h, seconds } from "../dom.js";
import { standingWords } from "../leaderboard.js";
import { RaceView } from "../race_view.js";
import { parWords, seedLines, standingsTable, verification } from "../results.js";
import { Connection, TokenStore } from "../wire.js";
import { askName, linkStatus, savedName } from "./common.js";

/** The line the page shows for `daily_done` (the server's own sentence is shorter). */
const DAILY_DONE = "You have raced today's deal already: one try a day. "
  + "Its board is below, and tomorrow brings another deal.";

/** Where the page keeps a day's commitment as it saw it before the reveal, so that the
 * revealed seed is checked against the commitment published then, not the one it brings. */
const seenCommitment = (day) => `foursquare.daily.${day}`;

const DAY_MS = 24 * 60 * 60 * 1000;

/** How often a revealed day without its par yet is asked for again. */
const PAR_POLL_MS = 5000;

/** The UTC day before `day` ("YYYY-MM-DD"). */
const dayBefore = (day) => new Date(Date.parse(`${day}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);

export function dailyPage(root) {
  const name = savedName();
  if (!name) {
    askName(root, "", () => dailyPage(root));
    return null;
  }
  return new DailyPage(root, name);
}

class DailyPage {
  constructor(root, name) {
    this.root = root;
    this.parts = {
      title: h("h1", {}, "The daily deal"),
      phase: h("p", { class: "phase", id: "phase" }),
      clock: h("p", { class: "clock", id: "clock" }),
      status: h("p", { class: "link-status", role: "status" }),
      body: h("div", { id: "screen" }),
    };
    this.today = null; // today's `daily`
    this.yesterday = h("p", { class: "note" }, "Asking…"); // yesterday's board, drawn and checked once
    this.sealed = null; // our room's `daily_result`
    this.view = null; // the RaceView of our room while it races
    this.you = null; // our racer id in our room
    this.problem = "";
    const p = this.parts;
    fill(root, h("div", { class: "daily" },
      h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"), p.title, p.phase, p.clock, p.status),
      p.body));
    document.addEventListener("keydown", (event) => this.view?.key(event));
    every(250, () => this.view?.tick());
    this.connection = new Connection({
      name,
      store: new TokenStore("daily"),
      onStatus: linkStatus(p.status),
      onMessage: (message) => this.receive(message),
    }).start();
    this.render();
  }

  send(message) {
    return this.connection.send(message);
  }

  receive(message) {
    switch (message.type) {
      case "welcome":
        this.send({ type: "get_daily" });
        return;
      case "daily":
        this.boardCame(message);
        return;
      case "error":
        this.refused(message);
        return;
      case "daily_result":
        if (message.race !== this.view?.race) return;
        this.sealed = message;
        this.you = this.view.you;
        this.view.hide();
        this.view = null;
        this.send({ type: "get_daily" }); // our line is on the board now
        this.render();
        return;
      case "race":
        // Our room: the answer to `daily_race`, or sent again by itself after a resume.
        if (message.you && !this.view && message.state !== "finished") {
          this.seated(message);
          return;
        }
        break;
      default:
        break;
    }
    this.view?.receive(message);
  }

  boardCame(board) {
    if (!this.today || board.day >= this.today.day) {
      const newDay = this.today?.day !== board.day;
      this.today = board;
      if (!board.revealed) localStorage.setItem(seenCommitment(board.day), board.commitment);
      if (newDay) this.send({ type: "get_daily", day: dayBefore(board.day) });
    } else {
      this.yesterday = yesterdayBoard(board);
      // The par is searched for after the reveal: ask again until it has come.
      if (board.revealed && !board.par) setTimeout(() => this.send({ type: "get_daily", day: board.day }), PAR_POLL_MS);
    }
    if (!this.view) this.render();
  }

  refused(error) {
    if (error.code === "invalid_token") return; // the connection starts a new session itself
    if (error.code === "name_taken" || (error.in_reply_to === "hello" && error.code === "bad_message")) {
      askName(this.root, error.message, () => location.reload());
      this.connection.close();
    } else if (error.in_reply_to === "get_daily" && error.code === "day_not_found" && this.today) {
      this.yesterday = h("p", { class: "note" }, "There was no daily deal yesterday.");
      if (!this.view) this.render();
    } else if (this.view) {
      this.view.refused(error);
    } else {
      this.problem = error.code === "daily_done" ? DAILY_DONE : error.message;
      this.render();
    }
  }

  seated(snapshot) {
    this.problem = "";
    this.sealed = null;
    this.view = new RaceView({
      parts: this.parts,
      send: (message) => this.send(message),
      you: snapshot.you,
      invite: false,
      title: () => ["The daily deal · ", this.today?.day ?? ""],
    });
    this.view.receive(snapshot);
    this.view.render();
  }

  race() {
    this.problem = "";
    this.send({ type: "daily_race" });
  }

  /** The boards, the sealed result of our room when it has ended, and the race button. */
  render() {
    const p = this.parts;
    fill(p.title, "The daily deal");
    fill(p.phase, this.today ? `Today: ${this.today.day}` : "");
    p.clock.textContent = "";
    const today = this.today;
    fill(p.body, h("div", { class: "columns" },
      h("div", { class: "side" },
        this.sealed ? sealedResult(this.sealed, this.you) : null,
        h("section", { class: "panel", id: "today" }, h("h2", {}, "Today's board"),
          today ? [
            h("p", { class: "note" }, "Sealed until ", h("strong", {}, revealTime(today.reveal_at)),
              ": until then a line shows its outcome, score and time, never its moves."),
            boardTable(today),
            today.you ? h("p", { class: "verdict", id: "daily-you" }, "Your line: ", lineWords(today.you),
              today.you.place ? ` (place ${today.you.place})` : " (a guest's line is not ranked)") : null,
          ] : h("p", { class: "note" }, "Asking for today's board…"),
          h("div", { class: "row" },
            h("button", { id: "daily-race", onclick: () => this.race() }, "Race today's deal")),
          this.problem ? h("p", { class: "error", id: "daily-refusal", role: "alert" }, this.problem) : null)),
      h("div", { class: "side" },
        h("section", { class: "panel", id: "yesterday" }, h("h2", {}, "Yesterday's board"),
          this.yesterday))));
  }

}

/**
 * A day's page as the standings of a finished race (what `verifyFinished` checks and
 * `standingsTable` draws; `Daily.to_result()` makes the same record): each line's racer id
 * is its player's id, which is how the board orders ties. No seed before the reveal.
 */
const asRecord = (board) => ({ seed: board.seed, commitment: board.commitment, ruleset: board.ruleset,
  standings: board.entries.map((line) => ({ ...line, racer: line.player ?? line.name })) });

/** A day's lines (claimed players' only: a guest's is not ranked). */
function boardTable(board) {
  if (!board.entries.length) return h("p", { class: "note" }, "No claimed player's result yet.");
  return standingsTable(asRecord(board));
}

const lineWords = (line) => `${standingWords(line)}, ${line.cards_played} played, ${seconds(line.finish_ms)}`;

const revealTime = (ms) => `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;

/** Our room's end: its standings, without the seed or anyone's moves until the reveal. */
function sealedResult(result, you) {
  return h("section", { class: "panel results sealed", id: "daily-result" },
    h("h2", {}, "Your room's result"),
    standingsTable(result, you),
    h("p", { class: "note", id: "sealed-until" }, "Sealed: the seed and everyone's moves are revealed at ",
      h("strong", {}, revealTime(result.reveal_at)), ", and this page checks them then."));
}

/** Yesterday's board: sealed still, or revealed and checked here. */
function yesterdayBoard(board) {
  if (!board.revealed) {
    return [h("p", { class: "note" }, "Revealed at ", h("strong", {}, revealTime(board.reveal_at)), "."), boardTable(board)];
  }
  const record = asRecord(board);
  return [
    h("p", { class: "par", id: "daily-par" }, parWords(board.par)),
    seedLines(record),
    boardTable(board),
    h("div", { id: "daily-verify" }, verification(record, localStorage.getItem(seenCommitment(board.day)))),
  ];
}
