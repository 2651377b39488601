export { emailIngress } from "./email-ingress.js";
export { EmailSettings, senderAllowed } from "./email-settings.js";
export { ImapMailbox, type MailboxOptions } from "./imap-mailbox.js";
