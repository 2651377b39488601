import { type Static, Type } from "@mom/ingress-sdk";

/** The Matrix adapter's own settings: config.json `adapters.<name>.settings` of an external adapter with platform "matrix". */
export const MatrixSettings = Type.Object(
  {
    homeserverUrl: Type.String({ pattern: "^https?://", expected: "the homeserver's client API base URL, e.g. https://matrix.example.org", description: "Client-Server API base URL" }),
    accessToken: Type.String({ minLength: 1, expected: 'the bot account\'s access token (or "env:NAME")', description: "Access token of the bot's account" }),
    userId: Type.Optional(
      Type.String({ pattern: "^@[^:\\s]+:\\S+$", expected: "a Matrix user id such as @mom:example.org", description: "The bot's user id; checked against the token's (whoami) at start" }),
    ),
    autoJoin: Type.Optional(Type.Boolean({ description: "Accept every room invite (default true)" })),
    store: Type.Optional(
      Type.String({
        minLength: 1,
        expected: 'a file path such as /data/matrix-home.json, or "memory"',
        description: 'Where the sync token is kept across restarts (a JSON file, replaced whole on each change); "memory" (default): only for the life of the process',
      }),
    ),
    editIntervalMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000, description: "Shortest time between two edits of a run's progress message (default 2000)" })),
  },
  { additionalProperties: false },
);
export type MatrixSettings = Static<typeof MatrixSettings>;

/**
 * Characters in one message. An event may have 65,536 bytes of JSON and an edit carries its text
 * three times (the fallback body, and the new content's body and HTML), so this leaves room for
 * multi-byte characters and markup.
 */
export const MATRIX_MESSAGE_LIMIT = 4000;
