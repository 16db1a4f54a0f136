import { parseArgs } from "node:util";
import { loadConfig } from "../../config/index.js";
import { OperatorActionError } from "../../worker/operator-action-error.js";
import { CommandError } from "../command-error.js";
import { directOperatorActions } from "../direct-operator-actions.js";
import { operatorClient, operatorUrl } from "../operator-client.js";

export const help = `svc-webhooks reconcile [--url <url>]

Asks the workers for an active reconciliation pass now (what can still change read through the
API, within the shared rate budget; what webhooks missed becomes change events) and prints the
sync-queue job and when it runs: {"job":"<id>","runs":"now"}, or "after the running pass" when a
pass runs already (it is queued behind it, not dropped). Asked again while that job waits or
runs, it answers the same job. Through the running service (--url, default http://127.0.0.1:$PORT, with ADMIN_TOKEN);
when nothing listens there, the job goes straight into Redis (REDIS_URL) for the next worker.`;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { url: { type: "string" } }, strict: true });
  const url = operatorUrl(values.url);
  const client = await operatorClient(url, process.env.ADMIN_TOKEN);
  if (client) {
    console.log(JSON.stringify(await client.call("POST", "/sync/reconcile", {})));
    return;
  }
  const config = loadConfig({ ...process.env, ROLE: "worker" });
  const direct = await directOperatorActions(config, { withStorage: false });
  try {
    console.log(JSON.stringify(await direct.actions.requestSync("reconcile")));
  } catch (err) {
    if (err instanceof OperatorActionError) throw new CommandError(`${err.code}: ${err.message}`);
    throw err;
  } finally {
    await direct.close();
  }
}
