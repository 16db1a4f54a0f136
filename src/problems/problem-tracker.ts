import type { Logger } from "pino";
import type { AnnounceTransition, Problem, ProblemKind, ProblemTransition } from "./problem.js";
import { oneLine } from "../base/text.js";
import { keyText, MAX_SUBJECT_CHARS, openedTransition, resolvedTransition, type ProblemKey, type ProblemStore } from "./problem-store.js";

// The one module that opens and resolves problems. Every other part reports facts to it: a fault
// (`report`) or a success (`cleared`); it decides, keeps an in-memory view of what is open so a
// success costs a map look-up and no write, writes only transitions (and, every few seconds, the
// count of faults seen on what is open), and hands each transition to the announcer once. The
// view follows the other processes' openings and resolutions by reading the open set again at the
// same pace. The rules of each kind are in docs/operations.md ("Problems and alerts").

/** A fault met: the problem it belongs to and what failed (bounded text; never a key or secret). */
export interface ProblemFact extends ProblemKey {
  cause: string;
}

export interface ProblemTrackerOptions {
  store: ProblemStore;
  logger: Logger;
  /** Hands each opening and resolution to the alerts; without one, transitions are only marked. */
  announce?: AnnounceTransition | undefined;
  /**
   * How often the counts of faults on open problems are written and the open set is read again
   * (what other processes opened and resolved). Well inside the 30 s a problem has to open and resolve.
   * @defaultValue 5000
   */
  syncMs?: number;
  /**
   * How often transitions not yet announced (a failed hand-over, a process that stopped first) are
   * announced again; 0: never here (the web process leaves it to the workers). @defaultValue 0
   */
  reannounceMs?: number;
}

export interface ProblemTracker {
  /** A fault: opens the problem, or counts it on the open one. */
  report(fact: ProblemFact): void;
  /** A success: resolves the problem if it is open. Costs a map look-up otherwise. */
  cleared(key: ProblemKey): void;
  /** A success that clears every open problem of the account and kind whose subject starts with `subjectPrefix`. */
  clearedWhere(match: { account: string | null; kind: ProblemKind; subjectPrefix: string }): void;
  /** The problems the view holds open (what this process believes now). */
  openKeys(): ProblemKey[];
  /** Resolves once every write asked for so far is done (its outcome logged). */
  settled(): Promise<void>;
  /** Writes the counts and reads the open set again (what the timer does every `syncMs`). */
  sync(): Promise<void>;
  /** Announces every transition not yet marked announced; answers how many were. */
  reannounce(): Promise<number>;
  /** Reads the open set, announces what was left unannounced (with `reannounceMs`), starts the timers. */
  start(): Promise<void>;
  /** Stops the timers and writes what is pending. */
  stop(): Promise<void>;
}

interface Entry {
  key: ProblemKey;
  /** What the view believes once the writes queued for it are done. */
  open: boolean;
  /** Faults seen on the open problem since its count was last written, and the last one's cause. */
  pending: number;
  cause: string;
  /** Writes of this key, one after the other. */
  chain: Promise<void>;
  busy: number;
}

/** The writes of the tracker: each key's one after the other, every one awaited by `settled`, each transition announced. */
function createWrites(options: ProblemTrackerOptions) {
  const { store, logger } = options;
  const inFlight = new Set<Promise<void>>();

  /** Runs `write` after the key's earlier writes; its failure is logged and undone by `undo`. */
  const queue = (entry: Entry, what: string, write: () => Promise<void>, undo: () => void) => {
    entry.busy++;
    const run = entry.chain.then(write).catch((err: unknown) => {
      undo();
      logger.warn(
        { err: (err as Error).message, kind: entry.key.kind, account: entry.key.account },
        `problem not ${what}: the next fact tries again`,
      );
    });
    // This write's own promise leaves the set: `entry.chain` may be a later write's by then, and a
    // settled promise left behind would keep `settled` looping without ever yielding.
    const chain = run.finally(() => entry.busy--);
    entry.chain = chain;
    inFlight.add(chain);
    void chain.finally(() => inFlight.delete(chain));
  };

  /** Hands the transition over and marks it handed; a failure leaves it for `reannounce`. */
  const announce = async (transition: ProblemTransition) => {
    try {
      await options.announce?.(transition);
      await store.markAnnounced(transition);
    } catch (err) {
      logger.warn(
        { err: (err as Error).message, transition: transition.id },
        "problem transition not announced yet: announced again later",
      );
    }
  };

  const say = (problem: Problem, verb: "opened" | "resolved") =>
    logger[verb === "opened" ? "warn" : "info"](
      { problem: problem.id, kind: problem.kind, account: problem.account, subject: problem.subject, cause: problem.cause },
      `problem ${verb}: ${problem.kind}${problem.account === null ? "" : ` of account ${problem.account}`} (${problem.subject})${verb === "opened" ? `: ${problem.cause}` : ""}`,
    );

  return {
    queue,
    announce,
    async settled() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
    open(entry: Entry, cause: string) {
      entry.open = true;
      queue(
        entry,
        "opened",
        async () => {
          const count = 1 + entry.pending;
          entry.pending = 0;
          const { problem, opened } = await store.open(entry.key, { cause, count });
          if (!opened) return;
          say(problem, "opened");
          await announce(openedTransition(problem));
        },
        () => (entry.open = false),
      );
    },
    resolve(entry: Entry) {
      entry.open = false;
      entry.pending = 0;
      queue(
        entry,
        "resolved",
        async () => {
          const problem = await store.resolve(entry.key);
          if (!problem) return;
          say(problem, "resolved");
          await announce(resolvedTransition(problem));
        },
        () => (entry.open = true),
      );
    },
  };
}

