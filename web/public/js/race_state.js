import { clock } from "./dom.js";

// One race as this page knows it, from the server's messages: the latest snapshot, every
// racer's last progress entry, the boards a spectator may see, the result and the par.
// Screens read it and redraw what `dirty` says changed.

export class RaceState {
  constructor(race = null) {
    this.race = race; // its id, once a snapshot names it
    this.snapshot = null;
    this.progress = new Map(); // racer id -> last progress entry
    this.boards = new Map(); // racer id -> { shown, piles }
    this.fogLine = null;
    this.finished = null;
    this.par = null;
    this.published = null; // the commitment seen before the start (or before the finish)
    this.dirty = { snapshot: false, progress: new Set(), boards: new Set() };
  }

  /** Whether `message` is about this race. */
  about(message) {
    return this.race === null || message.race === this.race || message.race === this.snapshot?.code;
  }

  /** Take one message in; returns true when it was about this race. */
  apply(message) {
    switch (message.type) {
      case "race":
        if (!this.about(message)) return false;
        this.race = message.race;
        this.snapshot = message;
        if (message.state !== "finished" && !this.finished) this.published ??= message.commitment;
        for (const entry of message.progress ?? []) this.setProgress(entry);
        this.dirty.snapshot = true;
        return true;
      case "progress":
        if (!this.about(message)) return false;
        for (const entry of message.racers) this.setProgress(entry);
        return true;
      case "board":
        if (!this.about(message)) return false;
        this.fogLine = message.fog_line ?? null;
        for (const board of message.boards) {
          this.boards.set(board.racer, board);
          this.dirty.boards.add(board.racer);
        }
        this.dirty.snapshot = true; // the fog note
        return true;
      case "finished":
        if (!this.about(message)) return false;
        this.finished = message;
        for (const line of message.standings) this.setProgress({ ...line, reason: this.progress.get(line.racer)?.reason });
        this.dirty.snapshot = true;
        return true;
      case "race_par":
        if (!this.about(message)) return false;
        this.par = message;
        this.dirty.snapshot = true;
        return true;
      default:
        return false;
    }
  }

  setProgress(entry) {
    this.progress.set(entry.racer, entry);
    this.dirty.progress.add(entry.racer);
  }

  /** The racers' names and bot flags, by id, from the snapshot. */
  racerInfo(racer) {
    return this.snapshot?.racers.find((info) => info.racer === racer) ?? null;
  }

  /** Every racer's progress, one entry each (waiting ones from the snapshot's list). */
  entries() {
    const out = new Map(this.progress);
    for (const info of this.snapshot?.racers ?? []) {
      if (!out.has(info.racer)) {
        out.set(info.racer, { racer: info.racer, name: info.name, bot: info.bot, status: "waiting",
          cards_played: 0, face_up: 0, face_down: 0 });
      }
    }
    return [...out.values()];
  }

  /** Racers away (connection down mid-race): id -> server time they are counted out. */
  away() {
    return new Map((this.snapshot?.racers ?? []).filter((r) => r.out_at).map((r) => [r.racer, r.out_at]));
  }

  get gridSize() {
    return this.snapshot?.options.ruleset.grid_size ?? this.finished?.ruleset.grid_size ?? 4;
  }

  /** The race clock as a line, at server time `now`: the countdown, the time raced and
   * left, or how long the race took. */
  clockText(now) {
    const snapshot = this.snapshot;
    if (this.finished) return `Raced in ${clock(this.finished.ended_at - this.finished.started_at)}`;
    if (snapshot?.state === "countdown" && snapshot.starts_at) return `Starts in ${clock(snapshot.starts_at - now + 999)}`;
    if (snapshot?.state === "running" && snapshot.started_at) {
      return `${clock(now - snapshot.started_at)}${snapshot.ends_at ? ` · ${clock(snapshot.ends_at - now)} left` : ""}`;
    }
    return "";
  }

  /** Take the dirty marks (and clear them). */
  takeDirty() {
    const dirty = this.dirty;
    this.dirty = { snapshot: false, progress: new Set(), boards: new Set() };
    return dirty;
  }
}
