// Cards and boards as the page draws them. A card face shows rank and suit; a face-down top
// is a card back; a spot behind the fog (a watched board whose racer has played cards the
// fog still hides) is drawn as fog, never as an empty spot, since the card may be there.

import { h } from "./dom.js";
import { RANKS, rankOf, suitOf } from "./engine.js";

const SUIT_SIGNS = { C: "♣", D: "♦", H: "♥", S: "♠" };
const SUIT_NAMES = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const RANK_WORDS = ["ace", "2", "3", "4", "5", "6", "7", "8", "9", "10"];

/** A card's name for a person: "10 of hearts". */
export const cardWords = (id) => `${RANK_WORDS[rankOf(id) - 1]} of ${SUIT_NAMES[suitOf(id)]}`;

/** A card's short text: "10♥". */
export const cardText = (id) => `${RANKS[id % 10] === "T" ? "10" : RANKS[id % 10]}${SUIT_SIGNS[suitOf(id)]}`;

/** A face-up card (its id in `data-card`). */
export function cardFace(id, height = 1) {
  const suit = suitOf(id);
  return h("div", {
    class: `card face ${suit === "D" || suit === "H" ? "red" : "black"}`,
    dataset: { card: String(id) },
    title: cardWords(id),
  },
  h("span", { class: "rank" }, cardText(id).slice(0, -1)),
  h("span", { class: "suit" }, SUIT_SIGNS[suit]),
  height > 1 ? h("span", { class: "height", title: `${height} cards in this pile` }, height) : null);
}

/** A face-down card: its back, and how high its pile is. */
export function cardBack(height = 1) {
  return h("div", { class: "card back", title: "face down" },
    height > 1 ? h("span", { class: "height" }, height) : null);
}

const key = (row, col) => `${row},${col}`;

/**
 * A board: `piles` in the wire's PileView form ([row, col, faceUp, cards bottom first]).
 *
 * options.size       the grid's size (the ruleset's grid_size)
 * options.targets    positions the card in hand may go to (a racer's own board): the
 *                    board then spans every position still reachable, targets marked
 * options.cursor     [row, col] of the keyboard's cursor, or null
 * options.fogged     true when cards of this board are behind the fog: empty spots are
 *                    drawn as fog
 * options.onPick     called with [row, col] when a target is clicked
 * options.hidden     the data-hidden count to note (cards behind the fog)
 */
export function drawBoard(piles, { size = 4, targets = null, cursor = null, fogged = false,
  onPick = null } = {}) {
  const byPlace = new Map(piles.map((pile) => [key(pile[0], pile[1]), pile]));
  const targetSet = new Set((targets ?? []).map(([r, c]) => key(r, c)));
  const rows = piles.map((p) => p[0]);
  const cols = piles.map((p) => p[1]);
  let top; let left; let bottom; let right;
  if (targets) {
    // A racer's board: every position that can still take a pile, so targets outside the
    // current box show where the grid can still grow.
    const all = [...piles.map((p) => [p[0], p[1]]), ...targets];
    const minRow = Math.min(...all.map((p) => p[0]), 0);
    const maxRow = Math.max(...all.map((p) => p[0]), 0);
    const minCol = Math.min(...all.map((p) => p[1]), 0);
    const maxCol = Math.max(...all.map((p) => p[1]), 0);
    [top, bottom, left, right] = [minRow, maxRow, minCol, maxCol];
  } else {
    top = rows.length ? Math.min(...rows) : 0;
    left = cols.length ? Math.min(...cols) : 0;
    bottom = Math.max(top + size - 1, ...rows);
    right = Math.max(left + size - 1, ...cols);
  }
  const grid = h("div", { class: "grid", style: { "--cols": String(right - left + 1) } });
  for (let row = top; row <= bottom; row++) {
    for (let col = left; col <= right; col++) {
      const here = key(row, col);
      const pile = byPlace.get(here);
      let cell;
      if (pile) {
        const cards = pile[3];
        cell = pile[2] ? cardFace(cards[cards.length - 1], cards.length) : cardBack(cards.length);
      } else if (targetSet.has(here)) {
        cell = h("div", { class: "slot" });
      } else if (fogged) {
        cell = h("div", { class: "fog", title: "behind the fog" });
      } else {
        cell = h("div", { class: "empty" });
      }
      const spot = h("div", { class: "spot", dataset: { row: String(row), col: String(col) } }, cell);
      if (targetSet.has(here)) {
        spot.classList.add("target");
        if (onPick) spot.addEventListener("click", () => onPick([row, col]));
      }
      if (cursor && cursor[0] === row && cursor[1] === col) spot.classList.add("cursor");
      grid.append(spot);
    }
  }
  return grid;
}

const CURSOR_STEPS = {
  ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
  k: [-1, 0], j: [1, 0], h: [0, -1], l: [0, 1],
};

/**
 * What a key does to a board's cursor: `{ cursor }` (moved by the arrows or hjkl within
 * the grid's reach, or to the next target with Tab, the previous with Shift+Tab),
 * `{ place: [row, col] }` (Enter or Space), or null for any other key.
 */
export function cursorKey(event, cursor, targets, size) {
  const [row, col] = cursor ?? targets[0] ?? [0, 0];
  if (CURSOR_STEPS[event.key]) {
    const [dr, dc] = CURSOR_STEPS[event.key];
    const limit = size - 1;
    const clamp = (v) => Math.max(-limit, Math.min(limit, v));
    return { cursor: [clamp(row + dr), clamp(col + dc)] };
  }
  if (event.key === "Tab" && targets.length) {
    const at = targets.findIndex(([r, c]) => r === row && c === col);
    return { cursor: targets[(at + (event.shiftKey ? targets.length - 1 : 1)) % targets.length] };
  }
  if (event.key === "Enter" || event.key === " ") return { place: [row, col] };
  return null;
}
