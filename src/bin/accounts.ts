// `accounts`: the registered companies (mirror/accounts.ts) from the shell, on the database the
// environment names (through the running service's embedded server when it holds DATA_DIR), or at
// --url through the operator API. Keys and secrets come from the environment, never from the
// command line, where `ps` and the shell's history would keep them.
import { loadConfig } from "../config/config.js";
import { AccountChange, AccountList, AccountRemoved, type ListedAccountAnswer } from "../http/operator-schemas.js";
import { type AccountRegistry, createAccountRegistry, createSecretsBox, type TryKey } from "../mirror/accounts.js";
import { createRedisConnection } from "../redis/redis.js";
import { tryApiKey, upstreamFromConfig } from "../worker/upstream.js";
import { printable } from "../base/text.js";
import { withSyncState } from "../sync/first-import.js";
import { withKeyRefused } from "../problems/problem-store.js";
import { type Answer, answer, type Command, didYouMean, flagOptions, parseFlags, plural, UsageError } from "./command.js";
import { openMigratedStorage, operatorClient, readyWithin } from "./operator.js";

const help = `svc-webhooks accounts list [--url <url>]
svc-webhooks accounts add <id> [--url <url>]
svc-webhooks accounts rotate <id> [--retire-old] [--url <url>]
svc-webhooks accounts remove <id> [--purge] [--url <url>]

The restaurant companies this deployment serves besides the env-configured one (default), each
with its API key and signing secrets, stored sealed with SECRETS_KEY (docs/accounts.md). An
account's webhooks go to POST /webhooks/<id>.
  add       registers <id> (a slug) with the key in ACCOUNT_API_KEY and the signing secret in
            ACCOUNT_SIGNING_SECRET (read from the environment, never from flags)
  rotate    adds the signing secret in ACCOUNT_SIGNING_SECRET (the newest is listed first; the old
            ones still verify), replaces the key with ACCOUNT_API_KEY; either or both
  ACCOUNT_ALERT_URL  with add or rotate: the account's own URL for problem notifications
            (docs/operations.md, Alerts)
  --retire-old  with rotate: keep only the newest signing secret
  remove    stops <id>'s endpoint and sync at once
  --purge   with remove: also delete its mirror rows, events and steps
  --url     a running service's operator API instead (with ADMIN_TOKEN)
Directly on the database (DATABASE_URL, or the embedded one under DATA_DIR), add and rotate need
SECRETS_KEY, the service's own.`;

const VERBS = ["list", "add", "rotate", "remove"] as const;

/** The registry's calls, on the database here or at --url (typed as the operator API answers them); the list with each account's sync. */
type Accounts = Pick<AccountRegistry, "add" | "rotate" | "remove"> & { list(): Promise<ListedAccountAnswer[]> };

async function runAccounts(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values, positionals } = parseFlags({
    args: argv,
    options: flagOptions(["url"], ["retire-old", "purge"]),
    allowPositionals: true,
    strict: true,
  });
  const [verb, id, ...extra] = positionals;
  if (!verb || !(VERBS as readonly string[]).includes(verb))
    throw new UsageError(`accounts takes ${VERBS.join(", ")}${verb ? didYouMean(verb, VERBS) : ""}`);
  if (verb === "list" ? id !== undefined : !id || extra.length > 0)
    throw new UsageError(`accounts ${verb} takes ${verb === "list" ? "no id" : "one account id"}`);
  if (values["retire-old"] && verb !== "rotate") throw new UsageError("--retire-old goes with rotate");
  if (values.purge && verb !== "remove") throw new UsageError("--purge goes with remove");
  const secrets = {
    ...(env.ACCOUNT_API_KEY ? { apiKey: env.ACCOUNT_API_KEY } : {}),
    ...(env.ACCOUNT_SIGNING_SECRET ? { signingSecret: env.ACCOUNT_SIGNING_SECRET } : {}),
    // A Slack URL is its own credential: from the environment too.
    ...(env.ACCOUNT_ALERT_URL ? { alertUrl: env.ACCOUNT_ALERT_URL } : {}),
  };
  if (verb === "add" && (!secrets.apiKey || !secrets.signingSecret))
    throw new UsageError("accounts add reads the account's key and secret from ACCOUNT_API_KEY and ACCOUNT_SIGNING_SECRET: set both");
  return withAccounts(values.url, env, async (accounts) => {
    const account = id ?? "";
    if (verb === "list") {
      const all = await accounts.list();
      const lines = all.map(
        (a) => `${printable(a.id)}: ${syncLine(a.sync)}; ${plural(a.signingSecrets, "signing secret")}, since ${a.createdAt}`,
      );
      return answer({ data: all }, [`${plural(all.length, "account")} besides default`, ...lines].join("\n"));
    }
    if (verb === "add") {
      const added = await accounts.add({ id: account, ...secrets });
      const warning = added.warning === undefined ? "" : `\nwarning: ${added.warning}`;
      return answer(added, `account ${printable(added.id)} added: its webhooks go to POST /webhooks/${added.id}${warning}`);
    }
    if (verb === "rotate") {
      const rotated = await accounts.rotate(account, { ...secrets, ...(values["retire-old"] ? { retireOldSecrets: true } : {}) });
      const warning = rotated.warning === undefined ? "" : `\nwarning: ${rotated.warning}`;
      return answer(
        rotated,
        `account ${printable(rotated.id)} rotated: ${plural(rotated.signingSecrets, "signing secret")} verify its webhooks${warning}`,
      );
    }
    await accounts.remove(account, { purge: values.purge === true });
    return answer(
      { id: account, removed: true, purged: values.purge === true },
      `account ${printable(account)} removed${values.purge ? ", with its rows, events and steps" : ""}`,
    );
  });
}

