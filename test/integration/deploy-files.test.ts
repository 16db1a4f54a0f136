import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { ROLES } from "../../src/config/config.js";
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
