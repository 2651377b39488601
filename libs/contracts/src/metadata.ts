import Type, { type Static } from "typebox";

/** Levels of nesting a `metadata` value may have below its own key (`{"a":{"b":1}}` is 2). */
export const METADATA_MAX_DEPTH = 8;
/** Bytes of `metadata` as JSON (UTF-8 counted as UTF-16 code units, near enough for a bound). */
export const METADATA_MAX_BYTES = 16 * 1024;

/**
 * Why a metadata object is out of bounds, or undefined when it fits. Walks without recursion and
 * stops at the first excess, so a value nested 10,000 levels deep costs no stack and little time
 * (and never reaches JSON.stringify, which would overflow on it later).
 */
export function metadataProblem(value: Record<string, unknown>): string | undefined {
  const stack: Array<{ v: unknown; path: string; depth: number }> = [{ v: value, path: "/metadata", depth: 0 }];
  let size = 2;
  while (stack.length) {
    const { v, path, depth } = stack.pop()!;
    if (v === null || typeof v !== "object") {
      size += typeof v === "string" ? v.length + 2 : String(v).length;
    } else {
      if (depth > METADATA_MAX_DEPTH) return `nested deeper than ${METADATA_MAX_DEPTH} levels at ${path}`;
      const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
      size += 2;
      for (const [k, x] of entries) {
        size += Array.isArray(v) ? 1 : k.length + 4;
        stack.push({ v: x, path: `${path}/${escapePointer(k)}`, depth: depth + 1 });
      }
    }
    if (size > METADATA_MAX_BYTES) return `larger than ${METADATA_MAX_BYTES} bytes as JSON`;
  }
  return undefined;
}

/** A JSON Pointer segment, cut short: the path names the place, it need not copy a huge key. */
function escapePointer(key: string): string {
  const short = key.length > 40 ? `${key.slice(0, 40)}…` : key;
  return short.replace(/~/g, "~0").replace(/\//g, "~1");
}

/**
 * Free-form data an ingress attaches to a message (platform extras). Bounded so that a hostile or
 * broken producer cannot make every reader of the log walk or copy something huge.
 */
export const Metadata = Type.Refine(
  Type.Record(Type.String(), Type.Unknown(), {
    description: `Platform extras; at most ${METADATA_MAX_DEPTH} levels deep and ${METADATA_MAX_BYTES} bytes as JSON`,
  }),
  (v) => metadataProblem(v as Record<string, unknown>) === undefined,
  (v) => metadataProblem(v as Record<string, unknown>) ?? "metadata out of bounds",
);
export type Metadata = Static<typeof Metadata>;
