/**
 * The OS user the embedded PostgreSQL server runs as. Not root, ever: `initdb` and `postgres`
 * refuse uid 0. A service that is not root runs the server as itself (nothing to hand over). A
 * service running as root runs it as a system user of its own, `svc-webhooks-db`, created on first
 * need as Debian's postgresql package and most daemons create theirs.
 *
 * Why a user of its own and not another:
 * - `nobody` is shared by unrelated daemons (NFS's squashed clients, other services dropping
 *   privileges): each of them could read the server's files and its `/proc/<pid>/environ`, and
 *   reach its data directory through `/proc/<pid>/cwd`.
 * - `postgres` belongs to the machine's own PostgreSQL, which would then own our cluster and we
 *   its.
 * - A bare uid with no passwd entry cannot run: `initdb` and `postgres --single` look their user
 *   up by uid and stop ("could not look up effective user ID").
 * - DATA_DIR's owner is root when the service runs as root in its home.
 * Where no user can be made (no `useradd`, a read-only /etc) it falls back to `nobody`, with a
 * warning saying so.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import type { Logger } from "../logging/logger.js";
import { EmbeddedServerError } from "./errors.js";

const run = promisify(execFile);

/** An OS user other than ours to run the server as. */
export interface ServerUser {
  uid: number;
  gid: number;
  name: string;
}

/** The system user a root service runs its embedded server as. */
export const SERVER_USER_NAME = "svc-webhooks-db";
const FALLBACK_USER_NAME = "nobody";

/** undefined: the server runs as the service's own user (the service is not root). */
export async function embeddedServerUser(logger?: Logger): Promise<ServerUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const found = await lookUpUser(SERVER_USER_NAME);
  if (found) return checked(found);
  const made = await createSystemUser(SERVER_USER_NAME);
  // Another process may have made it between our look-up and useradd (exit 9: the name is taken).
  const again = await lookUpUser(SERVER_USER_NAME);
  if (again) {
    if (made === undefined)
      logger?.info({ user: SERVER_USER_NAME, uid: again.uid }, "created the system user the embedded database runs as");
    return checked(again);
  }
  logger?.warn(
    { user: FALLBACK_USER_NAME, why: made },
    `could not create the system user ${SERVER_USER_NAME} for the embedded database: it runs as ${FALLBACK_USER_NAME}, which other daemons may share (docs/database.md)`,
  );
  return checked((await lookUpUser(FALLBACK_USER_NAME)) ?? { uid: 65534, gid: 65534, name: FALLBACK_USER_NAME });
}

/** A user named so, uid 0: PostgreSQL would refuse it, and it is not what we made. */
function checked(user: ServerUser): ServerUser {
  if (user.uid === 0)
    throw new EmbeddedServerError(
      `the system user ${user.name} has uid 0; the embedded database runs as an unprivileged user of that name: give it its own uid, or set DATABASE_URL`,
    );
  return user;
}

async function lookUpUser(name: string): Promise<ServerUser | undefined> {
  const id = (flag: string) =>
    run("id", [flag, name]).then(
      ({ stdout }) => Number(stdout.trim()),
      () => undefined,
    );
  const [uid, gid] = await Promise.all([id("-u"), id("-g")]);
  return uid === undefined || gid === undefined || !Number.isInteger(uid) || !Number.isInteger(gid) ? undefined : { uid, gid, name };
}

/** Makes a system user with a group of its own, no home and no login; returns why it could not (undefined: made). */
async function createSystemUser(name: string): Promise<string | undefined> {
  const shell = ["/usr/sbin/nologin", "/sbin/nologin"].find((path) => existsSync(path)) ?? "/bin/false";
  try {
    await run("useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", shell, name]);
    return undefined;
  } catch (error) {
    const { code, stderr } = error as { code?: unknown; stderr?: string };
    return code === "ENOENT" ? "useradd is not installed" : (stderr?.trim().split("\n").pop()?.slice(0, 200) ?? String(code));
  }
}
