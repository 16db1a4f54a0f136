import { parseArgs } from "node:util";
import { loadConfig } from "../../config/index.js";
import { openMigratedStorage } from "../open-storage-from-env.js";
import { createRedisConnection } from "../../redis/connection.js";
import { createMirrorWriter } from "../../worker/sync/mirror-writer.js";
import { sweepAll } from "../../worker/sync/sweep-all.js";
import { SYNCED_KINDS, type SyncedKind } from "../../worker/sync/synced-kinds.js";
import { upstreamFromConfig } from "../../worker/upstream-from-config.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks backfill [--kinds orders,bookings,menu-items] [--no-changes]

Sweeps every order, booking and menu item through the API into the mirror, within the shared
rate budget (it runs at low priority, so webhook refreshes keep their share). Needs REDIS_URL,
API_BASE_URL and API_KEY, and the database (DATABASE_URL, or the embedded one under DATA_DIR).
Every record it changes produces a change event (source "backfill"), relayed to your handlers by
the running workers.
  --no-changes   write the mirror without producing change events (a first import)`;

const KINDS = SYNCED_KINDS;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { kinds: { type: "string" }, "no-changes": { type: "boolean" } }, strict: true });
  const kinds = values.kinds ? values.kinds.split(",").map((k) => k.trim()) : KINDS;
  const wrong = kinds.filter((k) => !KINDS.includes(k as SyncedKind));
  if (wrong.length > 0) throw new UsageError(`--kinds takes ${KINDS.join(", ")}; not ${wrong.join(", ")}`);

  const config = loadConfig({ ...process.env, ROLE: "worker" });
  if (!config.api) throw new UsageError("backfill needs API_BASE_URL and API_KEY");
  const storage = await openMigratedStorage(config);
  const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
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
    console.log(JSON.stringify({ backfilled: totals }));
  } finally {
    await connection.quit();
    await storage.close();
  }
}
