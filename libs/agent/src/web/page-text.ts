import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";
import type { FetchedPage } from "./fetch-page.js";

export interface PageText {
  title?: string;
  /** Markdown for HTML, the text itself for text types. */
  text: string;
  kind: "html" | "text" | "binary";
}

// Turndown, not a faster-looking converter: it stays linear on a 1 MB page (bench/web-fetch.mjs).
const markdown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" }).remove(["script", "style", "noscript"]);

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-ndjson|[\w.+-]*\+(json|xml))\b)/i;
const HTML_TYPES = /^(text\/html|application\/xhtml\+xml)\b/i;

function decode(page: FetchedPage, html?: boolean): string {
  const declared = /charset\s*=\s*"?([\w-]+)/i.exec(page.contentType)?.[1];
  // An HTML page may say its charset only in a <meta> near the top.
  const meta = html && !declared ? /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(page.body.subarray(0, 4096).toString("latin1"))?.[1] : undefined;
  try {
    return new TextDecoder(declared ?? meta ?? "utf-8").decode(page.body);
  } catch {
    return new TextDecoder("utf-8").decode(page.body);
  }
}

/**
 * What a fetched page says, readable: HTML through Readability (the Firefox reader view's
 * extraction: the article without menus, ads and scripts; the whole body when it finds no
 * article) and then to Markdown, links kept; text types as they are; anything else is named,
 * not shown.
 */
export function pageText(page: FetchedPage): PageText {
  const type = page.contentType || "application/octet-stream";
  const sniffedHtml = !page.contentType && /^\s*<(!doctype html|html)/i.test(page.body.subarray(0, 512).toString("latin1"));
  if (HTML_TYPES.test(type) || sniffedHtml) {
    const html = decode(page, true);
    const { document } = parseHTML(html);
    const title = document.querySelector("title")?.textContent?.trim() || undefined;
    let article: { title?: string | null; content?: string | null } | null = null;
    try {
      article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0]).parse();
    } catch {
      article = null;
    }
    const content = article?.content ?? parseHTML(html).document.querySelector("body")?.innerHTML ?? html;
    const text = markdown.turndown(content).replace(/\n{3,}/g, "\n\n").trim();
    return { title: article?.title?.trim() || title, text, kind: "html" };
  }
  if (TEXT_TYPES.test(type)) return { text: decode(page), kind: "text" };
  return { text: `(${type}, ${page.body.length} bytes: not text, not shown)`, kind: "binary" };
}
