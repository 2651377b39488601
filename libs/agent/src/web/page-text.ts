import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import TurndownService from "turndown";
import type { FetchedPage } from "./fetch-page.js";

const WORKER = fileURLToPath(new URL("../../worker/page-text-worker.mjs", import.meta.url));
/** Heap of one conversion's worker: a 5 MB page's DOM takes a few hundred MB at most. */
const WORKER_HEAP_MB = 512;

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
  if (isHtml(page)) {
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

function isHtml(page: Pick<FetchedPage, "contentType" | "body">): boolean {
  const sniffed = !page.contentType && /^\s*<(!doctype html|html)/i.test(page.body.subarray(0, 512).toString("latin1"));
  return HTML_TYPES.test(page.contentType) || sniffed;
}

/**
 * pageText, with HTML converted in a worker thread of its own that is ended after `timeoutMs` or
 * at `signal`. The cost of parsing and Readability depends on the page's structure, not its size
 * (2,000 nested <div>s, 30 KB, took a minute), and the runner's event loop serves every channel:
 * a page chosen by whoever controls it must never hold it.
 */
export async function pageTextOffThread(page: FetchedPage, timeoutMs: number, signal?: AbortSignal): Promise<PageText> {
  if (!isHtml(page)) return pageText(page);
  const worker = new Worker(WORKER, { workerData: { contentType: page.contentType, body: page.body }, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
  try {
    return await new Promise<PageText>((resolve, reject) => {
      const fail = (why: string) => reject(new Error(`${page.url}: the page could not be made readable: ${why}; not shown`));
      const timer = setTimeout(() => fail(`it took more than ${Math.round(timeoutMs / 1000)} s (web.timeoutSeconds; HTML too large or too deeply nested)`), timeoutMs);
      const abort = () => reject(new Error("aborted"));
      signal?.addEventListener("abort", abort, { once: true });
      const done = () => (clearTimeout(timer), signal?.removeEventListener("abort", abort));
      worker.once("message", (m: { ok: true; result: PageText } | { ok: false; error: string }) => (done(), m.ok ? resolve(m.result) : fail(m.error)));
      worker.once("error", (err) => (done(), fail(err.message)));
      worker.once("exit", (code) => (done(), fail(`the converter ended (exit code ${code})`)));
    });
  } finally {
    void worker.terminate();
  }
}
