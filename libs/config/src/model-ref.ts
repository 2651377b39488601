/** `<provider>/<modelId>`; the model id may itself contain slashes (openrouter/meta/llama). */
export const MODEL_REF_PATTERN = "^[^/\\s]+/\\S+$";
const MODEL_REF = new RegExp(MODEL_REF_PATTERN);

export interface ModelRef {
  provider: string;
  modelId: string;
}

export function parseModelRef(ref: string): ModelRef {
  if (!MODEL_REF.test(ref)) {
    throw new Error(`invalid model ${JSON.stringify(ref)}: expected "<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5"`);
  }
  const slash = ref.indexOf("/");
  return { provider: ref.slice(0, slash), modelId: ref.slice(slash + 1) };
}
