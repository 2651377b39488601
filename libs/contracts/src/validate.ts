import type { TSchema, Static } from "typebox";
import { Compile } from "typebox/compile";

export type Validation<T> = { ok: true; value: T } | { ok: false; reason: string };

export interface Validator<S extends TSchema> {
  check(value: unknown): Validation<Static<S>>;
}

// A compiled schema keeps its generated source and code (about 45 KB for a ChannelMessage): a
// runner opening a feed per channel compiled the same schema once per channel.
const compiledValidators = new WeakMap<TSchema, Validator<TSchema>>();

/** Compiles a schema once per process; failures come back as one readable line naming the JSON paths at fault. */
export function validator<S extends TSchema>(schema: S): Validator<S> {
  let v = compiledValidators.get(schema);
  if (!v) compiledValidators.set(schema, (v = compile(schema)));
  return v as Validator<S>;
}

function compile<S extends TSchema>(schema: S): Validator<S> {
  const compiled = Compile(schema);
  return {
    check(value) {
      if (compiled.Check(value)) return { ok: true, value: value as Static<S> };
      const errors = [...compiled.Errors(value)].filter((e) => e.keyword !== "boolean").slice(0, 5);
      const reason = errors
        .map((e) => `${e.instancePath === "" ? "/" : e.instancePath}: ${describe(e)}`)
        .filter((line, i, all) => all.indexOf(line) === i)
        .join("; ");
      return { ok: false, reason: reason || "does not match schema" };
    },
  };
}

const utf8 = new TextDecoder();

/** Parses a JSON payload and validates it; both failure kinds yield a reason string. */
export function parsePayload<S extends TSchema>(v: Validator<S>, data: Uint8Array | string): Validation<Static<S>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof data === "string" ? data : utf8.decode(data));
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
  }
  return v.check(parsed);
}

function describe(e: { keyword: string; message: string; params: Record<string, unknown> }): string {
  if (e.keyword === "additionalProperties" && Array.isArray(e.params.additionalProperties)) {
    return `unknown properties ${e.params.additionalProperties.map((p) => JSON.stringify(p)).join(", ")}`;
  }
  return e.message;
}
