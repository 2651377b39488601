import { isTimeZone } from "@mom/events";
import { type CustomToolApi, IntegrationSettingsError, integrationSettings } from "@mom/tools";
import Type from "typebox";

export const NAME = "reminders";

const Settings = Type.Object(
  {
    timezone: Type.Optional(Type.String({ description: "IANA time zone of times given without one (default: the runner host's)" })),
  },
  { additionalProperties: false },
);

export interface RemindersSettings {
  /** The zone of an `at` or `schedule` given without a timezone. */
  timezone: string;
}

/**
 * config.json `tools.settings.reminders`, read at each call. Optional: the integration works
 * without any settings; a wrong one fails naming its field.
 */
export function remindersSettings(api: Pick<CustomToolApi, "settings">): RemindersSettings {
  const host = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (api.settings(NAME) === undefined) return { timezone: host };
  const s = integrationSettings(api, NAME, Settings);
  if (s.timezone !== undefined && !isTimeZone(s.timezone)) {
    throw new IntegrationSettingsError(`config.json tools.settings.${NAME}.timezone: unknown time zone ${JSON.stringify(s.timezone)} (expected an IANA name like "Europe/Vienna" or "UTC")`);
  }
  return { timezone: s.timezone ?? host };
}
