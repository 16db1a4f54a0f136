#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Command, didYouMean, output, quoted, printAnswer, reportError, stopSignals, UsageError } from "./command.js";

// The command table (compose.yaml's commands are checked against it). Loaded lazily so `serve`
// never loads the sandbox, and each command starts only what it needs.
export const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: () => import("./serve.js"),
  dev: () => import("./dev.js"),
  sandbox: () => import("./sandbox.js"),
  trigger: () => import("./trigger.js"),
  replay: async () => (await import("./operator.js")).replay,
  backfill: () => import("./backfill.js"),
  reconcile: async () => (await import("./operator.js")).reconcile,
  migrate: async () => (await import("./operator.js")).migrate,
  events: async () => (await import("./show.js")).events,
  records: async () => (await import("./show.js")).records,
  accounts: async () => (await import("./accounts.js")).accounts,
  alerts: async () => (await import("./alerts.js")).alerts,
  problems: async () => (await import("./problems.js")).problems,
};

const USAGE = `Usage: svc-webhooks <command> [options]

Commands:
  serve      run the service (edge and/or worker, from the environment)
  dev        run a local stack: Redis if needed, then the service
  sandbox    run a local upstream API with signed webhooks and simulated traffic
  trigger    make an event of a type happen: through the sandbox SANDBOX_URL names, else a signed sample
  replay     replay an event by id, or events from the log (by time, type, status, handler), or failed jobs
  backfill   sweep every order, booking and menu item into the mirror
  reconcile  ask the workers for a reconciliation sweep now
  migrate    apply pending database migrations
  events     events show <id>: an event, its handlers and their attempts, as the console tells it
  records    records show <kind> <id>: a record's story (the mirror's copy, the events that named it)
  accounts   accounts list|add|rotate|remove: the restaurant companies served besides default
  alerts     alerts test: send one test notification to ALERT_WEBHOOK_URL and say what it answered
  problems   the open problems (or --state resolved|all): what keeps the mirror or a handler from being right

The commands act on the deployment the environment names (REDIS_URL, QUEUE_PREFIX, DATABASE_URL or
DATA_DIR), or on the service at --url. Each answers in a sentence; --json prints the answer as one
JSON document instead (for scripts). Run svc-webhooks <command> --help for a command's options.`;

/**
 * Runs one command and answers its exit code (0, or what the command set in process.exitCode).
 * Every error is one line on stderr (reportError).
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const signals = stopSignals();
  try {
    const [name = "serve", ...rest] = argv;
    if (name === "--help" || name === "-h" || name === "help") {
      console.log(USAGE);
      return 0;
    }
    const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!load)
      throw new UsageError(`unknown command ${quoted(name)}${didYouMean(name, Object.keys(COMMANDS))} (svc-webhooks --help lists them)`);
    const command = await load();
    if (rest.includes("--help") || rest.includes("-h")) {
      console.log(command.help);
      return 0;
    }
    if (!command.answers) {
      await command.run(rest, env, signals.stop, output(false));
      return 0;
    }
    // --json belongs to the answer (printAnswer), not to the command's own flags.
    const out = output(rest.includes("--json"));
    const args = rest.filter((a) => a !== "--json");
    printAnswer(await command.run(args, env, signals.stop, out), out);
    return 0;
  } catch (err) {
    return reportError(err);
  } finally {
    signals.dispose();
  }
}

// Run as the program (node dist/bin/cli.js, tsx src/bin/cli.ts, the package's bin link), not when
// imported (the tests call main). An error exits at once (a Redis client still reconnecting must
// not hold the process); success lets the command's own handles close and keeps the exit code it set.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  void main(process.argv.slice(2), process.env).then((code) => {
    if (code !== 0) process.exit(code);
  });
}
