#!/usr/bin/env node
// The Matrix ingress as a service of its own, for an external adapter of config.json:
//   node services/ingress-matrix/dist/main.js --adapter <name> --data-dir <dir>
// (or MOM_ADAPTER, MOM_DATA_DIR; NATS_URL overrides nats.url). docs/matrix.md.
import { runIngress } from "@mom/ingress-sdk";
import { matrixIngress } from "./matrix-ingress.js";

await runIngress(matrixIngress);
