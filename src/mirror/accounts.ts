import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { type Kysely, type Selectable, sql } from "kysely";
import type { Logger } from "pino";
import * as z from "zod";
import { API_KEY_FORM, isApiKey } from "../base/api-key.js";
import { type DatabaseSchema } from "./database.js";
import { ACCOUNT_TABLE_NAMES } from "./migrations.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { alertUrlSchema, schemeSecretProblem, SIGNATURE_SCHEMES, type SignatureScheme } from "../config/config.js";
import { AccountError, accountNotFound, AccountsUnavailableError, MirrorFilterError } from "./errors.js";

// The accounts registry: one row per restaurant company that a deployment serves besides the
// env-configured `default` (API_KEY, SIGNING_SECRET), with its API key and signing secrets sealed
// by SECRETS_KEY. The id rule, the sealing, the store and the edge's in-memory directory live
// here together, so the rule an id or a secret must meet has this one home.

/** An account id: a slug that names the company in URLs (`POST /webhooks/{id}`), keys and logs. */
export const ACCOUNT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Signing secrets one account may hold at once: the current one and those a rotation keeps. */
const MAX_SIGNING_SECRETS = 5;

// --- Sealing: AES-256-GCM from node:crypto, a fresh 96-bit nonce per value, and the account and
// field as associated data, so a sealed value copied into another row or column does not open.

export type SecretsBox = ReturnType<typeof createSecretsBox>;

const SEALED_VERSION = "v1";

/** The sealed columns of an account, by the field names the registry takes them under. */
type SealedField = "apiKey" | "signingSecret" | "alertUrl";
/** The associated data a value is sealed with: its account and field, so it opens in that row and column only. */
const sealContext = (id: string, field: SealedField) => `${id}/${field}`;

