import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { COMMANDS } from "../../src/bin/cli.js";
import { configSchema, loadConfig, ROLES } from "../../src/config/config.js";
import { EXIT_GRACE_MS } from "../../src/service.js";
import { freePort } from "../helpers/redis-server.js";
import { startService } from "../helpers/service.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const fly = parse(readFileSync(join(ROOT, "fly.toml"), "utf8")) as {
  kill_signal: string;
  kill_timeout: number;
  env: Record<string, string>;
  processes: Record<string, string>;
  http_service: { internal_port: number; processes: string[]; checks: { path: string }[] };
  checks?: Record<string, { type: string; port: number; path: string; processes: string[] }>;
  vm: { memory: string; processes: string[] }[];
};

const instruction = (name: string) =>
  dockerfile
    .split("\n")
    .filter((l) => l.startsWith(`${name} `))
    .map((l) => l.slice(name.length + 1).trim());
const cmd = JSON.parse(instruction("CMD")[0]!) as string[];

describe("Dockerfile and fly.toml", () => {
  it("build on a supported LTS Node major, the one CI also tests on", () => {
    const image = /NODE_IMAGE=node:(\d+)[.-]/.exec(dockerfile)?.[1];
    expect(Number(image)).toBeGreaterThanOrEqual(22);
    expect(Number(image) % 2).toBe(0); // even majors are the LTS ones
    expect(readFileSync(join(ROOT, ".ci/run"), "utf8")).toContain(`node@${image}`);
    expect(instruction("FROM").every((f) => f.startsWith("${NODE_IMAGE}"))).toBe(true);
  });

  it("run as a non-root user behind an init, with the default port exposed", () => {
    expect(instruction("USER")).toEqual(["node"]);
    expect(instruction("ENTRYPOINT")[0]).toContain("tini");
    expect(instruction("EXPOSE")).toEqual([String(fly.http_service.internal_port)]);
    expect(dockerfile).toMatch(new RegExp(`PORT=${fly.http_service.internal_port}\\b`));
    expect(fly.env.PORT).toBe(String(fly.http_service.internal_port));
  });

  it("keep secrets out of every layer and out of fly.toml", () => {
    for (const line of [...instruction("ENV"), ...instruction("ARG"), ...dockerfile.split("\n")]) {
      expect(line).not.toMatch(/SIGNING_SECRET|API_KEY|ADMIN_TOKEN|PASSWORD|REDIS_URL=/);
    }
    expect(Object.keys(fly.env).filter((k) => /SECRET|KEY|TOKEN|REDIS_URL/.test(k))).toEqual([]);
    // The context is an allow-list: everything is ignored, then only build inputs are let back in.
    const rules = readFileSync(join(ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    expect(rules[0]).toBe("*");
    for (const rule of rules.slice(1)) {
      expect(rule).toMatch(/^!(package(-lock)?\.json|tsconfig(\.build)?\.json|src\/\*\*)$/);
    }
  });

  it("start processes that exist: web and worker roles of the same CMD", () => {
    expect(cmd).toEqual(["node", "dist/bin/cli.js", "serve"]);
    expect(Object.keys(fly.processes).sort()).toEqual(["web", "worker"]);
    for (const [group, command] of Object.entries(fly.processes)) {
      const parts = command.split(" ");
      expect(parts.slice(0, 3)).toEqual(cmd);
      expect(parts.slice(3)).toEqual(["--role", group]);
      expect(ROLES).toContain(group);
    }
    expect(fly.http_service.processes).toEqual(["web"]);
  });

  it("pin the base image to an exact release, and let a deployer pin its digest", () => {
    expect(instruction("ARG")).toContainEqual(
      expect.stringMatching(/^NODE_IMAGE=node:\d+\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$/),
    );
    expect(instruction("FROM").every((f) => f.startsWith("${NODE_IMAGE}"))).toBe(true);
  });

  it("give the runtime user no write access to the code: root owns /app, only /data is the user's", () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
    const copies = runtime.split("\n").filter((l) => l.startsWith("COPY "));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) expect(copy).not.toMatch(/--chown|--chmod/);
    const chowns = runtime.match(/chown\s+\S+\s+\S+/g) ?? [];
    expect(chowns).toEqual(["chown node:node /data"]);
    // The user switch comes after every COPY, so nothing is written into /app as the node user.
    expect(runtime.lastIndexOf("\nCOPY ")).toBeLessThan(runtime.indexOf("\nUSER node"));
  });

  it("health-check the container with node (no curl in the slim image), on the process's own /readyz", async () => {
    const line = dockerfile
      .slice(dockerfile.indexOf("\nHEALTHCHECK ") + 1)
      .split("\n")
      .slice(0, 2)
      .join(" ");
    const check = JSON.parse(/CMD (\[.*\])/.exec(line)![1]!) as string[];
    expect(check[0]).toBe("node");
    expect(line).toMatch(/--start-period=\d+s/);
    const run = (port: string) =>
      new Promise<number | null>((resolve) =>
        spawn(process.execPath, check.slice(1), { env: { PATH: process.env.PATH, PORT: port }, stdio: "ignore" }).once("exit", resolve),
      );
    for (const role of ["web", "worker"]) {
      const svc = await startService({ ROLE: role });
      try {
        expect(await run(new URL(svc.url).port), role).toBe(0);
      } finally {
        await svc.stop();
      }
    }
    expect(await run(String(await freePort()))).toBe(1);
  });

  it("health-check the worker group too, on the port it serves /readyz on", () => {
    const checks = Object.values(fly.checks ?? {});
    const worker = checks.filter((c) => c.processes.includes("worker"));
    expect(worker).toHaveLength(1);
    expect(worker[0]).toMatchObject({ type: "http", path: "/readyz", port: Number(fly.env.PORT) });
  });

  it("size each process group's VM above the RSS measured for it (docs/deploy.md)", () => {
    const mib = (m: string) => (/^(\d+)gb$/.exec(m) ? Number(/^(\d+)/.exec(m)![1]) * 1024 : Number(/^(\d+)mb$/.exec(m)?.[1]));
    const memoryOf = (group: string) => fly.vm.filter((v) => v.processes.includes(group)).map((v) => mib(v.memory));
    // Peak RSS measured under load: web 379 MB (20 concurrent 900 KB bodies), worker 691 MB (1 MB events).
    expect(memoryOf("web")).toEqual([expect.any(Number)]);
    expect(memoryOf("web")[0]).toBeGreaterThan(379 * 1.25);
    expect(memoryOf("worker")).toEqual([expect.any(Number)]);
    expect(memoryOf("worker")[0]).toBeGreaterThan(691 * 1.25);
  });

  it("give graceful shutdown the time it needs", () => {
    expect(fly.kill_signal).toBe("SIGTERM");
    expect(fly.kill_timeout * 1000).toBeGreaterThan(Number(fly.env.SHUTDOWN_TIMEOUT_MS));
    expect(instruction("STOPSIGNAL")).toEqual(["SIGTERM"]);
  });

  it("health-check a path the service answers", async () => {
    const svc = await startService({ ROLE: "web" });
    try {
      for (const check of fly.http_service.checks) expect((await fetch(`${svc.url}${check.path}`)).status).toBe(200);
    } finally {
      await svc.stop();
    }
  });
});

