import type { WebClient } from "@slack/web-api";
import type { SlackBlock, SlackPoster } from "./slack-renderer.js";

/** SlackPoster over @slack/web-api (which waits out 429 Retry-After and retries). */
export class WebApiPoster implements SlackPoster {
  constructor(private readonly client: WebClient) {}

  async post(channel: string, text: string, threadTs?: string, blocks?: SlackBlock[]): Promise<string> {
    const res = await this.client.chat.postMessage({
      channel,
      text,
      unfurl_links: false,
      unfurl_media: false,
      ...(threadTs && { thread_ts: threadTs }),
      ...(blocks && { blocks: blocks as never }),
    });
    if (!res.ts) throw new Error("chat.postMessage returned no ts");
    return res.ts;
  }

  async update(channel: string, ts: string, text: string, blocks?: SlackBlock[]): Promise<void> {
    await this.client.chat.update({ channel, ts, text, ...(blocks && { blocks: blocks as never }) });
  }

  async delete(channel: string, ts: string): Promise<void> {
    await this.client.chat.delete({ channel, ts });
  }

  async upload(channel: string, file: { filename: string; title: string; bytes: Uint8Array }, threadTs?: string): Promise<void> {
    const common = { file: Buffer.from(file.bytes), filename: file.filename, title: file.title };
    await this.client.files.uploadV2(threadTs ? { ...common, channel_id: channel, thread_ts: threadTs } : { ...common, channel_id: channel });
  }

  async react(channel: string, ts: string, name: string, add: boolean): Promise<void> {
    if (add) await this.client.reactions.add({ channel, timestamp: ts, name });
    else await this.client.reactions.remove({ channel, timestamp: ts, name });
  }
}
