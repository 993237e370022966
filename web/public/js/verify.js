// The check anyone can run on a finished race, done in the page: the Python side's
// protocol/result.py (`verify_result`, `rank_racers`), on the `finished` message.

import { commitment, dealIds, Game } from "./engine.js";

// Among racers who did not win, with the same board: played out, then timed out, then given up.
const NOT_WON_ORDER = { lost: 0, timed_out: 1, resigned: 2 };

/** The standings rule as a sort key (smaller ranks higher); equal keys are tied. */
export function standingKey(entry) {
  const finish = entry.finish_ms ?? Infinity;
  if (entry.status === "won") return [0, -(entry.score ?? 0), 0, 0, finish];
  return [1, -entry.face_up, -entry.cards_played, NOT_WON_ORDER[entry.status] ?? 3, finish];
}

function compareKeys(a, b) {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

/** Whether two standings lines are tied by the rule (same key). */
export const tied = (a, b) => compareKeys(standingKey(a), standingKey(b)) === 0;

/** Entries (standings lines or progress entries) in standings order; ties by racer id. */
export function rankRacers(entries) {
  return [...entries].sort((a, b) => compareKeys(standingKey(a), standingKey(b))
    || (a.racer < b.racer ? -1 : a.racer > b.racer ? 1 : 0));
}

const EXPECTED_STATUS = { won: "won", lost: "lost", resigned: "playing", timed_out: "playing" };

/**
 * Re-deal the revealed seed, replay every racer's moves and check every claim of a
 * `finished` message. `published` is the commitment this page saw before the start (a
 * result that brings its own commitment proves nothing). Returns `{ ok, problems }`,
 * each problem a sentence.
 */
export async function verifyFinished(finished, published, options = {}) {
  const problems = [];
  const revealed = await commitment(finished.seed, options);
  if (published && published !== finished.commitment) {
    problems.push("the commitment in the result is not the one published before the start");
  }
  if (revealed !== (published ?? finished.commitment)) {
    problems.push("the revealed seed does not match the published commitment");
  }
  const stock = await dealIds(finished.seed, options);
  for (const entry of finished.standings) {
    problems.push(...checkRacer(stock, finished.ruleset, entry));
  }
  const ranked = rankRacers(finished.standings).map((entry) => entry.racer);
  if (ranked.join("\n") !== finished.standings.map((entry) => entry.racer).join("\n")) {
    problems.push("the standings are not in the order the standings rule gives");
  }
  return { ok: problems.length === 0, problems };
}

function checkRacer(stock, ruleset, entry) {
  const who = `${entry.name} (${entry.racer})`;
  const game = new Game(stock, ruleset);
  for (const [index, move] of entry.moves.entries()) {
    try {
      game.play(move);
    } catch (error) {
      return [`${who}: move ${index + 1} (${move[0]}, ${move[1]}) is illegal: ${error.message}`];
    }
  }
  const problems = [];
  if (EXPECTED_STATUS[entry.status] !== game.status) {
    problems.push(`${who}: claimed ${entry.status} but the moves leave the game ${game.status}`);
  }
  const claimed = [entry.score ?? null, entry.cards_played, entry.face_up, entry.face_down];
  const replayed = [game.score, game.cardsPlayed, game.faceUp, game.faceDown];
  if (claimed.join() !== replayed.join()) {
    problems.push(`${who}: claimed (score, played, face up, face down) = (${claimed.join(", ")}), `
      + `the replay gives (${replayed.join(", ")})`);
  }
  return problems;
}
