/** Failure injection, as data (like stripe sync-engine's test sandbox). */
export interface FaultRule {
  method?: string;
  /** Prefix of the pathname, e.g. "/api/v1/orders". */
  path: string;
  /** Answer this status with an error body. */
  status?: number;
  /** With status 429: the Retry-After value. */
  retryAfterSeconds?: number;
  /** Wait this long before answering (to exceed a client's timeout). */
  delayMs?: number;
  /**
   * Send the status, the headers and the first bytes of the body at once, then wait this long
   * before the rest: a body that stalls past a client's timeout after the headers arrived.
   */
  stallBodyMs?: number;
  /**
   * A list answers with the cursor the request sent as its nextCursor (a first page: the cursor
   * after its own last item, even when nothing follows): an upstream stuck on one page.
   */
  repeatCursor?: boolean;
  /**
   * A list answers empty pages whose cursors go round a cycle of this many: the first page hands
   * out the cycle's first cursor, each cursor of it the next, the last the first again. A list
   * that never ends without ever handing back the cursor it was sent.
   */
  cursorCycle?: number;
  /** A list answers this many records whatever `limit` asked (its page's records over again). */
  pageRecords?: number;
  /**
   * The answer goes on to this many bytes, generated as it is read (no Content-Length): a success
   * gets whitespace after its JSON (still valid JSON), an error (`status`) a message that long. A
   * page too large to hold, or an error message of megabytes.
   */
  padBodyBytes?: number;
  /** Skip the first `after` matching requests. */
  after?: number;
  /** Apply to this many matching requests, then expire; unlimited when absent. */
  times?: number;
}

export function createFaults() {
  let rules: { rule: FaultRule; seen: number; applied: number }[] = [];
  return {
    // Arrow properties, not methods: the sandbox hands them out unbound.
    add: (rule: FaultRule) => {
      rules.push({ rule, seen: 0, applied: 0 });
    },
    clear: () => {
      rules = [];
    },
    /** The rule to apply to this request, if any (counting it). */
    match(method: string, path: string): FaultRule | undefined {
      for (const entry of rules) {
        const { rule } = entry;
        if (rule.method && rule.method.toUpperCase() !== method) continue;
        if (!path.startsWith(rule.path)) continue;
        entry.seen++;
        if (entry.seen <= (rule.after ?? 0)) continue;
        if (rule.times !== undefined && entry.applied >= rule.times) continue;
        entry.applied++;
        return rule;
      }
      return undefined;
    },
  };
}

/**
 * The same answer, but only its status, headers and first bytes are sent at once; the rest
 * follows after `ms` (unless the client went away first).
 */
export async function stallBody(res: Response, ms: number): Promise<Response> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  const split = Math.max(1, Math.floor(bytes.length / 2));
  let timer: NodeJS.Timeout | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.subarray(0, split));
      timer = setTimeout(() => {
        controller.enqueue(bytes.subarray(split));
        controller.close();
      }, ms);
    },
    cancel() {
      clearTimeout(timer);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

/**
 * A body of `bytes` bytes: `head`, then `fill` (one ASCII character) over and over, then `tail`,
 * made as the client reads it, so a body of gigabytes costs the sandbox one chunk at a time.
 */
export function paddedBody(parts: { head: string; fill: string; tail: string; bytes: number }, init: ResponseInit): Response {
  const encoder = new TextEncoder();
  const head = encoder.encode(parts.head);
  const tail = encoder.encode(parts.tail);
  const chunk = encoder.encode(parts.fill.repeat(64 * 1024));
  let left = Math.max(0, parts.bytes - head.length - tail.length);
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(head);
      } else if (left > 0) {
        const n = Math.min(left, chunk.length);
        controller.enqueue(chunk.subarray(0, n));
        left -= n;
      } else {
        controller.enqueue(tail);
        controller.close();
      }
    },
  });
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return new Response(body, { ...init, headers });
}

/** A success answer whose JSON is followed by whitespace up to `bytes` (padBodyBytes). */
export async function padBody(res: Response, bytes: number): Promise<Response> {
  return paddedBody({ head: await res.text(), fill: " ", tail: "", bytes }, { status: res.status, headers: res.headers });
}
