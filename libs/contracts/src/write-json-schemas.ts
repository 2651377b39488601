// `npm run schemas`: regenerates docs/schemas from the TypeBox definitions.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PUBLISHED_SCHEMAS, renderJsonSchema } from "./json-schemas.js";

const outDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../../docs/schemas");
mkdirSync(outDir, { recursive: true });
for (const [file, schema] of Object.entries(PUBLISHED_SCHEMAS)) {
  writeFileSync(join(outDir, file), renderJsonSchema(schema));
  console.log(`wrote docs/schemas/${file}`);
}
