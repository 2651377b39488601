// The conformance kit: one standard suite any ingress passes, against a fake (or real) platform
// server and a real NATS, with mom's side played by the suite (docs/ingress-sdk.md, "Testing").
export { type ConformanceCase, type ConformanceTarget, conformanceCases, describeConformance, notApplicable, type TestRunner } from "./conformance.js";
export type { IngressUnderTest, Person, PlatformDriver, SentFile } from "./platform-driver.js";
export { eventually, ScriptedMom, ScriptedRun } from "./scripted-mom.js";
