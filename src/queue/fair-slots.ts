/**
 * Handler slots shared fairly across accounts (restaurant companies). A task waits in its
 * account's line; each slot that frees goes to the waiting account that runs the fewest tasks now,
 * the one served longest ago among equals. One company's flood of read-ahead entries then holds
 * its own line, not every other company's: another company's event waits for one slot to free,
 * not for the flood. With one account it runs as p-limit does (first come, first served).
 * `perAccount` caps what one account holds at once (WORKER_CONCURRENCY_PER_ACCOUNT): below
 * `concurrency`, a company whose handlers hang can never take the slots the others need.
 *
 * @example
 * const slots = createFairSlots(10);
 * await slots("acme", () => runHandlers(event));
 */
export function createFairSlots(concurrency: number, perAccount: number = concurrency) {
  // The Map's order is the rotation: the account served goes to the back.
  const lines = new Map<string, (() => void)[]>();
  const running = new Map<string, number>();
  let active = 0;
  const pick = (): string | undefined => {
    let chosen: string | undefined;
    let fewest = Infinity;
    for (const account of lines.keys()) {
      const now = running.get(account) ?? 0;
      if (now < fewest && now < perAccount) [chosen, fewest] = [account, now];
      if (now === 0) break;
    }
    return chosen;
  };
  const startNext = () => {
    while (active < concurrency) {
      const account = pick();
      if (account === undefined) return;
      const line = lines.get(account) ?? [];
      const start = line.shift();
      lines.delete(account);
      if (line.length > 0) lines.set(account, line);
      if (!start) continue;
      active++;
      running.set(account, (running.get(account) ?? 0) + 1);
      start();
    }
  };
  const finished = (account: string) => {
    active--;
    const left = (running.get(account) ?? 1) - 1;
    if (left > 0) running.set(account, left);
    else running.delete(account);
    startNext();
  };
  return <T>(account: string, task: () => Promise<T> | T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const start = () => {
        void Promise.resolve()
          .then(task)
          .then(resolve, reject)
          .finally(() => finished(account));
      };
      const line = lines.get(account);
      if (line) line.push(start);
      else lines.set(account, [start]);
      startNext();
    });
}
