// The rules of Foursquare and the deal, as the Python engine (engine/) has them: the page
// re-deals a revealed seed, replays every racer's moves, and plays solo games with it.
// docs/rules.md is the text; tests/web/ checks this file against the conformance data.

import { sha256 } from "./sha256.js";

export const SUITS = "CDHS";
export const RANKS = "A23456789T";
export const DECK_SIZE = 40;

/** The published game's rules (the wire's `Ruleset`). */
export const DEFAULT_RULES = Object.freeze({
  grid_size: 4, pile_capacity: 4, face_down_limit: 4, adjacency: "edge",
});

/** A card id's rank, 1 (Ace) to 10 (Ten). */
export const rankOf = (id) => (id % 10) + 1;
/** A card id's suit letter: C, D, H or S. */
export const suitOf = (id) => SUITS[Math.floor(id / 10)];
/** A card id as two letters, rank then suit: 29 is "TH". */
export const cardName = (id) => RANKS[id % 10] + suitOf(id);
/** The id of a card written as two letters ("TH" is 29). */
export function parseCard(text) {
  const rank = RANKS.indexOf(text[0].toUpperCase());
  const suit = SUITS.indexOf(text[1].toUpperCase());
  if (text.length !== 2 || rank < 0 || suit < 0) throw new Error(`not a card: ${text}`);
  return suit * 10 + rank;
}

const encoder = new TextEncoder();
const DEAL_DOMAIN = encoder.encode("foursquare/deal/v1/");
const COMMIT_DOMAIN = encoder.encode("foursquare/commit/v1/");

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * The stock dealt from `seed` by deal v1, as card ids, top of the stock first.
 * `options.here` forces the page's own SHA-256 (tests; see sha256.js).
 */
