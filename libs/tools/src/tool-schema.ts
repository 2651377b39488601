import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import Value from "typebox/value";
import { type MomTool, RISKS } from "./tool-contract.js";

/** `integration.resource.action`: three dot-separated parts of lowercase letters, digits, `_` and `-`. */
export const CUSTOM_TOOL_ID = /^[a-z0-9_-]+(\.[a-z0-9_-]+){2}$/;

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

type Validator = ReturnType<typeof Compile>;
const validators = new WeakMap<object, Validator>();

function validatorFor(schema: TSchema): Validator {
  let v = validators.get(schema);
  if (!v) {
    v = Compile(schema);
    validators.set(schema, v);
  }
  return v;
}

/**
 * Everything wrong with a candidate custom tool, or an empty list. Checks the shape of the
 * contract (id, description, risk, parameters as an object schema that compiles, execute,
 * timeoutMs) without calling anything.
 */
export function toolContractErrors(candidate: unknown): string[] {
  if (!isRecord(candidate)) return [`expected a tool object, got ${describeValue(candidate)}`];
  const errors: string[] = [];
  const { id, description, risk, parameters, execute, timeoutMs } = candidate;
  if (typeof id !== "string" || !CUSTOM_TOOL_ID.test(id)) {
    errors.push(
      `id ${describeValue(id)} must look like integration.resource.action: three dot-separated parts of lowercase letters, digits, _ and - (e.g. github.issues.create)`,
    );
  }
  if (typeof description !== "string" || !description.trim()) errors.push("description must be a non-empty string");
  if (typeof risk !== "string" || !(RISKS as readonly string[]).includes(risk)) {
    errors.push(`risk ${describeValue(risk)} must be one of ${RISKS.join(", ")}`);
  }
  if (!isRecord(parameters) || parameters.type !== "object" || (parameters.properties !== undefined && !isRecord(parameters.properties))) {
    errors.push("parameters must be a TypeBox object schema, e.g. Type.Object({ path: Type.String() })");
  } else {
    try {
      validatorFor(parameters as TSchema);
    } catch (e) {
      errors.push(`parameters is not a valid schema: ${errorMessage(e)}`);
    }
  }
  if (typeof execute !== "function") errors.push("execute must be a function (args, ctx) => Promise<string | { text, details? }>");
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    errors.push(`timeoutMs ${describeValue(timeoutMs)} must be a positive number of milliseconds`);
  }
  return errors;
}

/**
 * Validates a model's arguments for `tool`: fills defaults, coerces what can be coerced
 * ("5" -> 5, "true" -> true), checks, and drops properties the schema does not declare (unless it
 * allows additional properties). Throws an Error naming every bad field, readable by the model.
 */
export function prepareToolArgs(tool: MomTool, raw: unknown): Record<string, unknown> {
  const schema = tool.parameters;
  let args: unknown = raw === undefined || raw === null ? {} : structuredClone(raw);
  args = Value.Default(schema, args);
  args = Value.Convert(schema, args);
  const validator = validatorFor(schema);
  if (!validator.Check(args)) {
    throw new Error(formatArgsErrors(tool, args, validator.Errors(args)));
  }
  return Value.Clean(schema, args) as Record<string, unknown>;
}

