import { signPayload } from "../../src/events/envelope.js";

export interface SendReport {
  accepted: Set<string>;
  attempts: number;
  non200: number;
}

/**
 * Sends every body like the upstream does: retries any non-200 or network error (with a short
 * capped backoff) until a 200, `concurrency` at a time. `onAccepted` sees the running count.
 */
export async function sendAll(
  url: string,
  events: { id: string; body: string }[],
  secret: string,
  opts: { concurrency: number; deadlineMs: number; onAccepted?: (count: number) => void | Promise<void> },
): Promise<SendReport> {
  const report: SendReport = { accepted: new Set(), attempts: 0, non200: 0 };
  const deadline = Date.now() + opts.deadlineMs;
  let next = 0;
  const worker = async () => {
    while (next < events.length) {
      const event = events[next++]!;
      for (let attempt = 0; ; attempt++) {
        if (Date.now() > deadline) throw new Error(`sender deadline passed with ${report.accepted.size} of ${events.length} accepted`);
        report.attempts++;
        try {
          const res = await fetch(url, {
            method: "POST",
            body: event.body,
            headers: { "content-type": "application/json", "x-svc-signature": signPayload(event.body, secret) },
            signal: AbortSignal.timeout(10_000),
          });
          await res.arrayBuffer();
          if (res.status === 200) {
            report.accepted.add(event.id);
            await opts.onAccepted?.(report.accepted.size);
            break;
          }
          report.non200++;
        } catch {
          report.non200++;
        }
        await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return report;
}
