// V8's JSON.parse messages do not always carry a position ("Unexpected token '}', ... is not
// valid JSON"), and a config author needs line and column. This scanner re-reads text that
// JSON.parse already rejected and finds the first offending character.

export interface SyntaxProblem {
  line: number;
  column: number;
  reason: string;
}

export function locateJsonError(text: string): SyntaxProblem | undefined {
  let i = 0;
  const fail = (reason: string): never => {
    throw Object.assign(new Error(reason), { offset: i });
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const describeHere = () => (i >= text.length ? "unexpected end of input" : `unexpected ${JSON.stringify(text[i])}`);
  const expect = (ch: string, what: string) => (text[i] === ch ? i++ : fail(`${describeHere()}, expected ${what}`));

  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === "{") return object();
    if (ch === "[") return array();
    if (ch === '"') return string();
    if (ch !== undefined && /[-0-9]/.test(ch)) return number();
    for (const word of ["true", "false", "null"]) if (text.startsWith(word, i)) return void (i += word.length);
    fail(`${describeHere()}, expected a value`);
  };
  const object = () => {
    i++;
    ws();
    if (text[i] === "}") return void i++;
    for (;;) {
      ws();
      if (text[i] !== '"') fail(`${describeHere()}, expected a double-quoted key`);
      string();
      ws();
      expect(":", '":"');
      value();
      ws();
      if (text[i] === ",") {
        i++;
        ws();
        if (text[i] === "}") fail('unexpected "}" after ",": trailing commas are not allowed');
        continue;
      }
      return void expect("}", '"," or "}"');
    }
  };
  const array = () => {
    i++;
    ws();
    if (text[i] === "]") return void i++;
    for (;;) {
      value();
      ws();
      if (text[i] === ",") {
        i++;
        ws();
        if (text[i] === "]") fail('unexpected "]" after ",": trailing commas are not allowed');
        continue;
      }
      return void expect("]", '"," or "]"');
    }
  };
  const string = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail("unescaped control character (e.g. a line break) inside a string");
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) i += 4;
        else if (!`"\\/bfnrt`.includes(text[i] ?? "x")) fail("invalid escape sequence in string");
      }
      i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
  };
  const number = () => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail(`${describeHere()}, expected a number`);
    i += m![0].length;
    if (i < text.length && /[0-9.]/.test(text[i]!)) fail("invalid number (leading zeros and bare dots are not allowed)");
  };

  try {
    value();
    ws();
    if (i < text.length) fail(`${describeHere()} after the end of the JSON value`);
    return undefined;
  } catch (err) {
    const offset = (err as { offset?: number }).offset ?? 0;
    const before = text.slice(0, offset).split("\n");
    return { line: before.length, column: before[before.length - 1]!.length + 1, reason: (err as Error).message };
  }
}
