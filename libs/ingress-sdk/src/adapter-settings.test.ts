import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "@mom/config";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type } from "typebox";
import { adapterSettings } from "./adapter-settings.js";
import type { IngressDefinition } from "./platform.js";

const Settings = Type.Object(
  { homeserverUrl: Type.String({ pattern: "^https?://", expected: "the homeserver's URL, like https://matrix.example.org" }), accessToken: Type.String({ minLength: 1 }), autoJoin: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
const matrix: IngressDefinition<typeof Settings> = { platform: "matrix", settings: Settings, connect: () => Promise.reject(new Error("not connected in this test")) };

function configWith(adapters: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), "mom-sdk-settings-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ adapters }));
  return loadConfig(dir, {});
}

describe("adapterSettings", () => {
  it("takes an external adapter's settings, resolves env: secrets, and keeps the common fields apart", () => {
    const loaded = configWith({ home: { type: "external", platform: "matrix", admins: ["@ana:x"], dm: "none", settings: { homeserverUrl: "https://m.example", accessToken: "env:MX_TOKEN" } } });
    const got = adapterSettings(matrix, loaded, "home", { MX_TOKEN: "syt_secret" });
    expect(got).toEqual({ adapter: "home", access: { admins: ["@ana:x"], dm: "none" }, maxAttachmentBytes: loaded.config.attachments.maxBytes, attachmentDownloadMs: 120_000, settings: { homeserverUrl: "https://m.example", accessToken: "syt_secret" } });
  });

  it("names the file, the JSON path and what was expected for each bad or missing setting", () => {
    const loaded = configWith({ home: { type: "external", platform: "matrix", settings: { homeserverUrl: "matrix.example.org", accessToken: "env:MX_UNSET", extra: 1 } } });
    let message = "";
    try {
      adapterSettings(matrix, loaded, "home", {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`${loaded.paths.configFile}: /adapters/home/settings/homeserverUrl: expected the homeserver's URL, like https://matrix.example.org, got "matrix.example.org"`);
    expect(message).toContain("/adapters/home/settings/accessToken: environment variable MX_UNSET is not set");
    expect(message).toMatch(/\/adapters\/home\/settings\/extra: /);
  });

  it("refuses an adapter of another platform, and one that is not configured", () => {
    const loaded = configWith({ tg: { type: "telegram", botToken: "1:x" }, irc: { type: "external", platform: "irc" } });
    expect(() => adapterSettings(matrix, loaded, "tg", {})).toThrow(/\/adapters\/tg: expected a matrix adapter .*got type "telegram"/);
    expect(() => adapterSettings(matrix, loaded, "irc", {})).toThrow(/\/adapters\/irc: expected a matrix adapter .*got an external irc adapter/);
    expect(() => adapterSettings(matrix, loaded, "nope", {})).toThrow(/\/adapters\/nope: no such adapter \(configured: tg, irc\)/);
  });
});
