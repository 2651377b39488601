// What mom reads from a parsed e-mail: its conversation, whether a machine sent it, whom an answer goes to.
import { createHash, randomUUID } from "node:crypto";
import type { PromptRef } from "@mom/ingress-sdk";
import type { AddressObject, ParsedMail } from "mailparser";

/** A mail mom may answer. `id` is its Message-ID without brackets; `references` are a reply's (this one last); `to`/`cc` a reply's recipients. */
export interface MailInfo {
  id: string;
  channel: string;
  subject: string;
  references: string[];
  to: string[];
  cc: string[];
}

const MOM_ID = /^<?mom\.([0-9a-f]{24})\.[^@>]+@[^>]+>?$/;
export const bare = (id: string): string => id.replace(/^<|>$/g, "");
const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** The Message-ID of a mail mom sends in `channel`: names the channel (a reply finds the thread), a prompt's its approval (one survives a restart). */
export const momMessageId = (channel: string, address: string, approvalId?: string): string =>
  `mom.${channel}.${approvalId ? `approval-${Buffer.from(approvalId).toString("base64url")}.` : ""}${randomUUID()}@${address.slice(address.indexOf("@") + 1)}`;

/** The approval prompt a mail replies to (its In-Reply-To, as momMessageId wrote it). */
export function promptOf(p: ParsedMail): PromptRef | undefined {
  const m = /^<?mom\.([0-9a-f]{24})\.approval-([\w-]+)\./.exec(p.inReplyTo ?? "");
  return m ? { channel: m[1]!, approvalId: Buffer.from(m[2]!, "base64url").toString(), promptId: bare(p.inReplyTo!) } : undefined;
}

/** The Message-ID, or for a mail without one a hash of its bytes, so that a redelivery is still the same message. */
export const messageIdOf = (p: ParsedMail, source: Buffer): string => (p.messageId ? bare(p.messageId) : `sha256-${sha256(source)}`);

function referencesOf(p: ParsedMail): string[] {
  const refs = [p.references ?? []].flat();
  return p.inReplyTo && !refs.includes(p.inReplyTo) ? [...refs, p.inReplyTo] : refs;
}

/**
 * The channel of a mail is its thread: the root Message-ID (the first of References, else
 * In-Reply-To, else its own) hashed into a subject token. A reply to one of mom's mails takes the
 * channel that mail's id names, so clients that keep only In-Reply-To stay in the thread.
 */
export function threadChannel(p: ParsedMail, ownId: string): string {
  const refs = referencesOf(p);
  const mine = refs.map((r) => MOM_ID.exec(r)).find(Boolean);
  return mine ? mine[1]! : sha256(refs[0] ?? `<${ownId}>`).slice(0, 24);
}

export const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  [a ?? []].flat().flatMap((o) => o.value.flatMap((v) => [v, ...(v.group ?? [])]).flatMap((v) => (v.address ? [v.address.toLowerCase()] : [])));

/** Why this mail was sent by a machine (RFC 3834, vacation notices, lists), or undefined. */
export function autoReplyReason(p: ParsedMail): string | undefined {
  const h = p.headers;
  const auto = String(h.get("auto-submitted") ?? "no").toLowerCase();
  if (!auto.startsWith("no")) return `Auto-Submitted: ${auto}`;
  for (const name of ["x-autoreply", "x-autorespond"]) if (h.has(name)) return `${name} header`;
  // mailparser gathers the List-* headers under "list".
  if ((h.get("list") as { id?: unknown } | undefined)?.id) return "List-Id header";
  const precedence = String(h.get("precedence") ?? "").toLowerCase();
  return ["bulk", "junk", "list"].includes(precedence) ? `Precedence: ${precedence}` : undefined;
}

/** A non-delivery report (multipart/report, MAILER-DAEMON, Return-Path <>): why, and the Message-ID of what bounced when attached. */
export async function bounceOf(p: ParsedMail, parse: (b: Buffer) => Promise<ParsedMail>): Promise<{ original?: string; why: string } | undefined> {
  const report = (p.headers.get("content-type") as { value?: string } | undefined)?.value === "multipart/report";
  const nullSender = p.headers.has("return-path") && addresses(p.headers.get("return-path") as AddressObject).length === 0;
  if (!report && !nullSender && !/^(mailer-daemon|postmaster)@/.test(addresses(p.from)[0] ?? "")) return undefined;
  const status = p.attachments.find((a) => a.contentType === "message/delivery-status")?.content.toString() ?? "";
  const why = /^Diagnostic-Code:\s*(?:[^;\n]*;\s*)?(.*(?:\n[ \t].*)*)/im.exec(status)?.[1]?.replace(/\s+/g, " ").trim() ?? p.subject ?? "bounced";
  const returned = p.attachments.find((a) => a.contentType === "message/rfc822" || a.contentType === "text/rfc822-headers");
  const original = returned && (await parse(returned.content)).messageId;
  return { ...(original && { original: bare(original) }), why };
}

export const replySubject = (subject: string): string => (/^re:/i.test(subject.trim()) ? subject.trim() : `Re: ${subject.trim()}`);

/** A reply goes to Reply-To (or From), with the other recipients in Cc; only `allowed` addresses (allowFrom), never mom itself. */
export function mailInfo(p: ParsedMail, id: string, channel: string, self: string, allowed: (a: string) => boolean): MailInfo {
  const replyTo = addresses(p.replyTo).filter(allowed);
  const to = (replyTo.length ? replyTo : addresses(p.from)).filter((a) => a !== self);
  const cc = [...new Set([...addresses(p.to), ...addresses(p.cc)])].filter((a) => a !== self && !to.includes(a) && allowed(a));
  return { id, channel, subject: p.subject ?? "", references: [...referencesOf(p), `<${id}>`], to, cc };
}
