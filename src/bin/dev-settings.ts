import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { z } from "zod";
import { freePort } from "../redis/local-server.js";
import { CommandError } from "./command-error.js";

/** Kept beside the dev database; it holds the dev stack's generated secrets (mode 0600). */
export const DEV_SETTINGS_FILE = "dev-settings.json";

const port = z.number().int().min(1).max(65535);
const settingsSchema = z.object({
  adminToken: z.string().min(16).max(200),
  signingSecret: z.string().min(16).max(200),
  ports: z.object({ service: port, sandbox: port, redis: port }),
});

/** What `npm run dev` keeps from one run to the next, so the exported CLI settings stay valid. */
export type DevSettings = z.infer<typeof settingsSchema>;
export type DevPort = keyof DevSettings["ports"];

/** A saved port another process holds now: this run uses `to`, and saves it for the next. */
export interface PortMove {
  what: DevPort;
  from: number;
  to: number;
}

const FIRST_PORTS = { service: 3000, sandbox: 4010 };

/**
 * Reads the dev stack's settings from `dir` (generating them on the first run, or all anew with
 * `fresh`), moves each saved port that is taken now to a free one, and writes them back.
 */
export async function devSettings(
  dir: string,
  { fresh = false } = {},
): Promise<{ settings: DevSettings; file: string; created: boolean; moved: PortMove[] }> {
  const file = join(dir, DEV_SETTINGS_FILE);
  const saved = fresh || !existsSync(file) ? undefined : readSettings(file);
  const settings: DevSettings = saved ?? {
    // Local secrets for the dev stack only; nothing here is a production secret.
    adminToken: `dev-admin-${randomBytes(12).toString("hex")}`,
    signingSecret: `whsec_dev_${randomBytes(12).toString("hex")}`,
    ports: { ...FIRST_PORTS, redis: await freePort() },
  };
  const moved: PortMove[] = [];
  for (const what of ["service", "sandbox", "redis"] as const) {
    const from = settings.ports[what];
    if (await portIsFree(from)) continue;
    settings.ports[what] = await freePort();
    moved.push({ what, from, to: settings.ports[what] });
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  // `mode` applies only when the file is created: a file copied in with wider rights is narrowed.
  chmodSync(file, 0o600);
  return { settings, file, created: saved === undefined, moved };
}

function readSettings(file: string): DevSettings {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    // Not the parser's message: it quotes the file, which holds secrets.
    throw new CommandError(`${file} is not valid JSON; start with --fresh to make new dev settings`);
  }
  const parsed = settingsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CommandError(
      `${file}: ${issue ? `${issue.path.join(".") || "the file"} ${issue.message}` : "unreadable"}; start with --fresh to make new dev settings`,
    );
  }
  return parsed.data;
}

/** Can this process listen on 127.0.0.1:`port` now? (Another process may take it before the stack does.) */
function portIsFree(candidate: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(candidate, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
