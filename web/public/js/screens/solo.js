// Practice alone (/solo), offline: the page deals a fresh seed with its own engine and
// plays the rules itself; no server is involved once the page is loaded. Undo, a new
// deal, and the seed shown so a game can be replayed with `foursquare replay`.

import { cardFace, cardWords, cursorKey, drawBoard } from "../board.js";
import { fill, h, plural, REASON_WORDS } from "../dom.js";
import { DEFAULT_RULES, Game } from "../engine.js";

/** A fresh seed: 128 random bits as hex (the browser's generator works offline too). */
function freshSeed() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function solo(root) {
  const view = { game: null, seed: "", cursor: null };
  const body = h("div", { id: "screen" });
  fill(root, h("div", { class: "solo" },
    h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"),
      h("h1", {}, "Practice"), h("p", { class: "phase" }, "alone, in this page")),
    body));

  async function deal(seed = freshSeed()) {
    view.seed = seed;
    view.game = await Game.deal(seed, DEFAULT_RULES);
    view.cursor = null;
    render();
  }

  async function undo() {
    const moves = view.game.movesPlayed().slice(0, -1);
    const game = await Game.deal(view.seed, DEFAULT_RULES);
    for (const move of moves) game.play(move);
    view.game = game;
    render();
  }

  function place(position) {
    const game = view.game;
    if (game.whyIllegal(position) !== null) return;
    game.play(position);
    view.cursor = position;
    render();
  }

  function render() {
    const game = view.game;
    const targets = game.legalMoves();
    if (!view.cursor || !targets.some(([r, c]) => r === view.cursor[0] && c === view.cursor[1])) {
      view.cursor = targets[0] ?? null;
    }
    const ended = game.status === "won"
      ? `You won with ${plural(game.score, "card")} left in the stock!`
      : game.status === "lost" ? `Lost: ${REASON_WORDS[game.reason]}.` : null;
    fill(body, h("div", { class: "race-layout" },
      h("div", {}, h("div", { class: "board", id: "my-board" }, drawBoard(game.pileViews(), {
        size: game.rules.grid_size, targets, cursor: view.cursor, onPick: place })),
      h("p", { class: "keys" }, "Click a green spot, or arrows/Tab and Enter. u: undo · n: new deal.")),
      h("div", { class: "side" },
        h("section", { class: "panel hand" },
          h("div", { class: "in-hand", id: "in-hand" }, game.card === null ? null : cardFace(game.card)),
          h("dl", { class: "facts" },
            h("dt", {}, "card to place"), h("dd", { id: "card-words" }, game.card === null ? "—" : cardWords(game.card)),
            h("dt", {}, "stock left"), h("dd", { id: "stock" }, game.stockLeft),
            h("dt", {}, "cards played"), h("dd", { id: "played" }, game.cardsPlayed),
            h("dt", {}, "face down"), h("dd", { id: "face-down" }, `${game.faceDown} of at most ${game.rules.face_down_limit}`))),
        ended ? h("p", { class: "verdict", id: "my-end" }, ended) : null,
        h("div", { class: "row" },
          h("button", { id: "undo", class: "secondary", disabled: !game.cardsPlayed, onclick: undo }, "Undo"),
          h("button", { id: "new-deal", onclick: () => deal() }, "New deal")),
        h("p", { class: "note" }, "Seed ", h("code", { id: "seed" }, view.seed),
          ": replay it with ", h("code", {}, "foursquare replay SEED MOVES"), "."))));
  }

  document.addEventListener("keydown", (event) => {
    const game = view.game;
    if (!game) return;
    if (event.key === "u" && game.cardsPlayed) return void undo();
    if (event.key === "n") return void deal();
    const action = cursorKey(event, view.cursor, game.legalMoves(), game.rules.grid_size);
    if (!action) return;
    event.preventDefault();
    if (action.place) place(action.place);
    else {
      view.cursor = action.cursor;
      render();
    }
  });
  await deal(new URLSearchParams(location.search).get("seed") ?? freshSeed());
  return view;
}