export async function dealIds(seed, options = {}) {
  const seedBytes = encoder.encode(seed);
  const slash = encoder.encode("/");
  let block = 0;
  let words = [];
  let next = 0;
  async function word() {
    if (next === words.length) {
      const index = new Uint8Array(8);
      new DataView(index.buffer).setBigUint64(0, BigInt(block++));
      const digest = await sha256(concat(DEAL_DOMAIN, seedBytes, slash, index), options);
      const view = new DataView(digest.buffer);
      words = Array.from({ length: 8 }, (_, i) => view.getUint32(i * 4));
      next = 0;
    }
    return words[next++];
  }
  async function below(n) {
    // Rejection sampling keeps every residue equally likely.
    const limit = Math.floor(2 ** 32 / n) * n;
    for (;;) {
      const w = await word();
      if (w < limit) return w % n;
    }
  }
  const ids = Array.from({ length: DECK_SIZE }, (_, i) => i);
  for (let i = DECK_SIZE - 1; i > 0; i--) {
    const j = await below(i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  return ids;
}

/** The public commitment to `seed`: hex SHA-256 of a domain tag and the seed. */
export async function commitment(seed, options = {}) {
  return hex(await sha256(concat(COMMIT_DOMAIN, encoder.encode(seed)), options));
}

/** Why a ruleset cannot be played, or null (the engine's `Ruleset` checks). */
export function rulesProblem(rules) {
  const { grid_size: size, pile_capacity: capacity, face_down_limit: limit } = rules;
  const within = (v, low, high) => Number.isInteger(v) && v >= low && v <= high;
  if (!within(size, 2, 6) || !within(capacity, 1, 10) || !within(limit, 0, 36)) {
    return "a number of the rules is out of range";
  }
  if (rules.adjacency !== "edge" && rules.adjacency !== "any") return "unknown adjacency";
  if (size * size > DECK_SIZE) return "the grid has more piles than the deck has cards";
  if (size * size * capacity < DECK_SIZE) return "the piles cannot hold the whole deck";
  return null;
}

/**
 * One game: the piles on a floating grid, the stock, and the rules that move them. The
 * same cell layout as the engine: rows and columns from -(n-1) to n-1 around the first
 * card, which is always at (0, 0).
 */
export class Game {
  /** A new game on `stock` (card ids, top first). */
  constructor(stock, rules = DEFAULT_RULES) {
    const problem = rulesProblem(rules);
    if (problem) throw new Error(`these rules cannot be played: ${problem}`);
    this.rules = { ...rules };
    this.stock = [...stock];
    const size = rules.grid_size;
    this.offset = size - 1;
    this.width = 2 * size - 1;
    const cells = this.width * this.width;
    this.top = new Array(cells).fill(-1);
    this.height = new Array(cells).fill(0);
    this.up = new Array(cells).fill(true);
    this.cards = Array.from({ length: cells }, () => []);
    this.moves = [];
    this.piles = 0;
    this.faceDown = 0;
    this.box = null; // [rowMin, rowMax, colMin, colMax] in cells, once a card is down
    this.status = this.stock.length ? "playing" : "lost";
    this.reason = this.stock.length ? null : "stock_empty";
  }

  /** A new game on the stock dealt from `seed`. */
  static async deal(seed, rules = DEFAULT_RULES, options = {}) {
    return new Game(await dealIds(seed, options), rules);
  }

  /** The card to place now (its id), or null once the game is over. */
  get card() {
    return this.status === "playing" ? this.stock[this.moves.length] : null;
  }

  /** Cards still in the stock, not counting the one in hand. */
  get stockLeft() {
    const left = this.stock.length - this.moves.length;
    return this.status === "playing" ? left - 1 : left;
  }

  get cardsPlayed() { return this.moves.length; }
  get faceUp() { return this.piles - this.faceDown; }
  /** Stock left when the game was won; null otherwise. */
  get score() { return this.status === "won" ? this.stockLeft : null; }

  cell([row, col]) {
    return (row + this.offset) * this.width + col + this.offset;
  }

  position(cell) {
    return [Math.floor(cell / this.width) - this.offset, (cell % this.width) - this.offset];
  }

  touching(cell) {
    const row = Math.floor(cell / this.width);
    const col = cell % this.width;
    const diagonals = this.rules.adjacency === "any";
    for (let dr = -1; dr <= 1; dr++) {
      for (let dc = -1; dc <= 1; dc++) {
        if ((dr === 0 && dc === 0) || (!diagonals && dr !== 0 && dc !== 0)) continue;
        const r = row + dr;
        const c = col + dc;
        if (r >= 0 && r < this.width && c >= 0 && c < this.width && this.height[r * this.width + c]) {
          return true;
        }
      }
    }
    return false;
  }

  /** Every position the card in hand may go to, sorted; empty once the game is over. */
  legalMoves() {
    if (this.status !== "playing") return [];
    if (!this.piles) return [[0, 0]];
    const span = this.rules.grid_size - 1;
    const [rowMin, rowMax, colMin, colMax] = this.box;
    const targets = [];
    for (let row = rowMax - span; row <= rowMin + span; row++) {
      for (let col = colMax - span; col <= colMin + span; col++) {
        const cell = row * this.width + col;
        const height = this.height[cell];
        if (height ? height < this.rules.pile_capacity : this.touching(cell)) {
          targets.push(this.position(cell));
        }
      }
    }
    return targets;
  }

  /** Why `[row, col]` is not a legal move now, in a sentence; null if it is legal. */
  whyIllegal([row, col]) {
    if (this.status !== "playing") return "the game is over";
    const size = this.rules.grid_size;
    if (!Number.isInteger(row) || !Number.isInteger(col)) return "a move is two integers";
    if (Math.abs(row) > this.offset || Math.abs(col) > this.offset) {
      return `(${row}, ${col}) is outside the ${size}x${size} grid`;
    }
    if (!this.piles) return row === 0 && col === 0 ? null : "the first card goes at (0, 0)";
    const cell = this.cell([row, col]);
    if (this.height[cell] >= this.rules.pile_capacity) {
      return `the pile at (${row}, ${col}) is full (${this.rules.pile_capacity} cards)`;
    }
    if (!this.height[cell] && !this.touching(cell)) {
      const kind = this.rules.adjacency === "edge" ? "next to" : "touching";
      return `(${row}, ${col}) is not ${kind} any pile`;
    }
    const [rowMin, rowMax, colMin, colMax] = this.box;
    const r = row + this.offset;
    const c = col + this.offset;
    if (Math.max(rowMax, r) - Math.min(rowMin, r) >= size
        || Math.max(colMax, c) - Math.min(colMin, c) >= size) {
      return `(${row}, ${col}) would stretch the grid beyond ${size}x${size}`;
    }
    return null;
  }

  /**
   * Place the card in hand at `[row, col]`. Returns what happened: the card, where it
   * went, and the flips as [row, col, faceUp] (row first, then column). Throws an Error
   * with the reason, leaving the game untouched, when the move is not legal.
   */
  play(position) {
    const reason = this.whyIllegal(position);
    if (reason) throw new Error(reason);
    const cell = this.cell(position);
    const card = this.stock[this.moves.length];
    this.lay(cell, card);
    const rank = rankOf(card);
    const row = Math.floor(cell / this.width);
    const col = cell % this.width;
    const [rowMin, rowMax, colMin, colMax] = this.box;
    const rowCells = [];
    for (let c = colMin; c <= colMax; c++) rowCells.push(row * this.width + c);
    const colCells = [];
    for (let r = rowMin; r <= rowMax; r++) colCells.push(r * this.width + col);
    const flips = [];
    for (const line of [rowCells, colCells]) {
      const others = line.filter((c) => c !== cell && this.height[c]);
      const ranks = others.filter((c) => this.up[c]).map((c) => rankOf(this.top[c]));
      // A tie is neither higher nor lower; a line with no face-up card always triggers.
      if (!ranks.length || rank > Math.max(...ranks) || rank < Math.min(...ranks)) {
        for (const other of others) {
          this.up[other] = !this.up[other];
          this.faceDown += this.up[other] ? -1 : 1;
          flips.push([...this.position(other), this.up[other]]);
        }
      }
    }
    const { face_down_limit: limit, grid_size: size } = this.rules;
    if (this.faceDown > limit) {
      this.status = "lost";
      this.reason = "face_down";
    } else if (this.piles === size * size && !this.faceDown) {
      this.status = "won";
    } else if (this.moves.length === this.stock.length) {
      this.status = "lost";
      this.reason = "stock_empty";
    }
    return { card, position: [...position], flips };
  }

  lay(cell, card) {
    if (!this.height[cell]) {
      this.piles += 1;
      const row = Math.floor(cell / this.width);
      const col = cell % this.width;
      const box = this.box ?? [row, row, col, col];
      this.box = [Math.min(box[0], row), Math.max(box[1], row),
        Math.min(box[2], col), Math.max(box[3], col)];
    } else if (!this.up[cell]) {
      this.faceDown -= 1;
    }
    this.height[cell] += 1;
    this.top[cell] = card;
    this.up[cell] = true;
    this.cards[cell].push(card);
    this.moves.push(cell);
  }

  /** The piles as the wire's `PileView`: [row, col, faceUp, cards bottom first], in reading order. */
  pileViews() {
    const views = [];
    for (let cell = 0; cell < this.height.length; cell++) {
      if (this.height[cell]) views.push([...this.position(cell), this.up[cell], [...this.cards[cell]]]);
    }
    return views;
  }

  /** The positions played, in order. */
  movesPlayed() {
    return this.moves.map((cell) => this.position(cell));
  }
}

/**
 * The game `moves` reach from the deal of `seed`. Throws an Error naming the first
 * illegal move (counted from 1) and why.
 */
export async function replay(seed, moves, rules = DEFAULT_RULES, options = {}) {
  const game = await Game.deal(seed, rules, options);
  moves.forEach((move, index) => {
    try {
      game.play(move);
    } catch (error) {
      throw new Error(`move ${index + 1} (${move[0]}, ${move[1]}) is illegal: ${error.message}`);
    }
  });
  return game;
}
