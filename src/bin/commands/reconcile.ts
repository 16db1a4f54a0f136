import { parseArgs } from "node:util";
import { loadConfig } from "../../config/config.js";
import { OperatorActionError } from "../../worker/errors.js";
import { CommandError } from "../command-error.js";
import { directOperatorActions } from "../direct-operator-actions.js";
import { operatorClient, operatorUrl } from "../operator-client.js";

export const help = `svc-webhooks reconcile [--url <url>]

Asks the workers for an active reconciliation pass now (what can still change read through the
API, within the shared rate budget; what webhooks missed becomes change events) and prints the
sync-queue job and when it runs: {"job":"<id>","runs":"now"}, or "after the running pass" when a
pass runs already (it is queued behind it, not dropped). Asked again while that job waits or
runs, it answers the same job. The job goes into the deployment's Redis (REDIS_URL, QUEUE_PREFIX)
for its workers; with --url, through that service's operator API instead (with ADMIN_TOKEN).`;

export async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { url: { type: "string" } }, strict: true });
  if (values.url !== undefined) {
    const client = operatorClient(operatorUrl(values.url), env.ADMIN_TOKEN);
    console.log(JSON.stringify(await client.call("POST", "/sync/reconcile", {})));
    return;
  }
  const config = loadConfig({ ...env, ROLE: "worker" });
  const direct = await directOperatorActions(config, undefined);
  try {
    console.log(JSON.stringify(await direct.actions.requestSync("reconcile")));
  } catch (err) {
    if (err instanceof OperatorActionError) throw new CommandError(`${err.code}: ${err.message}`);
    throw err;
  } finally {
    await direct.close();
  }
}
