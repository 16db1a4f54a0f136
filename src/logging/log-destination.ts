import { pino, type DestinationStream } from "pino";

export interface LogDestinationOptions {
  /** File descriptor to write to; stdout by default. */
  fd?: number;
  /** Most bytes held while the reader (a pipe, a log shipper) is slower than we write. */
  maxBufferBytes?: number;
}

/** 4 MiB: minutes of ordinary request lines, a fraction of the process's memory. */
export const DEFAULT_LOG_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * Lines are written in batches of this many bytes (about 15 request lines) rather than one write
 * each: at thousands of requests a second, a write per line (a thread-pool round trip each) was a
 * measurable share of the edge's CPU. This is pino's "asynchronous logging" setup.
 */
export const LOG_BATCH_BYTES = 4096;
/** Longest a line waits in a batch: a quiet service's lines still show within a fraction of a second. */
export const LOG_FLUSH_INTERVAL_MS = 200;

/**
 * pino's asynchronous writer, batched (LOG_BATCH_BYTES, LOG_FLUSH_INTERVAL_MS; what is buffered is
 * written synchronously when the process exits) and bounded: when whoever reads our stdout
 * falls behind, lines are held up to `maxBufferBytes` and dropped beyond it, rather than held
 * without limit (a flood of requests once took RSS from 100 to 700 MiB this way). Losing log
 * lines under a flood beats losing the process.
 *
 * @example createLogger({ destination: createLogDestination({ maxBufferBytes: 1 << 20 }) })
 */
export function createLogDestination(options: LogDestinationOptions = {}): DestinationStream {
  const destination = pino.destination({
    fd: options.fd ?? 1,
    sync: false,
    maxLength: options.maxBufferBytes ?? DEFAULT_LOG_BUFFER_BYTES,
    minLength: LOG_BATCH_BYTES,
  });
  // pino's documented pairing with minLength: a timer flushes what a quiet moment left buffered.
  const flusher = setInterval(() => {
    try {
      destination.flush();
    } catch {
      clearInterval(flusher); // destroyed: nothing more will be written
    }
  }, LOG_FLUSH_INTERVAL_MS).unref();
  destination.once("close", () => clearInterval(flusher));
  return destination;
}