/** `importing (orders 1,200 read, bookings 0 read, menu-items 0 read)`, `live`, or `key_refused (…)`. */
function syncLine(sync: ListedAccountAnswer["sync"]): string {
  if (sync.state === "live") return "live";
  if (sync.state === "key_refused") return "key_refused (the API refuses its key: accounts rotate it with ACCOUNT_API_KEY)";
  const kinds = Object.entries(sync.kinds).filter(([, k]) => !k.walked);
  return `importing (${kinds.map(([kind, k]) => `${kind} ${k.records.toLocaleString("en-US")} read`).join(", ")})`;
}

/** Runs `work` on the accounts at --url, else on the registry of the database the environment names. */
async function withAccounts(url: string | undefined, env: NodeJS.ProcessEnv, work: (accounts: Accounts) => Promise<Answer>) {
  if (url !== undefined) {
    const api = operatorClient(url, env);
    return work({
      list: async () => (await api.call("GET", "/accounts", AccountList)).data,
      add: (input) => api.call("POST", "/accounts", AccountChange, input),
      rotate: (id, input) => api.call("POST", `/accounts/${encodeURIComponent(id)}/rotate`, AccountChange, input),
      remove: async (id, options) => {
        await api.call("DELETE", `/accounts/${encodeURIComponent(id)}?purge=${options?.purge === true}`, AccountRemoved);
      },
    });
  }
  const config = loadConfig({ ...env, ROLE: "worker" });
  const storage = await openMigratedStorage(config, { attach: true });
  // A new key is tried as the operator API tries it: one page, on the key's budget in Redis.
  const redis = config.api ? createRedisConnection(config.redisUrl, "web", { cluster: config.redisCluster }) : undefined;
  // Its outages are the trial's answer ("unreachable"), not a crash of the command.
  redis?.on("error", () => undefined);
  try {
    const registry = createAccountRegistry(storage.database.db, config.secretsKey ? createSecretsBox(config.secretsKey) : undefined);
    const api = config.api;
    const trying: { tryKey?: TryKey } =
      api && redis
        ? {
            tryKey: async (apiKey) =>
              (await readyWithin(redis))
                ? tryApiKey(upstreamFromConfig({ ...api, apiKey }, redis, config.queuePrefix).api)
                : { outcome: "unreachable", cause: "Redis, which holds the key's shared budget, does not answer (REDIS_URL)" },
          }
        : {};
    return await work({
      ...registry,
      add: (input) => registry.add(input, trying),
      rotate: (id, input) => registry.rotate(id, input, trying),
      list: async () => withKeyRefused(storage.database.db, await withSyncState(storage.database.db, await registry.list())),
    });
  } finally {
    redis?.disconnect();
    await storage.close();
  }
}

export const accounts: Command = { help, answers: true, run: runAccounts };