interface SchemaError {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

const TYPE_KEYWORDS = new Set(["type", "anyOf", "oneOf", "const", "enum"]);

function formatArgsErrors(tool: MomTool, args: unknown, errors: SchemaError[]): string {
  const lines = new Map<string, string>();
  const add = (field: string, text: string) => {
    if (!lines.has(field)) lines.set(field, text);
  };
  if (!isRecord(args)) {
    add("", `args must be an object, got ${describeValue(args)}`);
  }
  for (const err of errors) {
    const base = err.instancePath.replace(/^\//, "").split("/").filter(Boolean);
    if (err.keyword === "required") {
      const missing = (err.params.requiredProperties as string[] | undefined) ?? [];
      for (const name of missing) {
        const path = [...base, name];
        const sub = schemaAt(tool.parameters, path);
        add(path.join("."), `${path.join(".")}: required${sub ? ` (${describeType(sub)})` : ""}`);
      }
      continue;
    }
    if (err.keyword === "additionalProperties" || (err.keyword === "boolean" && err.schemaPath.endsWith("/additionalProperties"))) {
      // Reported twice: once on the object ("must not have additional properties") and once per property ("schema is false").
      const extra = err.keyword === "boolean" ? base.splice(-1) : ((err.params.additionalProperties as string[] | undefined) ?? []);
      const parent = schemaAt(tool.parameters, base);
      const known = parent && isRecord(parent.properties) ? Object.keys(parent.properties) : [];
      for (const name of extra) {
        const path = [...base, name].join(".");
        add(path, `${path}: unknown argument${known.length ? ` (accepted: ${known.join(", ")})` : ""}`);
      }
      continue;
    }
    const field = base.join(".");
    const sub = schemaAt(tool.parameters, base);
    const got = valueAt(args, base);
    const expected = sub ? `expected ${describeType(sub)}` : err.message;
    // Type mismatches are said by "expected ..."; other failures (bounds, patterns, formats) need their message.
    const why = sub && !TYPE_KEYWORDS.has(err.keyword) ? ` (${err.message})` : "";
    add(field, `${field || "args"}: ${expected}, got ${describeValue(got)}${why}`);
  }
  if (lines.size === 0) lines.set("", "arguments do not match the schema");
  return [
    `Invalid arguments for ${tool.id}:`,
    ...[...lines.values()].map((l) => `  - ${l}`),
    `Expected args: ${describeType(tool.parameters)}`,
    "Fix the arguments and call invoke_tool again.",
  ].join("\n");
}

function schemaAt(schema: unknown, path: string[]): Json | undefined {
  let cur: unknown = schema;
  for (const key of path) {
    if (!isRecord(cur)) return undefined;
    if (isRecord(cur.properties) && isRecord(cur.properties[key])) cur = cur.properties[key];
    else if (/^\d+$/.test(key) && isRecord(cur.items)) cur = cur.items;
    else if (isRecord(cur.additionalProperties)) cur = cur.additionalProperties;
    else return undefined;
  }
  return isRecord(cur) ? cur : undefined;
}

function valueAt(value: unknown, path: string[]): unknown {
  let cur = value;
  for (const key of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Json)[key];
  }
  return cur;
}

/** A compact TypeScript-like rendering of a JSON schema: `string`, `"a" | "b"`, `integer[]`, `{ a: string, b?: number }`. */
export function describeType(schema: unknown, depth = 0): string {
  if (!isRecord(schema)) return "any";
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const union = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(union)) return union.map((s) => describeType(s, depth)).join(" | ");
  const type = schema.type;
  if (Array.isArray(type)) return type.map((t) => describeType({ ...schema, type: t }, depth)).join(" | ");
  switch (type) {
    case "array": {
      const item = describeType(schema.items, depth);
      return item.includes(" | ") ? `(${item})[]` : `${item}[]`;
    }
    case "object": {
      const props = isRecord(schema.properties) ? schema.properties : {};
      const names = Object.keys(props);
      if (names.length === 0 || depth >= 2) return "object";
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      return `{ ${names.map((n) => `${n}${required.has(n) && !(isRecord(props[n]) && "default" in props[n]) ? "" : "?"}: ${describeType(props[n], depth + 1)}`).join(", ")} }`;
    }
    case "string":
      return typeof schema.format === "string" ? `string (${schema.format})` : "string";
    case "number":
    case "integer":
    case "boolean":
    case "null":
      return type;
    default:
      return "any";
  }
}

/** Constraints worth telling the model about: bounds, lengths, patterns, defaults. */
export function describeConstraints(schema: unknown): string[] {
  if (!isRecord(schema)) return [];
  const out: string[] = [];
  const num = (k: string) => (typeof schema[k] === "number" ? (schema[k] as number) : undefined);
  if (num("minimum") !== undefined) out.push(`>= ${num("minimum")}`);
  if (num("exclusiveMinimum") !== undefined) out.push(`> ${num("exclusiveMinimum")}`);
  if (num("maximum") !== undefined) out.push(`<= ${num("maximum")}`);
  if (num("exclusiveMaximum") !== undefined) out.push(`< ${num("exclusiveMaximum")}`);
  if (num("minLength") !== undefined) out.push(`min length ${num("minLength")}`);
  if (num("maxLength") !== undefined) out.push(`max length ${num("maxLength")}`);
  if (num("minItems") !== undefined) out.push(`min ${num("minItems")} items`);
  if (num("maxItems") !== undefined) out.push(`max ${num("maxItems")} items`);
  if (typeof schema.pattern === "string") out.push(`pattern ${schema.pattern}`);
  if ("default" in schema) out.push(`default ${JSON.stringify(schema.default)}`);
  return out;
}

export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (typeof v === "function") return "a function";
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** The message of anything thrown, including errors from another realm (jiti evaluates in the main one). */
export function errorMessage(e: unknown): string {
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") {
    return (e as { message: string }).message;
  }
  return String(e);
}