// ---- compose.yaml: checked without a Docker engine, as a YAML document (compose's own merge keys
// resolved) against the code it runs: the config schema, the CLI's command table, the Dockerfile.

const composeText = readFileSync(join(ROOT, "compose.yaml"), "utf8");
interface ComposeService {
  build?: { context: string; dockerfile: string };
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  container_name?: string;
  stop_grace_period?: string;
}
const compose = parseYaml(composeText, { merge: true }) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
const services = compose.services;
/** `${NAME}`, `${NAME:-default}`, `${NAME:?message}`: compose's interpolation, as it reads .env. */
const INTERPOLATION = /\$\{([A-Z_][A-Z0-9_]*)(?:(:?[-?])([^}]*))?\}/g;
const interpolated = (text: string) =>
  [...text.matchAll(INTERPOLATION)].map((m) => ({ name: m[1]!, required: m[2]?.endsWith("?") ?? false }));
const envExample = readFileSync(join(ROOT, ".env.example"), "utf8");
const exampleNames = envExample
  .split("\n")
  .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
  .map((l) => l.slice(0, l.indexOf("=")));
/** A valid value for each variable .env asks for, to resolve compose.yaml as a filled-in .env would. */
const SAMPLE: Record<string, string> = {
  SIGNING_SECRET: "whsec_compose_sample_secret",
  ADMIN_TOKEN: "a".repeat(32),
  POSTGRES_PASSWORD: "0123456789abcdef",
  SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
  API_BASE_URL: "https://api.example.com",
  API_KEY: "svc_live_compose_sample_key_0123",
  WEB_PORT: "8080",
  LOG_LEVEL: "debug",
};
/** compose's resolution: `:-` gives its default for an unset or empty variable, the rest resolve to "". */
const resolve = (text: string, values: Record<string, string>) =>
  text.replace(INTERPOLATION, (_, name: string, op: string | undefined, rest: string) => {
    const given = values[name] ?? "";
    return given !== "" ? given : op?.endsWith("-") ? rest : "";
  });
