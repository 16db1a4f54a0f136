/** What the dev stack prints once it is up (and again on Enter): where to look, and the environment that reaches it. */
export function devBanner(b: {
  url: string;
  sandboxUrl: string;
  redis: { url: string; started?: unknown };
  adminToken: string;
  signingSecret: string;
  apiKey: string;
  /** Where the secrets come from, one line. */
  secrets: string;
  database: string;
  queuePrefix: string;
  /** The embedded database's directory: the CLI finds the stack's store (and that the stack holds it) there. */
  dataDir?: string;
  /** Things that changed since the last run (a saved port taken by another process). */
  notes: string[];
  /** Whether Enter prints this again (stdin is a terminal). */
  onEnter: boolean;
}): string {
  return [
    "",
    "svc-webhooks local stack is up",
    `  console            ${b.url}/console        (user: any, password: the ADMIN_TOKEN below)`,
    `  webhook endpoint   POST ${b.url}/webhooks   (the sandbox delivers here)`,
    `  queue dashboard    ${b.url}/admin/queues`,
    `  mirror             ${b.url}/mirror/orders?restaurantId=rest_1`,
    `  metrics            ${b.url}/metrics`,
    `  sandbox API        ${b.sandboxUrl}/api/v1   state: ${b.sandboxUrl}/_sandbox/state`,
    `                     (seeded the same at each start; its changes since the last start are not kept)`,
    `  redis              ${b.redis.url}${b.redis.started ? " (started for this run, emptied at each start)" : ""}`,
    `  database           ${b.database}`,
    `  secrets            ${b.secrets}; the sandbox's API key is fixed for dev`,
    ...b.notes.map((note) => `  note               ${note}`),
    "",
    "The CLI reaches this stack with (paste into another shell):",
    `  export REDIS_URL=${b.redis.url} QUEUE_PREFIX=${b.queuePrefix} PORT=${new URL(b.url).port}${b.dataDir ? ` DATA_DIR=${b.dataDir}` : ""}`,
    `  export API_BASE_URL=${b.sandboxUrl} API_KEY=${b.apiKey}`,
    `  export ADMIN_TOKEN=${b.adminToken} SIGNING_SECRET=${b.signingSecret}`,
    "then, e.g.:",
    "  npm run cli -- trigger review.created",
    "  npm run cli -- replay --status failed --dry-run",
    "  npm run cli -- replay --id <event-id>",
    "  npm run cli -- reconcile",
    `${b.onEnter ? "Enter shows this again; " : ""}Ctrl-C stops everything.`,
    "",
  ].join("\n");
}
