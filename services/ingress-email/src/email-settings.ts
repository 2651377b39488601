import { type Static, Type } from "@mom/ingress-sdk";

const text = (expected: string) => Type.String({ minLength: 1, expected });
const port = (what: string) => Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, expected: `the ${what} port, 1-65535` }));
const flag = (expected: string) => Type.Optional(Type.Boolean({ expected }));

/** The e-mail adapter's settings (config.json `adapters.<name>.settings`, type "external", platform "email"): docs/email.md. */
export const EmailSettings = Type.Object({
  address: Type.String({ pattern: "^[^@\\s]+@[^@\\s]+$", expected: "mom's e-mail address (name@domain)" }),
  name: Type.Optional(text("the display name of mom's mail (default mom)")),
  user: Type.Optional(text("the mail account's login for IMAP and SMTP (default: address)")),
  password: text('the mail account\'s password, e.g. "env:MOM_EMAIL_PASSWORD"'),
  imapHost: text("the IMAP server's host name"),
  imapPort: port("IMAP"),
  imapTls: flag("true (TLS from the start, the default, port 993) or false (STARTTLS when offered)"),
  mailbox: Type.Optional(text("the IMAP folder mom reads (default INBOX)")),
  smtpHost: text("the SMTP server's host name"),
  smtpPort: port("SMTP"),
  smtpTls: flag("true (TLS from the start, port 465) or false (the default: STARTTLS when offered, port 587)"),
  smtpAuth: flag("whether mom logs in to the SMTP server (default true; false for a relay that trusts mom's network)"),
  allowFrom: Type.Array(Type.String({ pattern: "^(@[^@\\s]+|[^@\\s]+@[^@\\s]+)$", expected: 'an address ("ana@example.org") or a domain ("@example.org")' }), {
    minItems: 1,
    expected: 'a non-empty list of the senders mom answers: addresses ("ana@example.org") or whole domains ("@example.org")',
  }),
});
export type EmailSettings = Static<typeof EmailSettings>;

/** Whether mom answers `address`: it is on `allowFrom`, or its domain is. */
export function senderAllowed(address: string, allowFrom: readonly string[]): boolean {
  const a = address.toLowerCase();
  return allowFrom.some((e) => (e.startsWith("@") ? a.endsWith(e.toLowerCase()) : a === e.toLowerCase()));
}
