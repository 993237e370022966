// A finished race watched again, move by move, from its `finished` message alone: the
// page deals the revealed seed again and plays every racer's moves with its own engine
// (engine.js), as the terminal client does (client/replay.py), so the server is asked for
// nothing more. Nothing is hidden in a replay: the race is over and its seed revealed.
//
// The timeline holds every racer's moves in the order they were made (`move_ms`; racers
// in standings order within a millisecond). A result without times (from a server that
// did not keep them) plays the racers' moves in turn, UNTIMED_STEP_MS apart. Step n shows
// the race after the first n moves of the timeline.

import { dealIds, Game } from "./engine.js";

/** Race time between two moves of a result that does not say when moves were made. */
export const UNTIMED_STEP_MS = 500;

/** How fast a replay may go (race seconds per second); it starts at 1. */
export const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16, 32];

export class Replay {
  /** The replay of `finished` (a `finished` message); rejects naming a move that is
   * illegal on the deal of its seed. */
  static async of(finished) {
    const stock = await dealIds(finished.seed);
    const boards = new Map(); // racer -> piles after 0, 1, 2, ... of its moves
    const counts = new Map(); // racer -> [face up, face down] after each
    for (const line of finished.standings) {
      const game = new Game(stock, finished.ruleset);
      const piles = [game.pileViews()];
      const tops = [[0, 0]];
      line.moves.forEach((move, index) => {
        try {
          game.play(move);
        } catch (error) {
          throw new Error(`${line.name}'s move ${index + 1} (${move[0]}, ${move[1]}) is illegal: ${error.message}`);
        }
        piles.push(game.pileViews());
        tops.push([game.faceUp, game.faceDown]);
      });
      boards.set(line.racer, piles);
      counts.set(line.racer, tops);
    }
    return new Replay(finished, boards, counts);
  }

  constructor(finished, boards, counts) {
    this.finished = finished;
    this.boards = boards;
    this.counts = counts;
    const lines = finished.standings;
    this.timed = lines.length > 0 && lines.every((line) => Array.isArray(line.move_ms));
    this.moves = this.timed ? timedMoves(lines) : movesInTurn(lines);
  }

  /** How many moves the timeline holds (the last step). */
  get length() { return this.moves.length; }

  /** Race time of the last move (ms). */
  get duration() { return this.timeOf(this.length); }

  /** Race time of step `step`: that of its last move (0 at the start). */
  timeOf(step) { return step > 0 ? this.moves[step - 1].at : 0; }

  /** The step showing the race at race time `ms`: every move made by then. */
  stepAt(ms) {
    let low = 0;
    let high = this.moves.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.moves[middle].at <= ms) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * The race after `step` moves: { step, at, last, racers }, where `racers` holds, for
   * every racer in standings order, its board (`piles`, the wire's PileView form) and its
   * line (`entry`, a progress entry: racing until its game has ended by then).
   */
  frame(step) {
    step = Math.max(0, Math.min(step, this.length));
    const played = new Map(this.finished.standings.map((line) => [line.racer, 0]));
    for (const move of this.moves.slice(0, step)) played.set(move.racer, move.number);
    const at = this.timeOf(step);
    const final = step === this.length;
    const racers = this.finished.standings.map((line) => {
      const count = played.get(line.racer);
      const [faceUp, faceDown] = this.counts.get(line.racer)[count];
      const over = final || (count === line.moves.length && (line.status === "won"
        || line.status === "lost"
        || (line.status === "resigned" && this.timed && line.finish_ms !== null && at >= line.finish_ms)));
      const entry = over
        ? { ...line, cards_played: count, face_up: faceUp, face_down: faceDown }
        : { racer: line.racer, name: line.name, bot: line.bot, status: "racing",
          cards_played: count, face_up: faceUp, face_down: faceDown, score: null, finish_ms: null };
      return { racer: line.racer, piles: this.boards.get(line.racer)[count], entry };
    });
    return { step, at, last: step > 0 ? this.moves[step - 1] : null, racers };
  }
}

function timedMoves(lines) {
  const moves = [];
  lines.forEach((line, place) => line.move_ms.forEach((at, index) => {
    moves.push({ at, place, racer: line.racer, number: index + 1, position: line.moves[index] });
  }));
  return moves.sort((a, b) => a.at - b.at || a.place - b.place || a.number - b.number);
}

function movesInTurn(lines) {
  const moves = [];
  const longest = Math.max(0, ...lines.map((line) => line.moves.length));
  for (let number = 1; number <= longest; number++) {
    lines.forEach((line, place) => {
      if (number <= line.moves.length) {
        moves.push({ at: (moves.length + 1) * UNTIMED_STEP_MS, place, racer: line.racer, number,
          position: line.moves[number - 1] });
      }
    });
  }
  return moves;
}
