import type { FakeRequest } from "@mom/testing";

/** A fake model's answer naming what the person asked for (`ask <marker>` -> `answer <marker>`), so a test can tell each answer's mention. */
export function answerBack(req: FakeRequest): { text: string } {
  const asked = [...JSON.stringify(req.messages).matchAll(/ask (\w+)/g)].at(-1)?.[1];
  return { text: asked ? `answer ${asked}` : "nothing asked" };
}
