import { execFileSync } from "node:child_process";
import { constants, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventEmitter } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { createLogDestination, createLogger } from "../../src/logging/logger.js";
import { waitFor } from "../helpers/wait-for.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("createLogDestination", () => {
  it("holds at most maxBufferBytes while nobody reads the log, dropping the rest", () => {
    // A pipe nobody reads, like a stdout whose log shipper has stalled: it fills (64 KiB on
    // Linux), then every write would wait.
    dir = mkdtempSync(join(tmpdir(), "log-destination-"));
    const fifo = join(dir, "stdout");
    execFileSync("mkfifo", [fifo]);
    const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    const maxBufferBytes = 256 * 1024;
    const destination = createLogDestination({ fd, maxBufferBytes });
    let dropped = 0;
    (destination as unknown as EventEmitter).on("drop", (data: string) => (dropped += Buffer.byteLength(data)));
    const logger = createLogger({ destination });
    const path = "/".padEnd(1000, "a");
    let written = 0;
    for (let i = 0; i < 10_000; i++) {
      logger.info({ path }, "request");
      written += 1050;
    }
    // About 10 MB offered; what was kept is one pipe's worth plus the buffer, not all of it.
    expect(written - dropped).toBeLessThan(maxBufferBytes + 1024 * 1024);
    expect(dropped).toBeGreaterThan(0);
    // destroy() closes the fd; a retry still scheduled then fails on it, which is expected here.
    (destination as unknown as EventEmitter).on("error", () => undefined);
    (destination as unknown as { destroy(): void }).destroy();
  });

  it("writes a lone line, smaller than a batch, without more lines coming after it", async () => {
    dir = mkdtempSync(join(tmpdir(), "log-destination-"));
    const file = join(dir, "stdout");
    const destination = createLogDestination({ fd: openSync(file, "w") });
    createLogger({ destination }).info({ note: "alone" }, "quiet moment");
    await waitFor(() => readFileSync(file, "utf8").includes('"note":"alone"'), { what: "the buffered line to be flushed" });
    (destination as unknown as { destroy(): void }).destroy();
  });

  it("writes a line logged with a 5 MB error message, cut, where the writer would drop it whole", async () => {
    dir = mkdtempSync(join(tmpdir(), "log-destination-"));
    const file = join(dir, "stdout");
    const destination = createLogDestination({ fd: openSync(file, "w") });
    createLogger({ destination }).error({ err: new Error("m".repeat(5_000_000)) }, "huge error");
    await waitFor(() => readFileSync(file, "utf8").includes("huge error"), { what: "the cut line to be flushed" });
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: "huge error", cut: { chars: expect.any(Number) as number } });
    (destination as unknown as { destroy(): void }).destroy();
  });

  it("writes what is still buffered when the process exits", () => {
    // Exits right after logging: no flush timer has run, the exit hook must write the line.
    const stdout = execFileSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        'import { createLogger } from "./src/logging/logger.js"; createLogger().info({ note: "bye" }, "last line"); process.exit(0);',
      ],
      { encoding: "utf8" },
    );
    expect(stdout).toContain('"note":"bye"');
  });
});
