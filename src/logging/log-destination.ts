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
 * pino's asynchronous writer with a bound: when whoever reads our stdout falls behind, lines are
 * held up to `maxBufferBytes` and dropped beyond it, rather than held without limit (a flood of
 * requests once took RSS from 100 to 700 MiB this way). Losing log lines under a flood beats
 * losing the process.
 *
 * @example createLogger({ destination: createLogDestination({ maxBufferBytes: 1 << 20 }) })
 */
export function createLogDestination(options: LogDestinationOptions = {}): DestinationStream {
  return pino.destination({ fd: options.fd ?? 1, sync: false, maxLength: options.maxBufferBytes ?? DEFAULT_LOG_BUFFER_BYTES });
}
