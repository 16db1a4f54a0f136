export interface InflightLimits {
  /** Entries read ahead and not yet acknowledged, at most (INGEST_BATCH_SIZE). */
  maxEntries: number;
  /** Entry bytes at once (WORKER_MAX_INFLIGHT_BYTES). */
  maxBytes: number;
  /** The largest an unread entry can be: a read asks for no more entries than the bytes left hold at this size. */
  largestEntryBytes: number;
}

export interface InflightFigures {
  entries: number;
  bytes: number;
  /** The most bytes held at once since the consumer was made. */
  peakBytes: number;
}

/** The stream entries a consumer holds (read, not yet acknowledged), bounded by count and by bytes. */
export interface InflightEntries {
  /** How many entries the next read may ask for: 0 when full; at least 1 when nothing is held. */
  room(): number;
  add(entryId: string, bytes: number): void;
  remove(entryId: string): void;
  has(entryId: string): boolean;
  ids(): string[];
  figures(): InflightFigures;
  /** Resolves when an entry is removed, after `timeoutMs`, or on wake(), whichever comes first. */
  whenRoom(timeoutMs: number): Promise<void>;
  /** Resolves once nothing is held. */
  whenEmpty(): Promise<void>;
  /** Resolves every pending whenRoom (a stop). */
  wake(): void;
}

/**
 * What a stream consumer holds: entries read and not yet acknowledged, each finished on its own, so
 * a slow one never holds up the others. Entries are sized only once read, so a read asks for as many as the bytes left
 * could hold at the largest size an entry can have; one entry always fits when none is held, so a
 * single event larger than the whole budget still runs.
 */
export function createInflightEntries(limits: InflightLimits): InflightEntries {
  const held = new Map<string, number>();
  let bytes = 0;
  let peakBytes = 0;
  let roomWaiters: (() => void)[] = [];
  let emptyWaiters: (() => void)[] = [];
  const wakeRoom = () => {
    const waiters = roomWaiters;
    roomWaiters = [];
    for (const w of waiters) w();
  };
  return {
    room() {
      const free = limits.maxEntries - held.size;
      const fits = Math.floor((limits.maxBytes - bytes) / Math.max(1, limits.largestEntryBytes));
      if (held.size === 0) return Math.max(1, Math.min(free, fits));
      return Math.max(0, Math.min(free, fits));
    },
    add(entryId, size) {
      held.set(entryId, size);
      bytes += size;
      peakBytes = Math.max(peakBytes, bytes);
    },
    remove(entryId) {
      const size = held.get(entryId);
      if (size === undefined) return;
      held.delete(entryId);
      bytes -= size;
      wakeRoom();
      if (held.size === 0) {
        const waiters = emptyWaiters;
        emptyWaiters = [];
        for (const w of waiters) w();
      }
    },
    has: (entryId) => held.has(entryId),
    ids: () => [...held.keys()],
    figures: () => ({ entries: held.size, bytes, peakBytes }),
    whenRoom(timeoutMs) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        timer.unref();
        function done() {
          clearTimeout(timer);
          roomWaiters = roomWaiters.filter((w) => w !== done);
          resolve();
        }
        roomWaiters.push(done);
      });
    },
    whenEmpty() {
      if (held.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => emptyWaiters.push(resolve));
    },
    wake: wakeRoom,
  };
}
