import { QueueUnavailableError } from "./errors.js";

/**
 * Races `work` against a deadline. A timed-out enqueue may still land later; that is safe because
 * the sender retries after our 503 and the retry is deduplicated by event id.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new QueueUnavailableError(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } catch (err) {
    if (err instanceof QueueUnavailableError) throw err;
    throw new QueueUnavailableError(`${what} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}
