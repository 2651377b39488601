// An ingress deployed on its own (the SDK's runIngress), whose platform takes 2 s to connect and
// says when it begins to: a test sends a signal while it starts.
import { markdownDialect, runIngress, Type } from "@mom/ingress-sdk";

await runIngress({
  platform: "slow",
  settings: Type.Object({}),
  async connect() {
    process.stderr.write("connecting\n");
    await new Promise((r) => setTimeout(r, 2000));
    const surface = { dialect: markdownDialect({ limit: 4000 }), drawEvent: async () => undefined };
    return { surface, start: async () => ({}), stop: async () => {} };
  },
});
