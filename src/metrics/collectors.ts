import type { Queue } from "bullmq";
import type { Metrics } from "./metrics.js";

/** Queue depth by state, read at scrape time. */
export function collectQueueDepths(metrics: Metrics, queues: readonly Queue[]): void {
  metrics.addCollector(async () => {
    for (const q of queues) {
      const counts = await q.getJobCounts("waiting", "active", "delayed", "failed", "completed", "prioritized");
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: q.name, state }, n);
    }
  });
}

/** Seconds since the mirror last took a write, by kind. */
export function collectMirrorLag(
  metrics: Metrics,
  kinds: readonly string[],
  lastWriteAt: (kind: string) => Promise<number | undefined>,
): void {
  metrics.addCollector(async () => {
    const now = Date.now();
    for (const kind of kinds) {
      const at = await lastWriteAt(kind);
      if (at !== undefined) metrics.mirrorLag.set({ kind }, (now - at) / 1000);
    }
  });
}

/** What is left of the shared upstream rate budget, and of a shared Retry-After pause. */
export function collectRateBudget(metrics: Metrics, max: number, state: () => Promise<{ inWindow: number; pausedForMs: number }>): void {
  metrics.addCollector(async () => {
    const now = await state();
    metrics.rateBudgetRemaining.set(Math.max(0, max - now.inWindow));
    metrics.upstreamPausedSeconds.set(now.pausedForMs / 1000);
  });
}

/** The ingest stream's backlog (events accepted that no worker finished with) and its lag. */
export function collectIngestBacklog(metrics: Metrics, read: () => Promise<{ length: number; oldestAgeMs: number }>): void {
  metrics.addCollector(async () => {
    const backlog = await read();
    metrics.streamBacklog.set(backlog.length);
    metrics.consumerLag.set(backlog.oldestAgeMs / 1000);
  });
}

/**
 * What one worker's stream consumer holds, read at scrape time: entries read and not yet
 * acknowledged, their bytes (each bounded: INGEST_BATCH_SIZE, WORKER_MAX_INFLIGHT_BYTES), and the
 * attempts among them waiting for the event log to take their record.
 */
export function collectStreamConsumer(
  metrics: Metrics,
  consumer: { inflight(): { entries: number; bytes: number }; attemptsWaitingOnLog(): number },
): void {
  metrics.addCollector(() => {
    const { entries, bytes } = consumer.inflight();
    metrics.inflightEntries.set(entries);
    metrics.inflightBytes.set(bytes);
    metrics.attemptsWaitingOnLog.set(consumer.attemptsWaitingOnLog());
    return Promise.resolve();
  });
}

/** Whether the database answers within `timeoutMs` (a scrape must not hang on it), and how fast, at scrape time. */
export function collectDatabaseHealth(metrics: Metrics, ping: () => Promise<void>, timeoutMs = 2000): void {
  metrics.addCollector(async () => {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<0>((resolve) => (timer = setTimeout(() => resolve(0), timeoutMs)));
    const up = await Promise.race([
      ping().then(
        () => 1 as const,
        () => 0 as const,
      ),
      late,
    ]);
    clearTimeout(timer);
    metrics.databaseUp.set(up);
    if (up) metrics.databasePingSeconds.set((performance.now() - started) / 1000);
  });
}
