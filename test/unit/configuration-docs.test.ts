import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { devLogLevel } from "../../src/bin/dev.js";
import { configSchema } from "../../src/config/config.js";

// docs/configuration.md is the one page that lists every variable: it must match the schema.
const page = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
const rows = new Map([...page.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map(([, name, cell]) => [name!, cell!.trim()] as const));

/** The schema's default for a variable, as the table writes it: `value`, or — when there is none. */
function documentedDefault(name: keyof typeof configSchema.shape): string {
  const parsed = configSchema.shape[name].safeParse(undefined);
  return parsed.success && parsed.data !== undefined ? `\`${String(parsed.data)}\`` : "—";
}

describe("docs/configuration.md", () => {
  it("lists exactly the variables of the schema", () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(configSchema.shape).sort());
  });

  it("states npm run dev's log level as dev sets it: one level for dev, the service's own", () => {
    const row = page.split("\n").find((line) => line.startsWith("| `LOG_LEVEL` |"));
    expect(row).toContain(`\`npm run dev\` logs at \`${devLogLevel(false, {})}\``);
    expect(devLogLevel(false, {})).toBe(configSchema.shape.LOG_LEVEL.parse(undefined));
  });

  it.each(Object.keys(configSchema.shape) as (keyof typeof configSchema.shape)[])("gives %s the schema's default", (name) => {
    expect(rows.get(name)).toBe(documentedDefault(name));
  });
});
