// The page's link to the server: the same protocol as the terminal client (docs/protocol.md),
// msgpack maps in binary websocket frames, with @msgpack/msgpack as the codec.
//
// A Connection says hello, hands every message it receives to `onMessage`, and when the
// link drops after a welcome it connects again with backoff and resumes the session with
// its token, as the terminal client does: the server then sends the race's state again.

import { decode, encode } from "../vendor/msgpack.mjs";
import { serverClock } from "./dom.js";

export const PROTOCOL_VERSION = 1;
export const CLIENT_NAME = "foursquare-web/0.1";

/** Seconds between tries to reconnect, then the last one again and again; each wait is
 * shortened by a random share of up to JITTER of it, so that the pages of a server (or
 * a cluster's node) that went away do not all come back in the same instant. */
const BACKOFF = [0.25, 0.5, 1, 2, 4, 8];
const JITTER = 0.5;

/** Close codes after which trying again cannot help, with what to tell the person. */
const FINAL_CLOSES = {
  4001: "This page speaks another protocol version than the server: reload it.",
  4006: "This session was opened in another tab or window, so this one stopped.",
};

/** The websocket address of the server that served this page. */
export function serverUrl() {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/`;
}

/**
 * Keeps a session's resume token where a reload of the tab finds it (sessionStorage: one
 * session per tab, so two tabs never take over each other's session).
 */
export class TokenStore {
  constructor(key) {
    this.key = `foursquare.${key}`;
  }

  load() {
    try {
      return JSON.parse(sessionStorage.getItem(this.key) ?? "null");
    } catch {
      return null;
    }
  }

  save(value) {
    sessionStorage.setItem(this.key, JSON.stringify(value));
  }

  clear() {
    sessionStorage.removeItem(this.key);
  }
}

export class Connection {
  /**
   * `name` and `role` ("player" or "spectator") go in hello; `store` (a TokenStore, or
   * null) keeps the token across reloads; `onMessage(message)` gets every message, the
   * welcome included; `onStatus(state, sentence)` hears "connecting", "online",
   * "reconnecting" and "closed".
   */
  constructor({ name, role = "player", store = null, onMessage, onStatus = () => {} }) {
    this.name = name;
    this.role = role;
    this.store = store;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.nextId = 1;
    this.waiting = new Map(); // request id -> resolve
    this.socket = null;
    this.welcome = null;
    this.tries = 0;
    this.closed = false;
    this.token = store?.load()?.token ?? null;
  }

  /** Open the link (and keep it open until close()). */
  start() {
    this.closed = false;
    this.open();
    return this;
  }

  open() {
    this.onStatus(this.welcome ? "reconnecting" : "connecting", "");
    const socket = new WebSocket(serverUrl());
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.onopen = () => {
      const hello = {
        type: "hello", protocol_version: PROTOCOL_VERSION, name: this.name, bot: false,
        role: this.role, client: CLIENT_NAME,
      };
      if (this.token) hello.resume = this.token;
      this.send(hello);
    };
    socket.onmessage = (event) => this.receive(event.data);
    socket.onclose = (event) => this.dropped(socket, event.code);
  }

  receive(data) {
    let message;
    try {
      message = decode(new Uint8Array(data));
    } catch {
      return; // not one msgpack map: nothing a screen could use
    }
    if (!message || typeof message !== "object" || typeof message.type !== "string") return;
    serverClock.heard(message.server_time);
    if (message.type === "welcome") {
      this.tries = 0;
      this.welcome = message;
      this.token = message.resume;
      this.store?.save({ token: message.resume, name: message.name });
      this.onStatus("online", "");
    }
    if (message.type === "error" && message.code === "invalid_token") {
      // The server forgot the session (it expired, or its journal was replaced): start a
      // new one at once, as the terminal client does.
      this.token = null;
      this.welcome = null;
      this.store?.clear();
    }
    const resolve = this.waiting.get(message.reply_to);
    if (resolve) {
      this.waiting.delete(message.reply_to);
      resolve(message);
    }
    this.onMessage(message);
  }

  dropped(socket, code) {
    if (socket !== this.socket || this.closed) return;
    for (const resolve of this.waiting.values()) resolve({ type: "error", code: "disconnected" });
    this.waiting.clear();
    if (FINAL_CLOSES[code]) {
      this.closed = true;
      this.onStatus("closed", FINAL_CLOSES[code]);
      return;
    }
    const delay = BACKOFF[Math.min(this.tries, BACKOFF.length - 1)] * (1 - JITTER * Math.random());
    this.tries += 1;
    this.onStatus(this.welcome ? "reconnecting" : "connecting",
      `The connection dropped; trying again in ${delay < 1 ? "a moment" : `${delay.toFixed(1)} s`}.`);
    setTimeout(() => { if (!this.closed) this.open(); }, delay * 1000);
  }

  /** Send one message (a request id is added); returns the id, or null when offline. */
  send(message) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return null;
    const id = this.nextId++;
    this.socket.send(encode({ ...message, id }));
    return id;
  }

  /** Send a message and wait for its answer (an error included). */
  request(message) {
    return new Promise((resolve) => {
      const id = this.send(message);
      if (id === null) resolve({ type: "error", code: "disconnected", message: "Not connected." });
      else this.waiting.set(id, resolve);
    });
  }

  /** Close for good (no reconnecting); `forget` drops the stored token too. */
  close({ forget = false } = {}) {
    this.closed = true;
    if (forget) this.store?.clear();
    this.socket?.close(1000);
  }
}
