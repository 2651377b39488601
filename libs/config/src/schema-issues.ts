// TypeBox's own errors are accurate but written for machines ("must match a schema in anyOf").
// This walks the same JSON Schema next to the value and says, per bad field, what was expected
// and what was found. It covers the keywords the config schema uses; TypeBox stays the judge.

export interface Issue {
  /** JSON pointer into the document, "/" for the root. */
  path: string;
  message: string;
}

type Schema = Record<string, any>;

export function schemaIssues(schema: Schema, value: unknown, path = ""): Issue[] {
  const out: Issue[] = [];
  visit(schema, value, path, out);
  return out;
}

function visit(s: Schema, v: unknown, path: string, out: Issue[]): void {
  if (Array.isArray(s.anyOf)) return visitUnion(s, v, path, out);
  if ("const" in s) return void (v !== s.const && out.push(expected(path, s, v)));
  switch (s.type) {
    case "object":
      return visitObject(s, v, path, out);
    case "array":
      if (!Array.isArray(v)) return void out.push(expected(path, s, v));
      return v.forEach((item, i) => visit(s.items, item, `${path}/${i}`, out));
    case "string": {
      const ok = typeof v === "string" && v.length >= (s.minLength ?? 0) && (!s.pattern || new RegExp(s.pattern).test(v));
      return void (ok || out.push(expected(path, s, v)));
    }
    case "integer":
    case "number": {
      const ok =
        typeof v === "number" &&
        Number.isFinite(v) &&
        (s.type === "number" || Number.isInteger(v)) &&
        (s.minimum === undefined || v >= s.minimum) &&
        (s.exclusiveMinimum === undefined || v > s.exclusiveMinimum) &&
        (s.maximum === undefined || v <= s.maximum);
      return void (ok || out.push(expected(path, s, v)));
    }
    case "boolean":
      return void (typeof v === "boolean" || out.push(expected(path, s, v)));
  }
}

function visitObject(s: Schema, v: unknown, path: string, out: Issue[]): void {
  if (!isPlainObject(v)) return void out.push(expected(path, s, v));
  const properties: Schema = s.properties ?? {};
  for (const key of s.required ?? []) {
    if (!(key in v)) out.push({ path: pointer(path, key), message: `missing required key ${JSON.stringify(key)}: expected ${describe(properties[key])}` });
  }
  const patterns = Object.entries<Schema>(s.patternProperties ?? {});
  for (const [key, item] of Object.entries(v)) {
    const at = pointer(path, key);
    if (key in properties) {
      visit(properties[key], item, at, out);
      continue;
    }
    const match = patterns.find(([pattern]) => new RegExp(pattern).test(key));
    if (match) visit(match[1], item, at, out);
    else if (s.additionalProperties === false) out.push({ path: at, message: unknownKey(s, key) });
  }
}

function unknownKey(s: Schema, key: string): string {
  if (s.patternProperties) {
    return `invalid ${s.keyName ?? "key"} ${JSON.stringify(key)}: expected ${s.keyExpected ?? describePatterns(s)}`;
  }
  const allowed = Object.keys(s.properties ?? {});
  // Short keys get a tighter bound, or every three-letter typo "means" some other short key.
  const near = allowed.find((k) => editDistance(k.toLowerCase(), key.toLowerCase()) <= (key.length <= 4 ? 1 : 2));
  const hint = near ? ` (did you mean ${JSON.stringify(near)}?)` : "";
  return `unknown key ${JSON.stringify(key)}${hint}; allowed keys: ${allowed.map((k) => JSON.stringify(k)).join(", ")}`;
}

function visitUnion(s: Schema, v: unknown, path: string, out: Issue[]): void {
  const members: Schema[] = s.anyOf;
  // Tagged unions (adapters, sandboxes): pick the member by `type` and report inside it.
  const tags = members.map((m) => m.properties?.type?.const);
  if (tags.every((t) => typeof t === "string") && isPlainObject(v)) {
    const member = members[tags.findIndex((t) => t === v.type)];
    if (member) return visit(member, v, path, out);
    const want = `one of ${tags.map((t) => JSON.stringify(t)).join(", ")}`;
    if (!("type" in v)) return void out.push({ path: pointer(path, "type"), message: `missing required key "type": expected ${want}` });
    return void out.push({ path: pointer(path, "type"), message: `expected ${want}, got ${show(v.type)}` });
  }
  const attempts = members.map((m) => schemaIssues(m, v, path));
  if (attempts.some((issues) => issues.length === 0)) return;
  // When exactly one member has the right JSON type (an array for `dm`), its complaint is the useful one.
  const sameKind = members.map((m, i) => [m, attempts[i]!] as const).filter(([m]) => m.type === kindOf(v) && !("const" in m));
  if (sameKind.length === 1) return void out.push(...sameKind[0]![1]);
  out.push(expected(path, s, v));
}

function expected(path: string, s: Schema, v: unknown): Issue {
  return { path: path || "/", message: `expected ${describe(s)}, got ${show(v)}` };
}

export function describe(s: Schema | undefined): string {
  if (!s) return "a value";
  if (typeof s.expected === "string") return s.expected;
  if ("const" in s) return JSON.stringify(s.const);
  if (Array.isArray(s.anyOf)) {
    const consts = s.anyOf.every((m: Schema) => "const" in m);
    return consts ? `one of ${s.anyOf.map((m: Schema) => JSON.stringify(m.const)).join(", ")}` : s.anyOf.map(describe).join(" or ");
  }
  switch (s.type) {
    case "integer":
    case "number": {
      const { minimum: min, maximum: max } = s;
      const bound = min !== undefined && max !== undefined ? ` between ${min} and ${max}` : min !== undefined ? ` >= ${min}` : max !== undefined ? ` <= ${max}` : "";
      return `${s.type}${bound}`;
    }
    case "string":
      return s.pattern ? `string matching ${s.pattern}` : s.minLength ? "non-empty string" : "string";
    case "array":
      return `array of ${describe(s.items)}`;
    case "object":
      return "object";
    default:
      return String(s.type ?? "a value");
  }
}

function describePatterns(s: Schema): string {
  return `a key matching ${Object.keys(s.patternProperties).join(" or ")}`;
}

/** Short, unambiguous rendering of what was found. */
export function show(v: unknown): string {
  if (v === undefined) return "nothing";
  if (Array.isArray(v)) return "an array";
  if (v !== null && typeof v === "object") return "an object";
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 57)}..."` : text;
}

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return "array";
  if (v === null) return "null";
  return typeof v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// RFC 6901 escaping keeps paths unambiguous for keys containing "/" or "~".
function pointer(path: string, key: string): string {
  return `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
