import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, inject, it } from "vitest";
import {
  DEV_SETTINGS_FILE,
  devBanner,
  devRedis,
  devSettings,
  showBannerOnEnter,
  watchHandlersModule,
  type HandlersModuleWatch,
} from "../../src/bin/dev.js";
import { lockDataDir } from "../../src/mirror/embedded-server.js";
import { freePort, redisAnswers } from "../../src/redis/local-server.js";
import { cli } from "../helpers/cli-main.js";
import { createLogger } from "../../src/logging/logger.js";
import { loadHandlersModule } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

const tempDir = () => mkdtempSync(join(tmpdir(), "svc-dev-loop-"));

describe("dev settings (kept across `npm run dev` runs)", () => {
  let holder: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => (holder ? holder.close(r) : r(undefined)));
    holder = undefined;
  });

  it("gives the same token, signing secret and ports on the next run, from a file only its owner reads", async () => {
    const dir = tempDir();
    const first = await devSettings(dir);
    const second = await devSettings(dir);
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.settings).toEqual(first.settings);
    expect(statSync(join(dir, DEV_SETTINGS_FILE)).mode & 0o777).toBe(0o600);
  });

  it("makes new secrets with --fresh", async () => {
    const dir = tempDir();
    const first = await devSettings(dir);
    const fresh = await devSettings(dir, { fresh: true });
    expect(fresh.created).toBe(true);
    expect(fresh.settings.adminToken).not.toBe(first.settings.adminToken);
    expect(fresh.settings.signingSecret).not.toBe(first.settings.signingSecret);
  });

  it("moves a saved port another process holds now, says so, and keeps the new one", async () => {
    const dir = tempDir();
    const { settings } = await devSettings(dir);
    holder = createServer();
    await new Promise<void>((r) => holder!.listen(settings.ports.sandbox, "127.0.0.1", r));
    const next = await devSettings(dir);
    expect(next.moved).toEqual([{ what: "sandbox", from: settings.ports.sandbox, to: next.settings.ports.sandbox }]);
    expect(next.settings.ports.sandbox).not.toBe(settings.ports.sandbox);
    expect((await devSettings(dir)).settings.ports.sandbox).toBe(next.settings.ports.sandbox);
  });

  it("refuses a damaged settings file by name, pointing at --fresh, and leaves it as it was", async () => {
    const dir = tempDir();
    const file = join(dir, DEV_SETTINGS_FILE);
    writeFileSync(file, JSON.stringify({ adminToken: "short", signingSecret: "whsec_dev_0123456789abcdef", ports: {} }));
    const before = readFileSync(file, "utf8");
    await expect(devSettings(dir)).rejects.toThrow(`${file}: adminToken`);
    await expect(devSettings(dir)).rejects.toThrow("--fresh");
    expect(readFileSync(file, "utf8")).toBe(before);
    writeFileSync(file, '{"adminToken":"dev-admin-0123456789abcdef", oops');
    await expect(devSettings(dir)).rejects.toThrow(new RegExp(`^${file} is not valid JSON; start with --fresh`));
    await expect(devSettings(dir)).rejects.not.toThrow("dev-admin-0123456789abcdef");
  });
});

describe("dev's Redis (--redis-port)", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("starts its own Redis on the chosen port, even with REDIS_URL answering elsewhere", async () => {
    const port = await freePort();
    const redis = await devRedis(port, inject("redisUrl"), await freePort());
    cleanups.push(() => redis.started?.destroy() ?? Promise.resolve());
    expect(redis.url).toBe(`redis://127.0.0.1:${port}`);
    expect(redis.started).toBeDefined();
    expect(await redisAnswers(redis.url)).toBe(true);
    // A Redis already answering there is used, not started again.
    expect(await devRedis(port, undefined, await freePort())).toEqual({ url: redis.url });
  });

  it("refuses a port something else holds, naming it and the flag", async () => {
    // Accepts connections and never answers, as a service that is not Redis would to a PING.
    const holder = createServer((socket) => cleanups.push(() => Promise.resolve(socket.destroy())));
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise((r) => holder.close(r)));
    const { port } = holder.address() as AddressInfo;
    await expect(devRedis(port, undefined, await freePort())).rejects.toThrow(
      `dev's Redis cannot start: port ${port} is in use by something that is not Redis (choose another with --redis-port)`,
    );
  });
});

/** A dev stack's banner fields, as dev fills them in. */
const BANNER: Parameters<typeof devBanner>[0] = {
  url: "http://127.0.0.1:3000",
  sandboxUrl: "http://127.0.0.1:4010",
  sandboxState: "/tmp/dev/sandbox-state.json",
  redis: { url: "redis://127.0.0.1:6390" },
  adminToken: "dev-admin-0123456789abcdef",
  signingSecret: "whsec_dev_0123456789abcdef",
  apiKey: "svc_live_dev_sandbox_key_not_secret",
  secrets: "as set",
  database: "embedded",
  queuePrefix: "svc",
  notes: [],
  onEnter: false,
};

describe("dev banner", () => {
  it("says the sandbox's records are kept, and where", () => {
    const banner = devBanner(BANNER);
    expect(banner).toContain("its records are kept across runs in /tmp/dev/sandbox-state.json, saved every 10 s and at stop");
    expect(banner).not.toContain("not kept");
    expect(banner).not.toContain("SECRETS_KEY");
  });

  it("carries SECRETS_KEY in its export block when it is set, so the CLI's accounts commands open the registry", () => {
    const banner = devBanner({ ...BANNER, secretsKey: "c2VjcmV0cy1rZXktb2YtdGhpcnR5LXR3by1ieXRlcyE=" });
    expect(banner).toContain(
      "  export ADMIN_TOKEN=dev-admin-0123456789abcdef SIGNING_SECRET=whsec_dev_0123456789abcdef SECRETS_KEY=c2VjcmV0cy1rZXktb2YtdGhpcnR5LXR3by1ieXRlcyE=\n",
    );
  });

  it("exports SANDBOX_URL, so trigger acts through the stack's sandbox", () => {
    const banner = devBanner(BANNER);
    expect(banner).toContain(
      "  export API_BASE_URL=http://127.0.0.1:4010 API_KEY=svc_live_dev_sandbox_key_not_secret SANDBOX_URL=http://127.0.0.1:4010\n",
    );
  });
});

