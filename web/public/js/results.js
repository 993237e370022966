// A finished race as the page shows it: the standings, the revealed seed, the par, and the
// verification done here (re-deal, check the commitment seen before the start, replay).

import { h, plural, seconds } from "./dom.js";
import { standingWords, racerName } from "./leaderboard.js";
import { verifyFinished } from "./verify.js";

/**
 * The verification of `finished` against `published` (the commitment this page saw
 * before the start), as an element that says "checking…" and then ✓ or what does not
 * add up. `onDone(result)` hears the outcome.
 */
export function verification(finished, published, onDone = () => {}) {
  const box = h("div", { class: "verify checking", role: "status" }, "Checking the result here…");
  verifyFinished(finished, published).then((result) => {
    box.classList.remove("checking");
    box.classList.add(result.ok ? "ok" : "failed");
    box.replaceChildren(...(result.ok
      ? [h("strong", {}, "✓ verified"), ` in this page: the seed matches the commitment `
        + `published before the start, and ${plural(finished.standings.length, "racer")}${finished.standings.length === 1 ? "'s" : "'"} moves `
        + "replay on a fresh deal to the standings shown."]
      : [h("strong", {}, "✗ does not add up"), h("ul", {}, result.problems.map((p) => h("li", {}, p)))]));
    onDone(result);
  }, (error) => {
    box.classList.remove("checking");
    box.classList.add("failed");
    box.replaceChildren(h("strong", {}, "✗ could not check the result: "), String(error));
    onDone({ ok: false, problems: [String(error)] });
  });
  return box;
}

/** The par line: "Par 24 (proven)", or nothing yet. */
export function parWords(par) {
  if (!par) return "Par: being worked out…";
  if (par.score === null) return "Par: no winning line was found for this deal.";
  return `Par: ${par.score} (${par.proven ? "proven best" : "at least"}; the best score with the whole stock known)`;
}

/** The standings table of a `finished` message. */
export function standingsTable(finished, you = null) {
  return h("table", { class: "standings" },
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "racer"), h("th", {}, "result"),
      h("th", {}, "played"), h("th", {}, "face up"), h("th", {}, "time"))),
    h("tbody", {}, finished.standings.map((line) => h("tr", { class: line.racer === you ? "you" : null },
      h("td", {}, line.place), h("td", {}, racerName(line, you)), h("td", {}, standingWords(line)),
      h("td", {}, line.cards_played), h("td", {}, line.face_up),
      h("td", {}, seconds(line.finish_ms))))));
}

/** Seed and commitment, for anyone who wants to check with `foursquare verify`. */
export function seedLines(finished) {
  return h("dl", { class: "seed" },
    h("dt", {}, "seed"), h("dd", {}, h("code", {}, finished.seed)),
    h("dt", {}, "commitment"), h("dd", {}, h("code", {}, finished.commitment)));
}
