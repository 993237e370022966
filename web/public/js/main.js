// The page's one entry point: its address chooses the screen.
//
//   /                 the lobby: a name, quick race, private races, watch, host, practice
//   /solo             practice alone, offline
//   /race/CODE        a private race, joined by its code
//   /watch/CODE       a race, watched
//   /t/CODE           a tournament, watched
//   /t/CODE/play      a tournament, entered: its standings, and its races raced here
//   /host/CODE#TOKEN  a tournament's host console (the token stays in the address's
//                     fragment, which the browser never sends to the server)
//   /leaderboard      the leaderboards: rating, most wins, best scores
//   /player/ID        a claimed player's profile
//   /daily            the daily deal: today's board (sealed), racing it, yesterday's revealed

import { h, fill } from "./dom.js";

const SCREENS = [
  [/^\/watch\/([A-Za-z0-9_-]+)$/, async (root, code) => (await import("./screens/watch.js")).watchRace(root, code)],
  [/^\/t\/([A-Za-z0-9_-]+)$/, async (root, code) => (await import("./screens/tournament.js")).watchTournament(root, code)],
  [/^\/t\/([A-Za-z0-9_-]+)\/play$/, async (root, code) => (await import("./screens/entrant.js")).enterTournament(root, code)],
  [/^\/host\/([A-Za-z0-9_-]+)$/, async (root, code) => (await import("./screens/host.js")).hostConsole(root, code)],
  [/^\/race\/([A-Za-z0-9_-]+)$/, async (root, code) => (await import("./screens/play.js")).play(root, { join: code })],
  [/^\/leaderboard$/, async (root) => (await import("./screens/players.js")).leaderboardPage(root)],
  [/^\/player\/([A-Za-z0-9_.:-]+)$/, async (root, player) => (await import("./screens/players.js")).profilePage(root, player)],
  [/^\/daily$/, async (root) => (await import("./screens/daily.js")).dailyPage(root)],
  [/^\/solo$/, async (root) => (await import("./screens/solo.js")).solo(root)],
  [/^\/$/, async (root) => (await import("./screens/home.js")).home(root)],
];

const root = document.getElementById("app");
const path = location.pathname.replace(/\/$/, "") || "/";
const screen = SCREENS.find(([pattern]) => pattern.test(path));
if (screen) {
  const [pattern, open] = screen;
  globalThis.foursquare = await open(root, ...path.match(pattern).slice(1));
} else {
  fill(root, h("p", {}, "Nothing here. ", h("a", { href: "/" }, "Go to the lobby.")));
}
