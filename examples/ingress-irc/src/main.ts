// The ingress as a process: `node dist/main.js --adapter <name> --data-dir <dir>` (or MOM_ADAPTER,
// MOM_DATA_DIR, NATS_URL). The SDK reads config.json, connects, serves /healthz and /metrics, and
// stops in order on SIGTERM.
import { runIngress } from "@mom/ingress-sdk";
import { ircIngress } from "./irc-ingress.js";

await runIngress(ircIngress);
