import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { imageSize } from "image-size";

type AnyTool = ToolDefinition<any, any, any>;

const WORKER = fileURLToPath(new URL("../worker/image-worker.mjs", import.meta.url));

/**
 * Most pixels an image may have for the read tool to decode it. A PNG of 100 megapixels is 100 KB
 * on disk and 400 MB decoded, so the file's size says nothing: the header's dimensions are checked
 * before any decoding. 50 megapixels covers camera photos (8,000×6,000 is 48).
 */
export const MAX_DECODED_PIXELS = 50_000_000;
/** What pi sends without scaling (its resizeImage defaults: 2,000 pixels a side, 4.5 MB of base64). */
const MAX_SIDE = 2000;
const MAX_INLINE_BASE64 = 4.5 * 1024 * 1024;
/** Images being scaled at once in this process: each can hold a few hundred MB while it is. */
const MAX_AT_ONCE = 2;
const SCALE_TIMEOUT_MS = 60_000;

type Content = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

/** Width and height from an image's header (image-size: PNG, GIF, JPEG, WebP and more); undefined when it cannot be read. */
export function imageDimensions(b: Uint8Array): { width: number; height: number } | undefined {
  try {
    const { width, height } = imageSize(b);
    return width && height ? { width, height } : undefined;
  } catch {
    return undefined;
  }
}

let running = 0;
const waiting: (() => void)[] = [];

async function scaleInWorker(data: string, mimeType: string, signal: AbortSignal | undefined): Promise<{ data: string; mimeType: string; wasResized: boolean; originalWidth: number; originalHeight: number; width: number; height: number } | null> {
  while (running >= MAX_AT_ONCE) await new Promise<void>((r) => waiting.push(r));
  running++;
  // One worker per image: its WebAssembly memory (which never shrinks) goes when it ends.
  const worker = new Worker(WORKER, { workerData: { data, mimeType } });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(null), SCALE_TIMEOUT_MS);
      const abort = () => reject(new Error("Operation aborted"));
      signal?.addEventListener("abort", abort, { once: true });
      const done = () => (clearTimeout(timer), signal?.removeEventListener("abort", abort));
      worker.once("message", (m) => (done(), resolve(m)));
      worker.once("error", () => (done(), resolve(null)));
      worker.once("exit", () => (done(), resolve(null)));
    });
  } finally {
    void worker.terminate();
    running--;
    waiting.shift()?.();
  }
}

/**
 * pi's read tool with its image scaling moved off the runner's event loop (pi scales on the
 * calling thread) and bounded: an image whose header claims more than MAX_DECODED_PIXELS is not
 * decoded at all. `read` must be created with `autoResizeImages: false`; what the model gets is
 * what pi's own scaling gives it.
 */
export function scaleImagesOffThread(read: AnyTool): AnyTool {
  return {
    ...read,
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      const result = await read.execute(toolCallId, params, signal, onUpdate, ctx);
      const content = result.content as Content[];
      const image = content.find((c): c is Extract<Content, { type: "image" }> => c.type === "image");
      const head = content[0];
      if (!image || head?.type !== "text") return result;
      // pi's first line, then its own notes (a model without vision): kept under ours.
      const nl = head.text.indexOf("\n");
      const rest = nl < 0 ? "" : head.text.slice(nl);
      const size = imageDimensions(Buffer.from(image.data.slice(0, 64 * 1024), "base64"));
      const omitted = (why: string) => ({ ...result, content: [{ type: "text" as const, text: `Read image file [${image.mimeType}]\n[Image omitted: ${why}]${rest}` }] });
      if (!size) return omitted("its size could not be read from the file (not an image whose header mom can read).");
      const pixels = size.width * size.height;
      if (pixels > MAX_DECODED_PIXELS) {
        return omitted(
          `it is ${size.width}x${size.height} pixels (${Math.round(pixels / 1e6)} megapixels); mom decodes images of at most ${MAX_DECODED_PIXELS / 1e6} megapixels. Make a smaller copy with bash and read that.`,
        );
      }
      if (size.width <= MAX_SIDE && size.height <= MAX_SIDE && image.data.length < MAX_INLINE_BASE64) return result;
      const scaled = await scaleInWorker(image.data, image.mimeType, signal);
      if (!scaled) return omitted("could not be resized below the inline image size limit.");
      const note = scaled.wasResized
        ? `\n[Image: original ${scaled.originalWidth}x${scaled.originalHeight}, displayed at ${scaled.width}x${scaled.height}. Multiply coordinates by ${(scaled.originalWidth / scaled.width).toFixed(2)} to map to original image.]`
        : "";
      return { ...result, content: [{ type: "text", text: `Read image file [${scaled.mimeType}]${note}${rest}` }, { type: "image", data: scaled.data, mimeType: scaled.mimeType }] };
    },
  };
}
