import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, prettyDestinationForTerminal } from "../../src/logging/logger.js";

const terminal = (isTTY: boolean) => Object.assign(new PassThrough(), { isTTY }) as unknown as NodeJS.WriteStream & PassThrough;

describe("logs for a person", () => {
  it("are pretty lines on a terminal, with secrets scrubbed first", async () => {
    const out = terminal(true);
    const chunks: string[] = [];
    out.on("data", (c: Buffer) => chunks.push(c.toString()));
    const destination = await prettyDestinationForTerminal(out);
    expect(destination).toBeDefined();
    const logger = createLogger({ level: "info", secrets: ["whsec_pretty_secret"], destination: destination! });
    logger.info({ leaked: "whsec_pretty_secret" }, "listening");
    await new Promise<void>((resolve) => setImmediate(resolve));
    const text = chunks.join("");
    expect(text).toContain("INFO");
    expect(text).toContain("listening");
    expect(text).not.toContain('{"level"');
    expect(text).not.toContain("whsec_pretty_secret");
  });

  it("stay JSON when stdout is not a terminal (production, pipes, log collectors)", async () => {
    expect(await prettyDestinationForTerminal(terminal(false))).toBeUndefined();
  });
});
