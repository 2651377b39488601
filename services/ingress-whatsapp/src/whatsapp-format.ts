import { chatMarkup, type ChatMarkup } from "@mom/ingress-sdk";

/**
 * WhatsApp's own markup: *bold*, _italic_, ~strike~, `code`, ```block```, "> " quotes and "- "
 * lists; no links (URLs are shown as they are), no escaping: text as it is.
 */
export const whatsappMarkup: ChatMarkup = {
  bold: (t) => `*${t}*`,
  italic: (t) => `_${t}_`,
  strike: (t) => `~${t}~`,
  code: (t) => `\`${t}\``,
  codeBlock: (t) => `\`\`\`\n${t}\n\`\`\``,
  quote: (t) => t.split("\n").map((l) => `> ${l}`).join("\n"),
  link: (href, text) => (text === href ? href : `${text} (${href})`),
  image: (href, alt) => (alt ? `${alt} (${href})` : href),
  html: (t) => t,
  text: (t) => t,
  bullet: "-",
  rule: "——————",
};

/** The agent's Markdown in WhatsApp's markup. */
export const markdownToWhatsApp = chatMarkup(whatsappMarkup);