/** Seals and opens values with a 32-byte key (config's SECRETS_KEY). */
export function createSecretsBox(key: Buffer) {
  if (key.length !== 32) throw new Error("SECRETS_KEY must be 32 bytes");
  return {
    seal(plain: string, context: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return [SEALED_VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
    },
    open(sealed: string, context: string): string {
      const [version, iv = "", tag = "", body = ""] = sealed.split(".");
      if (version !== SEALED_VERSION) throw new Error(`a sealed value of unknown version "${version}"`);
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
        .setAAD(Buffer.from(context))
        .setAuthTag(Buffer.from(tag, "base64url"));
      // A wrong SECRETS_KEY or a tampered value fails here ("Unsupported state or unable to authenticate data").
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}

/**
 * The account an operator read names (`?account=`): `default` when none, else an id as ACCOUNT_ID
 * has it, or a 400 `invalid_filter` naming the parameter. Whether it is registered is not asked: an
 * account removed without purge still has rows to read.
 */
export function accountParam(value: string | undefined): string {
  if (value === undefined || value === DEFAULT_ACCOUNT) return DEFAULT_ACCOUNT;
  if (!ACCOUNT_ID.test(value)) throw new MirrorFilterError("account", "account must be default or an account id (a slug: a-z, 0-9 and -)");
  return value;
}

// --- What an operator sends, checked once for the API, the CLI and the console (and described by
// the operator API's document, http/openapi.ts).

const accountId = z
  .string({ error: "is required" })
  .regex(ACCOUNT_ID, "must be a slug: lower-case letters, digits and -, at most 63, starting with a letter or digit")
  .refine((id) => id !== DEFAULT_ACCOUNT, `"${DEFAULT_ACCOUNT}" is the env-configured company (API_KEY, SIGNING_SECRET)`);
const apiKey = z.string({ error: "is required" }).refine(isApiKey, API_KEY_FORM);
const signingSecret = z
  .string({ error: "is required" })
  .min(16, "must be at least 16 characters")
  .max(512, "must be at most 512 characters");

const signatureScheme = z.enum(SIGNATURE_SCHEMES, { error: `must be one of ${SIGNATURE_SCHEMES.join(", ")}` });
/** A secret that its scheme cannot use (a Standard Webhooks one is whsec_ and base64) is refused, naming the rule. */
const fitsScheme = (secret: string | undefined, scheme: SignatureScheme, ctx: z.RefinementCtx) => {
  const problem = secret === undefined ? undefined : schemeSecretProblem(scheme, secret);
  if (problem) ctx.addIssue({ code: "custom", path: ["signingSecret"], message: `${problem} (signatureScheme is ${scheme})` });
};

/** Where the account's problem notifications also go (ALERT_WEBHOOK_URL's rule); on rotate, null removes it. */
const alertUrl = alertUrlSchema;

export const newAccountSchema = z
  .strictObject({ id: accountId, apiKey, signingSecret, signatureScheme: signatureScheme.default("svc"), alertUrl: alertUrl.optional() })
  .superRefine((a, ctx) => fitsScheme(a.signingSecret, a.signatureScheme, ctx));
export const rotationSchema = z
  .strictObject({
    signingSecret: signingSecret.optional(),
    retireOldSecrets: z.boolean().optional(),
    apiKey: apiKey.optional(),
    alertUrl: alertUrl.nullable().optional(),
    signatureScheme: signatureScheme.optional(),
  })
  .refine(
    (r) =>
      r.signingSecret !== undefined ||
      r.retireOldSecrets === true ||
      r.apiKey !== undefined ||
      r.alertUrl !== undefined ||
      r.signatureScheme !== undefined,
    { message: "names nothing to change: give signingSecret, retireOldSecrets, apiKey, alertUrl or signatureScheme" },
  )
  .refine((r) => r.signatureScheme === undefined || r.signingSecret !== undefined, {
    message: "is required with signatureScheme: the old secrets are the old scheme's",
    path: ["signingSecret"],
  });

/** `input` as `schema` takes it, or an AccountError naming the first field at fault (never echoing its value). */
function checked<T>(schema: z.ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue?.code === "unrecognized_keys")
    throw new AccountError("invalid_account", `unknown field ${issue.keys.join(", ")}`, issue.keys[0]);
  const path = issue?.path.join(".") ?? "";
  const field = path === "" ? undefined : path;
  const message = issue?.message ?? "is invalid";
  throw new AccountError("invalid_account", field ? `${field} ${message}` : message, field);
}

/** An account as lists show it: never a key or a secret. */
export type AccountSummary = ReturnType<typeof summary>;

/**
 * What the API said to an account's key, tried before it is stored (one page of the smallest
 * list): `accepted` (any answer but a refusal), `refused` (401 or 403: the key is not the API's),
 * or `unreachable` (a network error, a timeout or a 5xx: the key could not be tried).
 */
export type KeyTrial = { outcome: "accepted" } | { outcome: "refused"; status: number } | { outcome: "unreachable"; cause: string };

/** How an add or a rotation tries a new key (the operator API's: through the upstream client, on the key's budget). */
export type TryKey = (apiKey: string) => Promise<KeyTrial>;

/** An account added or rotated: `warning` when its new key could not be tried (the API unreachable). */
export type AccountChange = AccountSummary & { warning?: string };

/**
 * The trial's verdict for the registry: a refusal throws `key_refused` (nothing is stored), an
 * API out of reach gives the warning stored accounts are answered with.
 */
async function judgeKey(tryKey: TryKey | undefined, apiKey: string): Promise<{ warning?: string }> {
  if (!tryKey) return {};
  const trial = await tryKey(apiKey);
  if (trial.outcome === "refused")
    throw new AccountError(
      "key_refused",
      `apiKey was refused by the API (${trial.status}): it is not a key of this API; nothing stored`,
      "apiKey",
    );
  if (trial.outcome === "unreachable")
    return { warning: `the API could not be reached to try apiKey (${trial.cause}); the account is stored and its sync retries` };
  return {};
}

/** An account's credentials, opened: for the edge's verification and the sync's calls only. */
export interface AccountKeys {
  id: string;
  apiKey: string;
  signingSecrets: string[];
  /** Where its problem notifications also go (src/alerts); absent when it has none. */
  alertUrl?: string;
  /**
   * This registration of the id (a removal and a new add give another): what the edge stamps on
   * each event it accepts for the account, and what its seen ids are keyed under.
   */
  incarnation: string;
  /** How its deliveries are signed (the edge verifies with it). */
  signatureScheme: SignatureScheme;
}

/**
 * Whether something that arrived for `account` under `incarnation` still belongs to it: the
 * account is registered, and (when the thing carries one) under that same incarnation. The one
 * rule every writer of a registered account asks (the stream consumer and the events queue before
 * running, the attempt runner before recording, a handler's `ctx.api`, `ctx.mirror` and
 * `ctx.step` at each call): once an account is removed, or removed and added again for another
 * company, what was in flight for it is dropped, never run or stored under the new one. `default`
 * always belongs; so does an account the directory cannot tell yet (not read, or its values do
 * not open), which the database's own guard still covers (0023_account_incarnation).
 */
export function belongsToAccount(
  keysOf: (account: string) => Pick<AccountKeys, "incarnation"> | undefined,
  account: string | undefined,
  incarnation: string | undefined,
): boolean {
  if (account === undefined || account === DEFAULT_ACCOUNT) return true;
  let keys: Pick<AccountKeys, "incarnation"> | undefined;
  try {
    keys = keysOf(account);
  } catch (err) {
    if (err instanceof AccountsUnavailableError) return true;
    throw err;
  }
  return keys !== undefined && (incarnation === undefined || keys.incarnation === incarnation);
}

export interface AccountRegistry {
  /** Adds an account; with `tryKey`, its key is tried first (bad input is refused before any call). */
  add(input: unknown, options?: { tryKey?: TryKey }): Promise<AccountChange>;
  list(): Promise<AccountSummary[]>;
  /**
   * Every account's credentials, opened (the edge's directory, the sync). An account whose values
   * do not open (another SECRETS_KEY, or none) is left out and named to `onUnopened`.
   */
  keys(options?: { onUnopened?: (id: string) => void }): Promise<AccountKeys[]>;
  /** With `tryKey`, a new `apiKey` is tried first. */
  rotate(id: string, input: unknown, options?: { tryKey?: TryKey }): Promise<AccountChange>;
  /** Removes the account (its endpoint and sync stop); `purge` also deletes its rows, events and steps. */
  remove(id: string, options?: { purge?: boolean }): Promise<void>;
  /** Changes whenever an account is added, rotated or removed: the directory's cheap poll. */
  version(): Promise<string>;
}

/** The row's scheme: only the registry writes it, always one of SIGNATURE_SCHEMES. */
const schemeOf = (row: Selectable<DatabaseSchema["accounts"]>) => row.signature_scheme as SignatureScheme;

/**
 * The secrets a rotation leaves (sealed, newest first) and the scheme they are under: a rotation
 * adds one, retiring keeps only the newest, and a change of scheme keeps only the new one, which
 * must fit that scheme; an account holds at most MAX_SIGNING_SECRETS.
 */
function rotatedSecrets(
  row: Selectable<DatabaseSchema["accounts"]>,
  change: z.infer<typeof rotationSchema>,
  seal: (secret: string) => string,
): { scheme: SignatureScheme; secrets: string[] } {
  const scheme = change.signatureScheme ?? schemeOf(row);
  const problem = change.signingSecret === undefined ? undefined : schemeSecretProblem(scheme, change.signingSecret);
  if (problem) throw new AccountError("invalid_account", `signingSecret ${problem} (signatureScheme is ${scheme})`, "signingSecret");
  let secrets = change.signingSecret === undefined ? row.signing_secrets : [seal(change.signingSecret), ...row.signing_secrets];
  if (change.retireOldSecrets || scheme !== row.signature_scheme) secrets = secrets.slice(0, 1);
  if (secrets.length > MAX_SIGNING_SECRETS)
    throw new AccountError(
      "invalid_account",
      `signingSecret: an account holds at most ${MAX_SIGNING_SECRETS} secrets; retire old ones first`,
      "signingSecret",
    );
  return { scheme, secrets };
}

const summary = (row: Selectable<DatabaseSchema["accounts"]>) => ({
  id: row.id,
  signingSecrets: row.signing_secrets.length,
  /** Whether it names its own URL for problem notifications (never the URL: it may be a credential). */
  alertUrl: row.alert_url !== null,
  signatureScheme: schemeOf(row),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/**
 * The registry over the `accounts` table. Without a box (no SECRETS_KEY) it lists and removes,
 * but refuses to add or rotate, naming SECRETS_KEY; no value is ever stored in clear.
 */
export function createAccountRegistry(db: Kysely<DatabaseSchema>, box: SecretsBox | undefined): AccountRegistry {
  const sealer = (): SecretsBox => {
    if (box) return box;
    throw new AccountError("secrets_key_missing", "SECRETS_KEY is not set: account keys and secrets are stored encrypted with it");
  };
  const sealKey = (id: string, key: string) => sealer().seal(key, sealContext(id, "apiKey"));
  const sealSecret = (id: string, secret: string) => sealer().seal(secret, sealContext(id, "signingSecret"));
  const sealAlertUrl = (id: string, url: string | null | undefined) =>
    url == null ? null : sealer().seal(url, sealContext(id, "alertUrl"));
  /**
   * What `keys` opened last, by account, with the sealed values it opened: every registration makes
   * each process read the registry again, and a read opens only what changed since (each seal has
   * a fresh nonce, so unchanged sealed values are the same plain ones). Opening all of them on each
   * read costs ~35 ms at 1,000 accounts, and 1,000 registrations make 1,000 reads.
   */
  let opened = new Map<string, { sealed: string; keys: AccountKeys }>();

  return {
    async add(input, { tryKey } = {}) {
      const account = checked(newAccountSchema, input);
      // Refused before a call when the id is taken; a race past this check still ends in the insert's 409.
      if (await db.selectFrom("accounts").select("id").where("id", "=", account.id).executeTakeFirst())
        throw new AccountError("account_exists", `account ${account.id} exists already`, "id");
      const judged = await judgeKey(tryKey, account.apiKey);
      const row = await db
        .insertInto("accounts")
        .values({
          id: account.id,
          api_key: sealKey(account.id, account.apiKey),
          signing_secrets: [sealSecret(account.id, account.signingSecret)],
          alert_url: sealAlertUrl(account.id, account.alertUrl),
          signature_scheme: account.signatureScheme,
        })
        .onConflict((oc) => oc.column("id").doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new AccountError("account_exists", `account ${account.id} exists already`, "id");
      return { ...summary(row), ...judged };
    },

    async list() {
      return (await db.selectFrom("accounts").selectAll().orderBy("id").execute()).map(summary);
    },

    async keys({ onUnopened } = {}) {
      const rows = await db.selectFrom("accounts").selectAll().orderBy("id").execute();
      const next = new Map<string, { sealed: string; keys: AccountKeys }>();
      for (const r of rows) {
        const sealed = [r.incarnation, r.signature_scheme, r.api_key, ...r.signing_secrets, r.alert_url ?? ""].join(" ");
        const known = opened.get(r.id);
        if (known?.sealed === sealed) {
          next.set(r.id, known);
          continue;
        }
        try {
          const open = (value: string, field: SealedField) => sealer().open(value, sealContext(r.id, field));
          const keys = {
            id: r.id,
            incarnation: r.incarnation,
            apiKey: open(r.api_key, "apiKey"),
            signingSecrets: r.signing_secrets.map((s) => open(s, "signingSecret")),
            ...(r.alert_url === null ? {} : { alertUrl: open(r.alert_url, "alertUrl") }),
            signatureScheme: schemeOf(r),
          };
          next.set(r.id, { sealed, keys });
        } catch {
          onUnopened?.(r.id);
        }
      }
      opened = next;
      return [...next.values()].map((o) => o.keys);
    },

    async rotate(id, input, { tryKey } = {}) {
      const change = checked(rotationSchema, input);
      const judged = change.apiKey === undefined ? {} : await judgeKey(tryKey, change.apiKey);
      const rotated = await db.transaction().execute(async (tx) => {
        const row = await tx.selectFrom("accounts").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
        if (!row) throw accountNotFound(id);
        const { scheme, secrets } = rotatedSecrets(row, change, (secret) => sealSecret(id, secret));
        const updated = await tx
          .updateTable("accounts")
          .set({
            signing_secrets: secrets,
            signature_scheme: scheme,
            ...(change.apiKey === undefined ? {} : { api_key: sealKey(id, change.apiKey) }),
            ...(change.alertUrl === undefined ? {} : { alert_url: sealAlertUrl(id, change.alertUrl) }),
            updated_at: sql`clock_timestamp()`,
          })
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return summary(updated);
      });
      return { ...rotated, ...judged };
    },

    async remove(id, { purge = false } = {}) {
      await db.transaction().execute(async (tx) => {
        const gone = await tx.deleteFrom("accounts").where("id", "=", id).returning("id").executeTakeFirst();
        if (!gone) throw accountNotFound(id);
        if (purge) for (const table of ACCOUNT_TABLE_NAMES) await sql`delete from ${sql.table(table)} where account_id = ${id}`.execute(tx);
      });
    },

    async version() {
      const row = await db
        .selectFrom("accounts")
        .select((eb) => [eb.fn.countAll<string>().as("n"), sql<string | null>`max(updated_at)::text`.as("last")])
        .executeTakeFirstOrThrow();
      return `${row.n}:${row.last ?? ""}`;
    },
  };
}

/** The edge's and the workers' view of the registry, in memory: what a delivery or a call needs, without a query. */
export interface AccountDirectory {
  /** The account's credentials; undefined when no such account is registered; throws AccountsUnavailableError when unknown yet. */
  get(id: string): AccountKeys | undefined;
  /** Reads the registry now and then on every poll (after the migrations ran). */
  start(): Promise<void>;
  /** Reads the registry again now (this process just changed it). */
  reload(): Promise<void>;
  close(): void;
}

/**
 * Keeps every account's credentials in memory and reads the registry again whenever its version
 * changes (one small query per `pollMs`), so an account removed in another process stops being
 * served within a poll. An account whose values do not open (SECRETS_KEY changed) is unavailable
 * alone; the others are served. Until the first read succeeds every lookup is unavailable. A
 * failing read is logged once, and once more when reads succeed again.
 */
export function createAccountDirectory(
  registry: Pick<AccountRegistry, "keys" | "version">,
  options: {
    pollMs?: number;
    logger?: Pick<Logger, "warn" | "info">;
    /**
     * Told after each read that changed the accounts held: those the read before did not hold
     * (every account on the first read), and how many there are now.
     */
    onChange?: (change: { added: string[]; count: number }) => void;
  } = {},
): AccountDirectory {
  let accounts: Map<string, AccountKeys | AccountsUnavailableError> | undefined;
  let seen: string | undefined;
  let reading: Promise<void> | undefined;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;
  const read = async () => {
    const version = await registry.version();
    if (version === seen && accounts) return;
    const next = new Map<string, AccountKeys | AccountsUnavailableError>();
    const opened = await registry.keys({
      onUnopened: (id) => {
        next.set(id, unopened(id));
        options.logger?.warn({ account: id }, "an account's key and secrets do not open with SECRETS_KEY: its deliveries answer 503");
      },
    });
    for (const account of opened) next.set(account.id, account);
    const before = accounts;
    accounts = next;
    seen = version;
    const added = [...next.keys()].filter((id) => !before?.has(id));
    if (added.length > 0 || next.size !== before?.size) options.onChange?.({ added, count: next.size });
  };
  const readLogged = () =>
    read()
      .then(() => {
        if (failing) options.logger?.info("the accounts registry is read again");
        failing = false;
      })
      .catch((err: unknown) => {
        if (!failing)
          options.logger?.warn({ err: (err as Error).message }, "the accounts registry cannot be read; the last one read is served");
        failing = true;
        throw err;
      });
  // A poll joins a read in flight; a reload after a change here reads after it, since that read may predate the change.
  const readNext = (after: boolean) => {
    const run = reading && after ? reading.catch(() => undefined).then(readLogged) : (reading ?? readLogged());
    const current: Promise<void> = run.finally(() => {
      if (reading === current) reading = undefined;
    });
    reading = current;
    return current;
  };
  const reload = () => readNext(true);
  return {
    get(id) {
      if (!accounts) throw new AccountsUnavailableError("the accounts registry has not been read yet; retry later");
      const found = accounts.get(id);
      if (found instanceof AccountsUnavailableError) throw found;
      return found;
    },
    async start() {
      timer ??= setInterval(() => void readNext(false).catch(() => undefined), options.pollMs ?? 1000).unref();
      await reload().catch(() => undefined);
    },
    reload,
    close: () => clearInterval(timer),
  };
}

const unopened = (id: string) => new AccountsUnavailableError(`account ${id}'s secrets do not open with this SECRETS_KEY; retry later`);
