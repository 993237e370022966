// The lobby: a name, then a quick race, a private race (opened or joined by code), the
// open public races, watching a race or a tournament, hosting one, or practice alone.

import { fill, h, plural } from "../dom.js";
import { Connection } from "../wire.js";
import { linkStatus, savedName, saveName, spectatorName } from "./common.js";
import { play } from "./play.js";

export function home(root) {
  const params = new URLSearchParams(location.search);
  if (params.get("quick") === "1" && savedName()) {
    history.replaceState(null, "", "/");
    return play(root, { quick: true });
  }
  const name = h("input", { id: "name", maxlength: 32, value: savedName(), autocomplete: "nickname",
    placeholder: "Your name" });
  const needName = () => {
    const chosen = name.value.trim();
    if (!chosen) {
      name.focus();
      name.setCustomValidity("Choose a name first");
      name.reportValidity();
      return false;
    }
    name.setCustomValidity("");
    saveName(chosen);
    return true;
  };
  const code = h("input", { id: "join-code", maxlength: 32, placeholder: "code", pattern: "[A-Za-z0-9_-]+" });
  const maxRacers = h("input", { id: "max-racers", type: "number", min: 2, max: 1000, value: 4 });
  const timeLimit = h("input", { id: "time-limit", type: "number", min: 1, max: 86400, value: 600 });
  const waitReady = h("input", { id: "wait-ready", type: "checkbox", checked: true });
  const watchCode = h("input", { id: "watch-code", maxlength: 32, placeholder: "race code" });
  const tournamentCode = h("input", { id: "tournament-code", maxlength: 16, placeholder: "tournament code" });
  const entryCode = h("input", { id: "entry-code", maxlength: 16, placeholder: "tournament code",
    pattern: "[A-Za-z0-9]+" });
  const races = h("ul", { class: "races-list", id: "open-races" }, h("li", { class: "note" }, "Looking…"));
  const status = h("p", { class: "link-status", role: "status" });

  fill(root, h("div", { class: "home" },
    h("header", { class: "top" }, h("h1", {}, "Foursquare Race"), status),
    h("p", { class: "note" }, "Race the solitaire game Foursquare against others on the same shuffled stock. "
      + "The seed is committed before the start and revealed at the end, and this page checks every result itself."),
    h("div", { class: "home-grid" },
      h("section", { class: "panel" }, h("h2", {}, "Race"),
        h("label", {}, "Your name, as the other racers will see it", name),
        h("button", { id: "quick", onclick: () => needName() && play(root, { quick: true }) }, "Quick race"),
        h("p", { class: "note" }, "A public race with whoever is waiting; it starts when two or more are in."),
        h("h2", {}, "Open public races"), races),
      h("form", { class: "panel", id: "create-form", onsubmit: (event) => {
        event.preventDefault();
        if (!needName()) return;
        const racers = Number(maxRacers.value);
        play(root, { create: { max_racers: racers, min_racers: Math.min(2, racers), time_limit: Number(timeLimit.value),
          public: false, auto_start: !waitReady.checked } });
      } },
      h("h2", {}, "Private race"),
      h("label", {}, "At most this many racers", maxRacers),
      h("label", {}, "Time limit (seconds)", timeLimit),
      h("label", { class: "row" }, waitReady, "Start when everyone says ready"),
      h("button", { type: "submit", id: "create" }, "Open a private race"),
      h("p", { class: "note" }, "You get a code to give to the others.")),
      h("form", { class: "panel", id: "join-form", onsubmit: (event) => {
        event.preventDefault();
        if (needName() && code.value.trim()) location.assign(`/race/${encodeURIComponent(code.value.trim())}`);
      } },
      h("h2", {}, "Join by code"), code, h("button", { type: "submit", id: "join" }, "Join")),
      h("form", { class: "panel", id: "enter-form", onsubmit: (event) => {
        event.preventDefault();
        const wanted = entryCode.value.trim().toUpperCase();
        if (needName() && wanted) location.assign(`/t/${encodeURIComponent(wanted)}/play`);
      } },
      h("h2", {}, "Enter a tournament"), entryCode,
      h("button", { type: "submit", id: "enter-tournament" }, "Enter"),
      h("p", { class: "note" }, "With the code the host gave you, under your name above; "
        + "you race each round's race in this page.")),
      h("section", { class: "panel" }, h("h2", {}, "Watch"),
        h("form", { class: "row", onsubmit: (event) => {
          event.preventDefault();
          if (watchCode.value.trim()) location.assign(`/watch/${encodeURIComponent(watchCode.value.trim())}`);
        } }, watchCode, h("button", { type: "submit", id: "watch" }, "Watch a race")),
        h("form", { class: "row", onsubmit: (event) => {
          event.preventDefault();
          const wanted = tournamentCode.value.trim().toUpperCase();
          if (wanted) location.assign(`/t/${encodeURIComponent(wanted)}`);
        } }, tournamentCode, h("button", { type: "submit", id: "watch-tournament" }, "Watch a tournament"))),
      hostForm(),
      h("section", { class: "panel" }, h("h2", {}, "Practice"),
        h("p", { class: "note" }, "A game alone, in this page, with no server: undo and new deals allowed."),
        h("a", { href: "/solo", id: "solo" }, "Practice alone")),
      h("section", { class: "panel" }, h("h2", {}, "The daily deal"),
        h("p", { class: "note" }, "One deal a day for everyone, one try each; its seed and every line "
          + "are revealed the next day, and checked in the page."),
        h("a", { href: "/daily", id: "daily" }, "Today's deal")),
      h("section", { class: "panel" }, h("h2", {}, "Players"),
        h("p", { class: "note" }, "Ratings, most wins and best scores of the players who claimed their names."),
        h("a", { href: "/leaderboard", id: "leaderboards" }, "Leaderboards")))));

  // The open races, kept up to date while the lobby is open (a spectator session: no seat).
  const lister = new Connection({
    name: spectatorName(), role: "spectator", onStatus: linkStatus(status),
    onMessage(message) {
      if (message.type === "welcome") lister.send({ type: "list_races" });
      if (message.type !== "races") return;
      fill(races, message.races.length ? message.races.map((race) => h("li", {},
        h("span", {}, h("code", {}, race.race), ` · ${plural(race.racers, "racer")} of ${race.max_racers}`),
        h("span", { class: "row" },
          h("button", { class: "secondary", onclick: () => needName() && play(root, { join: race.race }) }, "Join"),
          h("a", { href: `/watch/${race.race}` }, "watch"))))
        : h("li", { class: "note" }, "None right now: a quick race opens one."));
    },
  }).start();
  const refresh = setInterval(() => lister.send({ type: "list_races" }), 3000);
  const stop = () => {
    clearInterval(refresh);
    lister.close();
  };
  root.addEventListener("click", (event) => {
    if (event.target.closest("#quick, #create, #join, .races-list button")) stop();
  });
  return { lister };
}

