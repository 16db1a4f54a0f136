import { ConfigError } from "../config/config.js";
import { HandlersModuleError } from "../worker/errors.js";
import { stopSignals } from "./stop-signals.js";
import { UsageError } from "./usage-error.js";

interface Command {
  help: string;
  /** `stop` aborts at the first SIGINT, SIGTERM or SIGHUP (stopSignals): the command ends soon after, gracefully. */
  run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void>;
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

The commands act on the deployment the environment names (REDIS_URL, QUEUE_PREFIX, DATABASE_URL or
DATA_DIR), or on the service at --url. Run svc-webhooks <command> --help for a command's options.`;

/**
 * Runs one command and answers its exit code (0, or what the command set in process.exitCode).
 * Every error is one line on stderr: a stack trace is for bugs, and even then the line says what
 * failed.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const signals = stopSignals();
  try {
    const [name = "serve", ...rest] = argv;
    if (name === "--help" || name === "-h" || name === "help") {
      console.log(USAGE);
      return 0;
    }
    const load = COMMANDS[name];
    if (!load) throw new UsageError(`unknown command "${name}"\n\n${USAGE}`);
    const command = await load();
    if (rest.includes("--help") || rest.includes("-h")) console.log(command.help);
    else await command.run(rest, env, signals.stop);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof HandlersModuleError) {
      console.error(err.message);
      return 2;
    }
    const usage = err instanceof UsageError || String((err as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS");
    console.error(`svc-webhooks: ${usage ? (err as Error).message : oneLine(err)}`);
    return usage ? 2 : 1;
  } finally {
    signals.dispose();
  }
}

/** An error as one line: its message (or code), and the code of its cause (fetch's ECONNREFUSED is there). */
function oneLine(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const cause = (err.cause as { code?: unknown } | undefined)?.code;
  const text = err.message || (typeof code === "string" ? code : err.name);
  return `${text}${typeof cause === "string" ? ` (${cause})` : ""}`.replace(/\s*\n\s*/g, " ");
}
