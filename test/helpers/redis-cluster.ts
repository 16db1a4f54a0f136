/** A throwaway three-master Redis Cluster on loopback, for the cluster tests only. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasRedisServer, REDIS_INSTALL_HINT } from "../../src/redis/local-server.js";
import { waitFor } from "./wait-for.js";

export interface RedisCluster {
  /** The seed node, as REDIS_URL names it with REDIS_CLUSTER=true. */
  url: string;
  ports: number[];
  /** Stops every node by its PID and removes the directory. */
  destroy(): Promise<void>;
}

/**
 * Starts `redis-server --cluster-enabled yes` three times, joins them with
 * `redis-cli --cluster create … --cluster-replicas 0` and resolves once every node reports
 * `cluster_state:ok`.
 */
export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  if (!hasRedisServer()) throw new Error(REDIS_INSTALL_HINT);
  const dir = mkdtempSync(join(tmpdir(), "svc-webhooks-cluster-"));
  const nodes: ChildProcess[] = [];
  const ports: number[] = [];
  const destroy = async () => {
    await Promise.all(nodes.map(stopNode));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await clusterPort(ports);
      ports.push(port);
      nodes.push(await startNode(dir, port));
    }
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    // No event says the cluster agrees on its slots: ask each node until it says so.
    for (const port of ports) {
      await waitFor(async () => (await run("redis-cli", ["-p", String(port), "cluster", "info"])).includes("cluster_state:ok"), {
        what: `cluster_state:ok on node ${port}`,
      });
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  return { url: `redis://127.0.0.1:${ports[0]}`, ports, destroy };
}

/** Resolves once the node logs that it accepts connections; rejects with its output if it exits. */
function startNode(dir: string, port: number): Promise<ChildProcess> {
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    `nodes-${port}.conf`,
    "--save",
    "",
    "--appendonly",
    "no",
    "--maxmemory-policy",
    "noeviction",
    "--daemonize",
    "no",
    "--loglevel",
    "notice",
  ];
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes("Ready to accept connections")) {
        child.stdout.off("data", onData);
        resolve(child);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("exit", (code) => reject(new Error(`redis-server on port ${port} exited (${code}): ${output}`)));
    child.once("error", reject);
  });
}

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${output}`)),
    );
  });
}

/**
 * A port whose cluster bus port (port + 10000, which Redis derives) is free too, so at most 55535.
 * The OS picks ephemeral ports above that, so pick in a lower range and check both by binding.
 */
async function clusterPort(taken: number[]): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if (taken.includes(port)) continue;
    if ((await canBind(port)) && (await canBind(port + 10_000))) return port;
  }
  throw new Error("found no free port pair (P, P+10000) for a cluster node");
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