type Writes = ReturnType<typeof createWrites>;

/** ProblemTracker.sync: the counts written, then the view made what the table holds open. */
async function syncView(view: Map<string, Entry>, writes: Writes, store: ProblemStore, entryOf: (key: ProblemKey) => Entry) {
  // The counts first: a fault seen here on a problem another process resolved is lost, and the next one opens it again.
  for (const entry of view.values()) {
    if (!entry.open || entry.pending === 0) continue;
    const fault = { cause: entry.cause, count: entry.pending };
    entry.pending = 0;
    writes.queue(
      entry,
      "counted",
      async () => {
        if (!(await store.touch(entry.key, fault))) entry.open = false;
      },
      () => (entry.pending += fault.count),
    );
  }
  await writes.settled();
  const open = new Set<string>();
  for (const problem of await store.listOpen()) {
    const key = { account: problem.account, kind: problem.kind, subject: problem.subject };
    open.add(keyText(key));
    const entry = entryOf(key);
    if (entry.busy === 0) entry.open = true;
  }
  // Resolved by another process (or by hand): nothing left to resolve here.
  for (const [text, entry] of view) if (entry.busy === 0 && !open.has(text)) view.delete(text);
}

export function createProblemTracker(options: ProblemTrackerOptions): ProblemTracker {
  const { store, logger } = options;
  const syncMs = options.syncMs ?? 5000;
  const view = new Map<string, Entry>();
  const timers: NodeJS.Timeout[] = [];
  const writes = createWrites(options);

  const entryOf = (key: ProblemKey): Entry => {
    const text = keyText(key);
    let entry = view.get(text);
    if (!entry) view.set(text, (entry = { key, open: false, pending: 0, cause: "", chain: Promise.resolve(), busy: 0 }));
    return entry;
  };

  const tracker: ProblemTracker = {
    report(fact) {
      const key = { account: fact.account, kind: fact.kind, subject: oneLine(fact.subject, MAX_SUBJECT_CHARS) };
      const entry = entryOf(key);
      if (entry.open) {
        entry.pending++;
        entry.cause = fact.cause;
        return;
      }
      writes.open(entry, fact.cause);
    },
    cleared(key) {
      const entry = view.get(keyText({ ...key, subject: oneLine(key.subject, MAX_SUBJECT_CHARS) }));
      if (entry?.open) writes.resolve(entry);
    },
    clearedWhere({ account, kind, subjectPrefix }) {
      for (const entry of view.values())
        if (entry.open && entry.key.account === account && entry.key.kind === kind && entry.key.subject.startsWith(subjectPrefix))
          writes.resolve(entry);
    },
    openKeys: () => [...view.values()].filter((e) => e.open).map((e) => e.key),
    settled: () => writes.settled(),
    sync: () => syncView(view, writes, store, entryOf),
    async reannounce() {
      const transitions = await store.unannounced();
      for (const t of transitions) await writes.announce(t);
      return transitions.length;
    },
    async start() {
      await tracker.sync();
      const every = (ms: number, work: () => Promise<unknown>, what: string) => {
        const timer = setInterval(() => {
          work().catch((err: unknown) => logger.warn({ err: (err as Error).message }, `${what} failed: tried again in ${ms} ms`));
        }, ms);
        timer.unref();
        timers.push(timer);
      };
      every(syncMs, () => tracker.sync(), "reading the open problems");
      const reannounceMs = options.reannounceMs ?? 0;
      if (reannounceMs > 0) {
        await tracker.reannounce();
        every(reannounceMs, () => tracker.reannounce(), "announcing problems again");
      }
    },
    async stop() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      await tracker.sync().catch(() => tracker.settled());
    },
  };
  return tracker;
}
