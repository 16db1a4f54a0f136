import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { operatorApiDocument } from "../../src/http/openapi.js";
import { SYNCED_KINDS } from "../../src/sync/resources.js";

// The operator API's OpenAPI document (issue 54.3): the committed docs/openapi.json is what the
// code describes, and the document is valid OpenAPI 3.1. The routes it covers and the answers
// it promises are held to the app by test/integration/openapi-contract.test.ts.

const committed = () => JSON.parse(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")) as unknown;
/** The document as JSON carries it (undefined fields dropped). */
const generated = () => JSON.parse(JSON.stringify(operatorApiDocument({ syncedKinds: SYNCED_KINDS }))) as Record<string, unknown>;

describe("the operator API's OpenAPI document", () => {
  it("is committed as docs/openapi.json as the code describes it (run `npm run openapi` after changing a route or a shape)", () => {
    expect(committed()).toEqual(generated());
  });

  it("validates as OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(generated());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("names the operator token as its security and lets only the probes and itself go without", () => {
    const doc = generated() as {
      security: unknown;
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(doc.components.securitySchemes).toMatchObject({
      adminToken: { type: "http", scheme: "bearer" },
      adminBasic: { scheme: "basic" },
    });
    expect(doc.security).toEqual([{ adminToken: [] }, { adminBasic: [] }]);
    const open = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op.security?.length === 0)
        .map(([method]) => `${method} ${path}`),
    );
    expect(open.sort()).toEqual(["get /healthz", "get /openapi.json", "get /readyz"]);
  });
});