/** Create a tournament: the server answers with its code and the host's secret token. */
function hostForm() {
  const name = h("input", { id: "tournament-name", maxlength: 64, value: "Club night", required: true });
  const format = h("select", { id: "tournament-format" },
    h("option", { value: "rounds" }, "rounds (Swiss-like)"), h("option", { value: "arena" }, "arena"));
  const rounds = h("input", { id: "tournament-rounds", type: "number", min: 1, max: 100, value: 3 });
  const raceSize = h("input", { id: "tournament-race-size", type: "number", min: 2, max: 1000, value: 8 });
  const timeLimit = h("input", { id: "tournament-time-limit", type: "number", min: 1, max: 86400, value: 300 });
  const minutes = h("input", { id: "tournament-minutes", type: "number", min: 1, max: 10080, value: 30 });
  const rated = h("input", { id: "tournament-rated", type: "checkbox" });
  const problem = h("p", { class: "error", role: "alert" });
  return h("form", { class: "panel", id: "host-form", onsubmit: (event) => {
    event.preventDefault();
    const options = {
      name: name.value.trim(), format: format.value, rounds: Number(rounds.value),
      race_size: Number(raceSize.value), time_limit: Number(timeLimit.value),
      arena_duration: Number(minutes.value) * 60, rated: rated.checked,
    };
    const host = new Connection({
      name: spectatorName(), role: "spectator",
      onMessage(message) {
        if (message.type === "welcome") host.send({ type: "create_tournament", options });
        else if (message.type === "tournament_created") {
          host.close();
          localStorage.setItem(`foursquare.host.${message.tournament}`, message.host_token);
          location.assign(`/host/${message.tournament}#${message.host_token}`);
        } else if (message.type === "error") {
          problem.textContent = message.message;
          host.close();
        }
      },
    }).start();
  } },
  h("h2", {}, "Host a tournament"),
  h("label", {}, "Name", name), h("label", {}, "Format", format),
  h("label", {}, "Rounds (rounds format)", rounds), h("label", {}, "Racers per race", raceSize),
  h("label", {}, "Time limit of each race (seconds)", timeLimit),
  h("label", {}, "Arena length (minutes)", minutes),
  h("label", { class: "row" }, rated, "Rated (claimed players' ratings count its races)"),
  h("button", { type: "submit", id: "host" }, "Create the tournament"), problem,
  h("p", { class: "note" }, "You get the host console; keep its address: it holds the host token."));
}