const dockerHealthcheck = dockerfile
  .slice(dockerfile.indexOf("\nHEALTHCHECK ") + 1)
  .split("\n")
  .slice(0, 2)
  .join(" ");
const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1] ?? NaN);
const APP = ["web", "worker"] as const;

describe("compose.yaml", () => {
  it("runs web and worker from this Dockerfile, with Redis and PostgreSQL, each store on a volume", () => {
    expect(Object.keys(services).sort()).toEqual(["postgres", "redis", "web", "worker"]);
    for (const name of APP) {
      expect(services[name]!.build, name).toEqual({ context: ".", dockerfile: "Dockerfile" });
      expect(services[name]!.image, name).toBe(services.web!.image);
    }
    expect(services.redis!.volumes).toEqual(["redis-data:/data"]);
    expect(Object.keys(compose.volumes).sort()).toEqual(["postgres-data", "redis-data"]);
  });

  it("runs commands the CLI has: the image's CMD with --role, as fly.toml does", async () => {
    const bin = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> }).bin;
    expect(Object.values(bin).map((p) => p.replace(/^\.\//, ""))).toEqual([cmd[1]]);
    for (const name of APP) {
      const command = services[name]!.command!;
      expect(command.slice(0, 3), name).toEqual(cmd);
      expect(Object.keys(COMMANDS)).toContain(command[2]);
      expect(command.slice(3)).toEqual(["--role", name]);
      expect(ROLES).toContain(name);
      expect((await COMMANDS[command[2]!]!()).help).toContain("--role");
    }
  });

  it("passes web and worker only variables the config schema knows, and the config they make is valid", () => {
    const known = Object.keys(configSchema.shape);
    for (const name of APP) {
      const env = services[name]!.environment!;
      expect(
        Object.keys(env).filter((k) => !known.includes(k)),
        name,
      ).toEqual([]);
      // The role comes from --role; a ROLE here would say something else in a second place.
      expect(Object.keys(env)).not.toContain("ROLE");
      const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, resolve(v, SAMPLE)]));
      const config = loadConfig({ ...resolved, ROLE: name });
      expect(new URL(config.redisUrl).hostname).toBe("redis");
      const database = new URL(resolved.DATABASE_URL!);
      const pg = services.postgres!.environment!;
      expect([database.hostname, database.username, database.pathname.slice(1), database.password]).toEqual([
        "postgres",
        pg.POSTGRES_USER,
        pg.POSTGRES_DB,
        SAMPLE.POSTGRES_PASSWORD,
      ]);
    }
    // Only the edge verifies deliveries; the worker is not given the signing secret.
    expect(Object.keys(services.web!.environment!)).toContain("SIGNING_SECRET");
    expect(Object.keys(services.worker!.environment!)).not.toContain("SIGNING_SECRET");
  });

  it("takes every secret from .env: .env.example names each variable compose.yaml reads, with no value, and git ignores .env", () => {
    const used = interpolated(composeText);
    expect([...new Set(used.map((u) => u.name))].sort()).toEqual([...exampleNames].sort());
    for (const line of envExample.split("\n").filter((l) => /^[A-Z_]+=/.test(l))) expect(line).toMatch(/^[A-Z_]+=$/);
    // Required ones stop compose with a message instead of starting with an empty secret.
    const required = new Set(used.filter((u) => u.required).map((u) => u.name));
    expect([...required].sort()).toEqual(["ADMIN_TOKEN", "POSTGRES_PASSWORD", "SIGNING_SECRET"]);
    // No secret is written in the file itself: each one is a ${…} from .env.
    const secretValues = [...APP, "postgres"].flatMap((name) =>
      Object.entries(services[name]!.environment!).filter(([k]) => /SECRET|TOKEN|KEY|PASSWORD|DATABASE_URL/.test(k)),
    );
    for (const [key, value] of secretValues) expect(resolve(value, {}), key).not.toMatch(/svc_live_|whsec_|:[^/@]+@/);
    for (const [key, value] of secretValues) expect(interpolated(value).length, key).toBeGreaterThan(0);
    expect(readFileSync(join(ROOT, ".gitignore"), "utf8").split("\n")).toContain(".env");
  });

  it("publishes the Dockerfile's port for web only, and health-checks web and worker with the image's own /readyz check", () => {
    expect(services.web!.ports!.map((p) => resolve(p, {}))).toEqual([`3000:${instruction("EXPOSE")[0]}`]);
    for (const name of ["worker", "redis", "postgres"]) expect(services[name]!.ports, name).toBeUndefined();
    // Scaling (--scale worker=3) needs no fixed name and no host port.
    for (const name of APP) expect(services[name]!.container_name, name).toBeUndefined();
    // One home for the check: the Dockerfile's HEALTHCHECK (GET /readyz on PORT), not a copy here.
    expect(dockerHealthcheck).toContain("/readyz");
    expect(dockerHealthcheck).toContain("process.env.PORT");
    for (const name of APP) {
      expect(services[name]!.healthcheck, name).toBeUndefined();
      expect(services[name]!.environment!.PORT, name).toBeUndefined();
      expect(services[name]!.depends_on, name).toEqual({
        redis: { condition: "service_healthy" },
        postgres: { condition: "service_healthy" },
      });
    }
  });

  it("runs Redis as BullMQ needs it: AOF every second, noeviction, Redis 6.2 or later, healthy before the service starts", () => {
    const { command, image, healthcheck } = services.redis!;
    const flag = (name: string) => command![command!.indexOf(name) + 1];
    expect(command![0]).toBe("redis-server");
    expect([flag("--appendonly"), flag("--appendfsync"), flag("--maxmemory-policy")]).toEqual(["yes", "everysec", "noeviction"]);
    const [major, minor] = (/^redis:(\d+)\.(\d+)/.exec(image!) ?? []).slice(1).map(Number);
    expect(major! * 100 + minor!).toBeGreaterThanOrEqual(602);
    expect(healthcheck!.test).toEqual(["CMD", "redis-cli", "ping"]);
  });

  it("keeps PostgreSQL's data on its volume where its image puts it, and checks the same role and database the service uses", () => {
    const { image, volumes, healthcheck, environment } = services.postgres!;
    const major = Number(/^postgres:(\d+)/.exec(image!)?.[1]);
    // From 18 on, the image keeps its data under /var/lib/postgresql/<major>/docker (its VOLUME moved).
    expect(volumes).toEqual([`postgres-data:${major >= 18 ? "/var/lib/postgresql" : "/var/lib/postgresql/data"}`]);
    expect(healthcheck!.test).toEqual(["CMD", "pg_isready", "-U", environment!.POSTGRES_USER, "-d", environment!.POSTGRES_DB]);
    expect(interpolated(environment!.POSTGRES_PASSWORD!)).toEqual([{ name: "POSTGRES_PASSWORD", required: true }]);
  });

  it("gives web and worker the stop time the shutdown needs (SHUTDOWN_TIMEOUT_MS + 5 s; compose's default is 10 s)", () => {
    const needed = loadConfig({ ROLE: "worker" }).shutdownTimeoutMs + EXIT_GRACE_MS;
    for (const name of APP) expect(seconds(services[name]!.stop_grace_period!) * 1000, name).toBeGreaterThanOrEqual(needed);
  });

  it("is shown in docs/deploy.md: docker compose up, and scaling the workers", () => {
    const deploy = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");
    expect(deploy).toContain("docker compose up");
    expect(deploy).toMatch(/--scale worker=\d/);
    // The one-off commands it shows run through the same image and name real CLI commands.
    const oneOffs = [...deploy.matchAll(/docker compose (?:run|exec) [^`\n]*?node dist\/bin\/cli\.js (\w+)/g)].map((m) => m[1]!);
    expect(oneOffs.length).toBeGreaterThan(0);
    for (const command of oneOffs) expect(Object.keys(COMMANDS)).toContain(command);
  });
});
