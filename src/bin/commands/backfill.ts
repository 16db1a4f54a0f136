import { parseArgs } from "node:util";
import { loadConfig } from "../../config/index.js";
import { openMigratedStorage } from "../open-storage-from-env.js";
import { openCliRedis } from "../cli-redis.js";
import { operatorClient, operatorUrl } from "../operator-client.js";
import { createMirrorWriter } from "../../worker/sync/mirror-writer.js";
import { sweepAll } from "../../worker/sync/sweep-all.js";
import { SYNCED_KINDS, type SyncedKind } from "../../worker/sync/synced-kinds.js";
import { upstreamFromConfig } from "../../worker/upstream-from-config.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks backfill [--kinds orders,bookings,menu-items] [--no-changes] [--url <url>]

With a service running (--url, default http://127.0.0.1:$PORT, with ADMIN_TOKEN) it asks the
service's workers for the sweep (POST /sync/backfill) and prints the job; asked again while that
job waits, it answers the same job. Only when nothing listens there (or with --no-changes) does
it run the sweep itself, as follows.

Sweeps every order, booking and menu item through the API into the mirror, within the shared
rate budget (it runs at low priority, so webhook refreshes keep their share). Needs REDIS_URL,
API_BASE_URL and API_KEY, and the database (DATABASE_URL, or the embedded one under DATA_DIR).
Every record it changes produces a change event (source "backfill"), relayed to your handlers by
the running workers. A record the mirror cannot hold (a NUL in a string, a date like 2026-02-30)
is set aside in rejected_records with its reason, named on stderr and counted in the summary
("rejected"); the rest is written and the command still exits 0.
  --no-changes   write the mirror without producing change events (a first import)`;

const KINDS = SYNCED_KINDS;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { kinds: { type: "string" }, "no-changes": { type: "boolean" }, url: { type: "string" } },
    strict: true,
  });
  const kinds = values.kinds ? values.kinds.split(",").map((k) => k.trim()) : KINDS;
  const wrong = kinds.filter((k) => !KINDS.includes(k as SyncedKind));
  if (wrong.length > 0) throw new UsageError(`--kinds takes ${KINDS.join(", ")}; not ${wrong.join(", ")}`);
  const url = operatorUrl(values.url);

  const config = loadConfig({ ...process.env, ROLE: "worker" });
  // --no-changes is a first import by hand: the service's sweep always produces change events.
  const client = values["no-changes"] ? undefined : await operatorClient(url, process.env.ADMIN_TOKEN);
  if (client) {
    console.log(JSON.stringify(await client.call("POST", "/sync/backfill", values.kinds ? { kinds } : {})));
    return;
  }
  if (!config.api) throw new UsageError("backfill needs API_BASE_URL and API_KEY");
  // A record the mirror cannot hold is set aside (rejected_records) and the sweep goes on: one
  // line each on stderr (id shortened, never the values), a count in the summary, exit 0.
  const rejected: Record<string, number> = {};
  const storage = await openMigratedStorage(config, {
    onRejected(records) {
      for (const r of records) {
        rejected[r.kind] = (rejected[r.kind] ?? 0) + 1;
        process.stderr.write(`\nrefused (${r.reason}): ${r.message}\n`);
      }
    },
  });
  let connection;
  try {
    connection = await openCliRedis(config);
  } catch (err) {
    await storage.close();
    throw err;
  }
  try {
    const { api } = upstreamFromConfig(config.api, connection, config.queuePrefix);
    const totals = await sweepAll({
      api,
      mirror: storage.mirror,
      kinds: kinds as SyncedKind[],
      priority: "low",
      ...(values["no-changes"] ? {} : { changes: { writer: createMirrorWriter(storage.mirror), source: "backfill" as const } }),
      onProgress: (p) => process.stderr.write(`\r${p.kind}: ${p.records} records, ${p.pages} pages${p.done ? " — done\n" : ""}`),
    });
    console.log(JSON.stringify({ backfilled: totals, rejected }));
  } finally {
    await connection.quit();
    await storage.close();
  }
}