describe("a second npm run dev", () => {
  it("says another dev runs, with its pid and URL, and changes nothing", async () => {
    const dir = tempDir();
    await devSettings(dir);
    const file = join(dir, DEV_SETTINGS_FILE);
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), url: "http://127.0.0.1:4100" }));
    const before = readFileSync(file, "utf8");
    const lock = await lockDataDir(dir);
    try {
      // The environment main is given, not the process's: dev reads no other.
      const run = await cli(["dev"], { DATA_DIR: dir });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `svc-webhooks: another npm run dev runs on ${dir} (pid ${process.pid}, http://127.0.0.1:4100): use that one, or stop it (Ctrl-C in its terminal) first`,
      );
      expect(run.stderr).not.toContain("ROLE=all");
      expect(readFileSync(file, "utf8")).toBe(before);
    } finally {
      lock.release();
    }
  });
});

describe("dev over a sandbox state it refuses", () => {
  it("stops the start in one line naming the file, the record and --fresh, and leaves the file as it was", async () => {
    const dir = tempDir();
    await devSettings(dir);
    const file = join(dir, "sandbox-state.json");
    const order = { id: "ord_12", restaurantId: "rest_1", createdAt: "2026-11-27T10:00:00.000Z", status: "BOGUS" };
    writeFileSync(file, JSON.stringify({ format: 1, restaurants: [{ id: "rest_1", name: "R" }], orders: [order] }));
    const before = readFileSync(file, "utf8");
    const run = await cli(["dev", "--no-simulate"], { DATA_DIR: dir, REDIS_URL: inject("redisUrl") });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `svc-webhooks: sandbox state ${file}: orders ord_12: status "BOGUS" is not an order status; start with --fresh to start the sandbox over`,
    );
    expect(readFileSync(file, "utf8")).toBe(before);
  });
});

describe("dev banner on Enter", () => {
  it("prints the banner once per Enter (not per key), and nothing once stopped", () => {
    const input = new PassThrough();
    let printed = 0;
    const stop = showBannerOnEnter(input, () => (printed += 1));
    input.write("b");
    expect(printed).toBe(0);
    input.write("\n");
    expect(printed).toBe(1);
    stop();
    input.write("\n");
    expect(printed).toBe(1);
    expect(input.isPaused()).toBe(true);
  });
});

describe("dev: HANDLERS_MODULE reloaded on change", () => {
  let svc: TestService | undefined;
  let watching: HandlersModuleWatch | undefined;
  afterEach(async () => {
    watching?.stop();
    await svc?.stop();
    svc = watching = undefined;
  });

  const handlerModule = (name: string, seen: string) =>
    `export default { "review.created": { name: ${JSON.stringify(name)}, handle: (e) => { (globalThis[${JSON.stringify(seen)}] ??= []).push(${JSON.stringify(name)} + ":" + e.id); } } };\n`;

  it("runs the edited module's handlers from the next event on, and keeps them when an edit does not load", async () => {
    const seen = `__devReload${Date.now()}`;
    const file = join(tempDir(), "handlers.mjs");
    writeFileSync(file, handlerModule("first", seen));
    svc = await startService({}, [await loadHandlersModule(file)]);
    const worker = svc.service.worker!;
    expect(worker.handlerKeys("review.created")).toContain("user:review.created:first");
    const logs = captureLogs();
    watching = watchHandlersModule({
      path: file,
      apply: (map) => worker.reloadHandlers([map]),
      logger: createLogger({ level: "info", destination: logs.stream }),
      debounceMs: 20,
    });

    writeFileSync(file, handlerModule("second", seen));
    await waitFor(() => worker.handlerKeys("review.created").includes("user:review.created:second"), { what: "the edited handler" });
    const reloaded = await waitFor(() => logs.records().find((r) => r.level === 30), { what: "the reload line" });
    expect(reloaded).toMatchObject({ module: file, msg: `HANDLERS_MODULE ${file} reloaded: its handlers run from the next event on` });
    expect(worker.handlerKeys("review.created")).not.toContain("user:review.created:first");
    expect(
      svc.logs
        .records()
        .filter((r) => r.msg === "handlers registered")
        .at(-1),
    ).toMatchObject({
      source: "user",
      handlers: [{ type: "review.created", name: "second", key: "user:review.created:second" }],
    });

    const event = sampleEvent({ type: "review.created", data: { id: "rev_reload", restaurantId: "rest_1", rating: 5, comment: "ok" } });
    const settled = nextFinished(worker, "completed", (e) => e.id === event.id);
    expect((await svc.deliver(event)).status).toBe(200);
    await settled;
    expect((globalThis as Record<string, unknown>)[seen]).toEqual([`second:${event.id}`]);

    writeFileSync(file, "export default { oops: \n");
    const failed = await waitFor(() => logs.records().find((r) => r.level === 50), { what: "the reload error line" });
    expect(String(failed.msg).startsWith(`HANDLERS_MODULE ${file} not reloaded (the previous handlers keep running): `)).toBe(true);
    expect(String(failed.msg)).not.toContain("\n");
    expect(worker.handlerKeys("review.created")).toContain("user:review.created:second");
  }, 60_000);
});
