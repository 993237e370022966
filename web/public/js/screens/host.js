// The host's console (/host/CODE#TOKEN): open registration, start rounds, pause, resume,
// remove an entrant by name, end, export; the live standings beside it.
//
// The host token is the address's fragment, which the browser never sends to the server
// (nor in a Referer); this browser also keeps it (localStorage), so the console opens
// again without it. Anyone holding it is the host: the page never shows it.

import { fill, h, plural } from "../dom.js";
import { phaseLine, racesInProgress, tournamentStandings } from "../tournament_view.js";
import { verifyFinished } from "../verify.js";
import { Connection } from "../wire.js";
import { linkStatus, spectatorName } from "./common.js";

const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

export function hostConsole(root, code) {
  const stored = `foursquare.host.${code}`;
  const fromAddress = decodeURIComponent(location.hash.slice(1));
  if (TOKEN.test(fromAddress)) localStorage.setItem(stored, fromAddress);
  const token = localStorage.getItem(stored);
  if (!token) return askToken(root, code);
  return new Console(root, code, token);
}

function askToken(root, code) {
  const input = h("input", { id: "host-token", type: "password", autocomplete: "off" });
  fill(root, h("form", { class: "panel name-form", onsubmit: (event) => {
    event.preventDefault();
    if (!TOKEN.test(input.value.trim())) return;
    location.replace(`/host/${code}#${input.value.trim()}`);
    location.reload();
  } },
  h("h1", {}, "Host console ", h("code", {}, code)),
  h("label", {}, "The host token (printed when the tournament was created)", input),
  h("button", { type: "submit" }, "Open the console")));
  return null;
}

class Console {
  constructor(root, code, token) {
    this.code = code;
    this.token = token;
    this.state = null;
    this.parts = {
      title: h("h1", {}, "Host console ", h("code", {}, code)),
      phase: h("p", { class: "phase", id: "phase" }),
      status: h("p", { class: "link-status", role: "status" }),
      actions: h("div", { class: "console-actions" }),
      standings: h("section", { class: "panel" }),
      races: h("div", {}),
      log: h("ul", { class: "console-log", id: "console-log" }),
      remove: h("input", { id: "remove-name", placeholder: "entrant's name" }),
      choices: h("div", { class: "row", id: "remove-choices" }),
      exported: h("div", { id: "exported" }),
    };
    const p = this.parts;
    fill(root, h("div", { class: "host" },
      h("header", { class: "top" }, h("a", { class: "home", href: "/" }, "♠ Foursquare"), p.title, p.phase, p.status),
      h("div", { class: "columns" },
        h("div", { class: "side" },
          h("section", { class: "panel" }, h("h2", {}, "Run the tournament"), p.actions,
            h("p", { class: "note" }, "Players enter with the code ", h("code", { id: "join-code" }, code),
              ", in a browser at ", h("a", { href: `/t/${code}/play` }, `/t/${code}/play`),
              ` or with foursquare play --tournament ${code}; spectators watch at `,
              h("a", { href: `/t/${code}` }, `/t/${code}`), ".")),
          h("form", { class: "panel", onsubmit: (event) => { event.preventDefault(); this.removeByName(); } },
            h("h2", {}, "Remove an entrant"), h("div", { class: "row" }, p.remove,
              h("button", { type: "submit", id: "remove", class: "secondary" }, "Remove")), p.choices),
          h("section", { class: "panel" }, h("h2", {}, "Export"),
            h("button", { id: "export", class: "secondary", onclick: () => this.export() }, "Export standings and every game (JSON)"),
            p.exported),
          h("section", { class: "panel" }, h("h2", {}, "What happened"), p.log)),
        h("div", { class: "side" }, p.standings, h("section", { class: "panel" }, h("h2", {}, "Races in progress"), p.races)))));
    this.connection = new Connection({
      name: spectatorName(), role: "spectator", onStatus: linkStatus(p.status),
      onMessage: (message) => this.receive(message),
    }).start();
  }

  receive(message) {
    if (message.type === "welcome") this.connection.send({ type: "watch_tournament", tournament: this.code });
    else if (message.type === "tournament" && message.tournament === this.code) {
      this.state = message;
      this.render();
    }
  }

