import { type Static, Type } from "@mom/ingress-sdk";

const token = (description: string) => Type.String({ minLength: 1, expected: 'a non-empty string (literal or "env:NAME")', description });
const ms = (description: string) => Type.Integer({ minimum: 0, expected: "milliseconds", description });

/** The Slack adapter's own settings (config.json `adapters.<name>`, type "slack"). */
export const SlackSettings = Type.Object({
  botToken: token("Bot token (xoxb-…): Web API calls and file downloads"),
  appToken: token("App-level token (xapp-…) with connections:write: Socket Mode"),
  apiUrl: Type.Optional(Type.String({ minLength: 1, expected: "a URL", description: "Web API base URL (default https://slack.com/api/)" })),
  backfill: Type.Optional(Type.Boolean({ expected: "true or false", description: "Fetch the messages missed while offline on start (default true)" })),
  backfillAnswerWindowMs: Type.Optional(ms("Backfilled mentions younger than this still get an answer; older ones are only logged (default 10 min)")),
  messageLimit: Type.Optional(Type.Integer({ minimum: 100, maximum: 40_000, expected: "a number of characters", description: "Longest text of one Slack message (default 3,900; Slack's advice is <= 4,000)" })),
  socketPingTimeoutMs: Type.Optional(ms("Socket Mode ping timeout; also Bolt's delay before reconnecting a dropped socket (default 5000)")),
  retryConfig: Type.Optional(
    Type.Object(
      {
        retries: Type.Integer({ minimum: 0 }),
        factor: Type.Optional(Type.Number({ minimum: 1 })),
        minTimeout: Type.Optional(Type.Integer({ minimum: 0 })),
        maxTimeout: Type.Optional(Type.Integer({ minimum: 0 })),
        randomize: Type.Optional(Type.Boolean()),
      },
      { expected: "p-retry options like { retries: 5, minTimeout: 20 }", description: "Retry policy of the Web API client (default @slack/web-api's: 10 retries in ~30 min)" },
    ),
  ),
});
export type SlackSettings = Static<typeof SlackSettings>;
