import type { DestinationStream } from "pino";

/**
 * Human-readable log lines for a person at a terminal (`npm run dev`): pino-pretty when stdout
 * is a TTY and the package is installed (it is a dev dependency, absent from the production
 * image); otherwise undefined, and the logger writes JSON lines as in production.
 */
export async function prettyDestinationForTerminal(stream: NodeJS.WriteStream = process.stdout): Promise<DestinationStream | undefined> {
  if (!stream.isTTY) return undefined;
  try {
    const { default: pretty } = await import("pino-pretty");
    return pretty({ colorize: true, translateTime: "HH:MM:ss.l", ignore: "pid,hostname", destination: stream });
  } catch {
    return undefined;
  }
}
