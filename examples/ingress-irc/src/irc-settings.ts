import { type Static, Type } from "@mom/ingress-sdk";

/**
 * The IRC adapter's own settings: `settings` of its config.json entry
 * (`{ "type": "external", "platform": "irc", "settings": { … } }`). The SDK validates them with
 * this schema and names the file and the field when one is wrong; `"env:NAME"` reads a secret
 * from the environment.
 */
export const IrcSettings = Type.Object(
  {
    host: Type.String({ minLength: 1, description: "The IRC server's host name" }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Default 6697 with TLS, else 6667" })),
    tls: Type.Optional(Type.Boolean({ description: "Connect with TLS (default true)" })),
    nick: Type.String({ pattern: "^[A-Za-z\\[\\]\\\\`_^{|}][A-Za-z0-9\\[\\]\\\\`_^{|}-]*$", expected: "an IRC nick (letters, digits, []\\`_^{|}-; not starting with a digit or -)" }),
    channels: Type.Array(Type.String({ pattern: "^[#&][^\\s,\\x07]+$", expected: "a channel name such as #mom" }), { description: "Channels to join" }),
    /** Server password (PASS), for a bouncer or a private server. */
    password: Type.Optional(Type.String({ minLength: 1 })),
    /** Log in to services with SASL PLAIN, so the bot's nick is its own. */
    sasl: Type.Optional(Type.Object({ account: Type.String({ minLength: 1 }), password: Type.String({ minLength: 1 }) }, { additionalProperties: false })),
    /**
     * Who a sender is: their nick (anyone may take a free nick), or their services account from
     * IRCv3 account-tag (only people logged in to NickServ have one). `admins` and `dm` list these.
     */
    identity: Type.Optional(Type.Union([Type.Literal("nick"), Type.Literal("account")])),
    /** Bytes of text in one IRC line (the whole line, prefix included, may not pass 512). */
    lineBytes: Type.Optional(Type.Integer({ minimum: 100, maximum: 440 })),
  },
  { additionalProperties: false },
);
export type IrcSettings = Static<typeof IrcSettings>;
