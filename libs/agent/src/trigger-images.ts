import type { ImageContent } from "@mariozechner/pi-ai";
import type { Attachment } from "@mom/contracts";
import { modelImageType, readBeneath } from "@mom/store";
import { isAbsolute, relative, resolve, sep } from "node:path";

/**
 * Images larger than this are not sent inline (providers reject big images: Anthropic's limit is
 * 5 MB); the model still sees their path and can look at them with the read tool, which scales
 * images down.
 */
export const MAX_INLINE_IMAGE_BYTES = 4.5 * 1024 * 1024;

/**
 * The images among a message's materialised attachments (png, jpeg, gif, webp by MIME type or
 * extension), as pi image content for the prompt. Files that are gone or too big are skipped, and
 * so is anything not a regular file beneath the channel's directory (an attachment the agent
 * replaced with a symlink to another channel's file, or a FIFO), read without following a symlink.
 */
export async function loadTriggerImages(attachments: Attachment[], workspaceDir: string, channelDir: string): Promise<ImageContent[]> {
  const images: ImageContent[] = [];
  for (const a of attachments) {
    if (!a.localPath) continue;
    const mimeType = modelImageType(a.filename, a.mimeType) ?? modelImageType(a.localPath);
    if (!mimeType) continue;
    const rel = relative(channelDir, resolve(workspaceDir, a.localPath));
    if (!rel || rel.startsWith("..") || isAbsolute(rel)) continue;
    try {
      const bytes = await readBeneath(channelDir, rel.split(sep).join("/"), MAX_INLINE_IMAGE_BYTES);
      if (bytes) images.push({ type: "image", data: bytes.toString("base64"), mimeType });
    } catch {
      // too big, or no longer a file of the channel's: the path in the message says where it was
    }
  }
  return images;
}
