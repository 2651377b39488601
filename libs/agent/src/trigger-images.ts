import type { ImageContent } from "@mariozechner/pi-ai";
import type { Attachment } from "@mom/contracts";
import { modelImageType } from "@mom/store";
import { readFile, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";

/**
 * Images larger than this are not sent inline (providers reject big images: Anthropic's limit is
 * 5 MB); the model still sees their path and can look at them with the read tool, which scales
 * images down.
 */
export const MAX_INLINE_IMAGE_BYTES = 4.5 * 1024 * 1024;

/**
 * The images among a message's materialised attachments (png, jpeg, gif, webp by MIME type or
 * extension), as pi image content for the prompt. Files that are gone or too big are skipped.
 */
export async function loadTriggerImages(attachments: Attachment[], workspaceDir: string): Promise<ImageContent[]> {
  const images: ImageContent[] = [];
  for (const a of attachments) {
    if (!a.localPath) continue;
    const mimeType = modelImageType(a.filename, a.mimeType) ?? modelImageType(a.localPath);
    if (!mimeType) continue;
    const file = resolve(workspaceDir, a.localPath);
    const rel = relative(workspaceDir, file);
    if (!rel || rel.startsWith("..") || isAbsolute(rel)) continue;
    try {
      if ((await stat(file)).size > MAX_INLINE_IMAGE_BYTES) continue;
      images.push({ type: "image", data: (await readFile(file)).toString("base64"), mimeType });
    } catch {
      // deleted since it was materialised: the path in the message says where it was
    }
  }
  return images;
}
