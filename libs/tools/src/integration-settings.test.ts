import Type from "typebox";
import { createHostToolApi } from "./host-api.js";
import { integrationSettings, IntegrationSettingsError } from "./integration-settings.js";

const Schema = Type.Object({ url: Type.String({ format: "uri" }), user: Type.String(), calendar: Type.String({ default: "personal" }) });
const api = (settings: Record<string, unknown>) => createHostToolApi({ dataDir: "/d", workspaceDir: "/w", settings });

describe("integrationSettings", () => {
  it("returns the section with defaults filled in", () => {
    expect(integrationSettings(api({ caldav: { url: "http://127.0.0.1:5232/", user: "ann" } }), "caldav", Schema)).toEqual({
      url: "http://127.0.0.1:5232/",
      user: "ann",
      calendar: "personal",
    });
  });

  it("names config.json's field when the section is missing or wrong", () => {
    expect(() => integrationSettings(api({}), "caldav", Schema)).toThrow("set tools.settings.caldav in config.json");
    let err: unknown;
    try {
      integrationSettings(api({ caldav: { url: 5 } }), "caldav", Schema);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IntegrationSettingsError);
    expect((err as Error).message).toContain("tools.settings.caldav.url");
    expect((err as Error).message).toMatch(/tools\.settings\.caldav: .*\(user required\)/);
  });
});

describe("host api secret", () => {
  it("refuses when the host gives no credentials, and passes references to the resolver", () => {
    expect(() => api({}).secret("env:X")).toThrow("gives tools no credentials");
    const seen: string[] = [];
    const withSecrets = createHostToolApi({ dataDir: "/d", workspaceDir: "/w", secret: (r) => (seen.push(r), "s3cret") });
    expect(withSecrets.secret("profile:gh")).toBe("s3cret");
    expect(seen).toEqual(["profile:gh"]);
  });
});