  render() {
    const state = this.state;
    const p = this.parts;
    fill(p.title, "Host console · ", state.name, " ", h("code", {}, state.tournament));
    fill(p.phase, phaseLine(state));
    const over = state.status === "finished";
    const running = state.status === "running";
    const start = state.format === "arena" ? "Start the arena"
      : state.round >= state.rounds ? "Every round started" : `Start round ${state.round + 1}`;
    fill(p.actions,
      h("button", { id: "open", disabled: state.status !== "created", onclick: () => this.act("open") }, "Open registration"),
      h("button", { id: "start", disabled: over || state.status === "created" || state.races.length > 0
        || (running && state.format === "arena"), onclick: () => this.act("start") }, start),
      state.paused
        ? h("button", { id: "resume", disabled: over, onclick: () => this.act("resume") }, "Resume")
        : h("button", { id: "pause", class: "secondary", disabled: over || !running, onclick: () => this.act("pause") }, "Pause"),
      h("button", { id: "end", class: "secondary", disabled: over || state.ending, onclick: () => {
        if (confirm("End the tournament? The races in progress finish and count; no new one starts.")) this.act("end");
      } }, "End"));
    fill(p.standings, h("h2", {}, "Standings"), tournamentStandings(state));
    fill(p.races, racesInProgress(state));
  }

  async act(action, entrant = null) {
    const message = { type: "tournament_control", tournament: this.code, host_token: this.token, action };
    if (entrant) message.entrant = entrant;
    // Named before sending: once removed, an entrant is no longer in the standings.
    const named = this.state?.standings.find((line) => line.entrant === entrant)?.name;
    const answer = await this.connection.request(message);
    const words = entrant ? `${action} ${named ?? ""} (${entrant})` : action;
    this.parts.log.prepend(answer.type === "error"
      ? h("li", { class: "failed" }, `${words}: refused: ${answer.message}`)
      : h("li", {}, `${words}: done`));
    if (answer.type === "tournament") {
      this.state = answer;
      this.render();
    }
  }

  /** Remove by the name the standings show; when two entrants share it, ask which. */
  removeByName() {
    const name = this.parts.remove.value.trim();
    const matches = (this.state?.standings ?? []).filter((line) => line.name === name && line.state !== "removed");
    fill(this.parts.choices);
    if (!matches.length) {
      fill(this.parts.choices, h("p", { class: "error" }, `No entrant is named ${name}.`));
    } else if (matches.length === 1) {
      this.act("remove", matches[0].entrant);
      this.parts.remove.value = "";
    } else {
      fill(this.parts.choices, h("p", {}, `${plural(matches.length, "entrant")} are named ${name}: which one?`),
        matches.map((line) => h("button", { class: "secondary", onclick: () => {
          this.act("remove", line.entrant);
          fill(this.parts.choices);
        } }, `${line.entrant} (${line.points} points)`)));
    }
  }

  /** The export as a JSON file, and every game in it checked here. */
  async export() {
    const answer = await this.exportPages();
    if (answer.type !== "tournament_export") {
      fill(this.parts.exported, h("p", { class: "error" }, answer.message ?? "The export failed."));
      return;
    }
    const file = new Blob([JSON.stringify(answer, null, 2)], { type: "application/json" });
    const link = h("a", { href: URL.createObjectURL(file), download: `${this.code}.json`, id: "export-file" },
      `${this.code}.json`);
    const verdict = h("p", { class: "verify checking", id: "export-verify" }, "Checking every game…");
    fill(this.parts.exported, h("p", {}, "Saved as ", link), verdict);
    link.click();
    const results = await Promise.all(answer.games.map((game) => verifyFinished(game, null)));
    const failed = results.filter((result) => !result.ok).length;
    verdict.classList.remove("checking");
    verdict.classList.add(failed ? "failed" : "ok");
    verdict.textContent = failed ? `✗ ${plural(failed, "game")} of ${answer.games.length} do not add up`
      : `✓ all ${plural(answer.games.length, "game")} verified in this page`;
  }

  /**
   * Every page of the export (each `tournament_export` names the next with `next`), as one
   * `tournament_export`: the games of all pages in order, with the last page's state (the
   * one they add up to). The first answer that is not a page is returned instead.
   */
  async exportPages() {
    const games = [];
    let after = null;
    for (;;) {
      const ask = { type: "export_tournament", tournament: this.code };
      if (after !== null) ask.after = after;
      const page = await this.connection.request(ask);
      if (page.type !== "tournament_export") return page;
      games.push(...page.games);
      if (page.next === undefined || page.next === null) return { type: page.type, state: page.state, games };
      if (page.next <= (after ?? 0)) return { type: "error", message: "The server's pages do not move on." };
      after = page.next;
    }
  }
}
