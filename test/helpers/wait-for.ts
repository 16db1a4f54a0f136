/**
 * Polls `check` until it returns a value other than undefined/false, or throws after `timeoutMs`
 * with the last error. For conditions that have no event to await (a process recovering).
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 15_000, intervalMs = 25, what = "condition" }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
