// config.json tools.settings.caldav, read at each call (so a call made before the operator set it
// says what to set), and the password, resolved from its reference on the host at each call.
import Type, { type Static } from "typebox";
import { type CustomToolApi, integrationSettings } from "@mom/tools";
import { zoneId } from "./times.js";

export const SettingsSchema = Type.Object(
  {
    url: Type.String({ pattern: "^https?://", description: "The CalDAV server (its root, or the account's principal URL), e.g. https://dav.example.org/" }),
    username: Type.String({ minLength: 1, description: "The login name" }),
    password: Type.String({ minLength: 1, description: "Where the password lives: env:NAME, file:PATH (relative to the data dir) or profile:<id>; never the password itself" }),
    calendar: Type.Optional(
      Type.String({ minLength: 1, description: "The calendar to use: its display name, or its URL (absolute, or a path on the server); default the account's only calendar" }),
    ),
    timezone: Type.Optional(Type.String({ minLength: 1, description: "IANA zone for times given without one, e.g. Europe/Vienna; default the calendar's own, else UTC" })),
  },
  { additionalProperties: false },
);

export type Settings = Static<typeof SettingsSchema>;

export interface Resolved extends Settings {
  /** The password itself: only ever in the Authorization header, never in output or errors. */
  secret: string;
}

export const FIELD = "tools.settings.caldav";

export function resolveSettings(api: Pick<CustomToolApi, "settings" | "secret">): Resolved {
  const s = integrationSettings(api, "caldav", SettingsSchema);
  if (s.timezone !== undefined) s.timezone = zoneId(s.timezone, `${FIELD}.timezone`);
  let secret: string;
  try {
    secret = api.secret(s.password);
  } catch (e) {
    // The host's message names the reference (env:NAME, a path, a profile id), never a value.
    throw new Error(`${FIELD}.password: ${(e as Error).message}`);
  }
  return { ...s, secret };
}
