// `npm run openapi`: writes the operator API's OpenAPI document (src/http/openapi.ts) to
// docs/openapi.json, formatted as prettier keeps it; test/unit/openapi-document.test.ts fails
// while the committed file differs from what the code describes.
import { writeFileSync } from "node:fs";
import { format } from "prettier";
import { operatorApiDocument } from "../src/http/openapi.js";
import { SYNCED_KINDS } from "../src/sync/resources.js";

const OPENAPI_FILE = new URL("../docs/openapi.json", import.meta.url);

writeFileSync(
  OPENAPI_FILE,
  await format(JSON.stringify(operatorApiDocument({ syncedKinds: SYNCED_KINDS })), { parser: "json", printWidth: 140 }),
);
console.log(`wrote ${OPENAPI_FILE.pathname}`);
