import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Redis } from "ioredis";

// Where the CPU of one ingest run goes: the server process, Redis (and the script BullMQ adds a
// job with), and the load generator. Linux only (/proc), like wrk's use here.

const TICKS_PER_SECOND = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** utime + stime fields of a /proc stat line (after the command name, which may hold spaces). */
function statSeconds(stat: string, utimeField: number): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state) of proc(5).
  return (Number(fields[utimeField - 3]) + Number(fields[utimeField - 2])) / TICKS_PER_SECOND;
}

/** CPU seconds used so far by a live process. */
export function processCpuSeconds(pid: number): number {
  return statSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"), 14);
}

/**
 * CPU seconds of a process tree one level deep: the process, its exited children (cutime, cstime)
 * and its live children. PostgreSQL's postmaster and its backends, for one.
 */
export function processTreeCpuSeconds(pid: number): number {
  const own = readFileSync(`/proc/${pid}/stat`, "utf8");
  let total = statSeconds(own, 14) + statSeconds(own, 16);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === pid) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === pid) total += statSeconds(stat, 14);
  }
  return total;
}

/** CPU seconds of this process's children that have exited and been waited for (wrk runs). */
export function exitedChildrenCpuSeconds(): number {
  return statSeconds(readFileSync("/proc/self/stat", "utf8"), 16);
}

export interface RedisCpu {
  /** used_cpu_user + used_cpu_sys of the whole redis-server process */
  seconds: number;
  /** time Redis spent inside EVALSHA (BullMQ runs one script per added job) */
  evalshaUsec: number;
  evalshaCalls: number;
}

export async function redisCpu(redis: Redis): Promise<RedisCpu> {
  const [cpu, stats] = await Promise.all([redis.info("cpu"), redis.info("commandstats")]);
  const num = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    seconds: num(cpu, /used_cpu_user:([\d.]+)/) + num(cpu, /used_cpu_sys:([\d.]+)/),
    evalshaUsec: num(stats, /cmdstat_evalsha:calls=\d+,usec=(\d+)/),
    evalshaCalls: num(stats, /cmdstat_evalsha:calls=(\d+)/),
  };
}

export type CommandStats = Record<string, { calls: number; usec: number }>;

/** INFO commandstats as calls and µs per command (EVALSHA: every script BullMQ or we run). */
export async function redisCommandStats(redis: Redis): Promise<CommandStats> {
  const out: CommandStats = {};
  for (const m of (await redis.info("commandstats")).matchAll(/cmdstat_([^:]+):calls=(\d+),usec=(\d+)/g))
    out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}
