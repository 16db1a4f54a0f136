#!/usr/bin/env node
import { ConfigError } from "../config/index.js";
import { DataDirLockedError } from "../mirror/data-dir-lock.js";
import { HandlersModuleError } from "../worker/load-handlers-module.js";
import { CommandError } from "./command-error.js";
import { UsageError } from "./usage-error.js";

interface Command {
  help: string;
  run(argv: string[]): Promise<void>;
}

// Loaded lazily so `serve` never loads the sandbox, and each command starts only what it needs.
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: () => import("./commands/serve.js"),
  dev: () => import("./commands/dev.js"),
  sandbox: () => import("./commands/sandbox.js"),
  trigger: () => import("./commands/trigger.js"),
  replay: () => import("./commands/replay.js"),
  backfill: () => import("./commands/backfill.js"),
  reconcile: () => import("./commands/reconcile.js"),
  migrate: () => import("./commands/migrate.js"),
};

const USAGE = `Usage: svc-webhooks <command> [options]

Commands:
  serve      run the service (edge and/or worker, from the environment)
  dev        run a local stack: Redis if needed, then the service
  sandbox    run a local upstream API with signed webhooks and simulated traffic
  trigger    send a signed sample event of a type to an endpoint
  replay     replay an event by id, or events from the log (by time, type, status, handler), or failed jobs
  backfill   sweep every order, booking and menu item into the mirror
  reconcile  ask the workers for a reconciliation sweep now
  migrate    apply pending database migrations

Run svc-webhooks <command> --help for a command's options.`;

async function main(argv: string[]): Promise<void> {
  const [name = "serve", ...rest] = argv;
  if (name === "--help" || name === "-h" || name === "help") {
    console.log(USAGE);
    return;
  }
  const load = COMMANDS[name];
  if (!load) throw new UsageError(`unknown command "${name}"\n\n${USAGE}`);
  const command = await load();
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(command.help);
    return;
  }
  await command.run(rest);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof HandlersModuleError) {
    console.error(err.message);
    process.exit(2);
  }
  // A second process on an embedded database's directory: the message says what to do; a stack would bury it.
  if (err instanceof DataDirLockedError || err instanceof CommandError) {
    console.error(`svc-webhooks: ${err.message}`);
    process.exit(1);
  }
  if (err instanceof UsageError || String((err as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")) {
    console.error(`svc-webhooks: ${(err as Error).message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
