#!/usr/bin/env node
// The e-mail ingress as a service of its own: `mom-ingress-email --adapter <name> --data-dir <dir>`.
import { runIngress } from "@mom/ingress-sdk";
import { emailIngress } from "./email-ingress.js";

await runIngress(emailIngress);
