import { Writable } from "node:stream";

/** A pino destination that keeps every line in memory, for assertions on logs. */
export function captureLogs() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(line);
      done();
    },
  });
  return {
    stream,
    lines,
    text: () => lines.join("\n"),
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
