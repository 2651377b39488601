import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatFileSize, formatSizeOverLimit, modelImageType, safeFileName, writeNewFile } from "./attachment-files.js";

describe("safeFileName", () => {
  it("keeps ordinary names", () => {
    expect(safeFileName("report.pdf")).toBe("report.pdf");
    expect(safeFileName("Q3 report (final).xlsx")).toBe("Q3 report _final_.xlsx");
    expect(safeFileName("Bericht-März.pdf")).toBe("Bericht-März.pdf");
  });

  it("strips directories and traversal", () => {
    expect(safeFileName("../../etc/passwd")).toBe("passwd");
    expect(safeFileName("a/b/c.txt")).toBe("c.txt");
    expect(safeFileName("C:\\Users\\x\\evil.exe")).toBe("evil.exe");
    expect(safeFileName("dir/")).toBe("dir");
  });

  it("leaves nothing dangerous: no hidden files, control characters, shell metacharacters", () => {
    expect(safeFileName(".bashrc")).toBe("bashrc");
    expect(safeFileName("..")).toBe("file");
    expect(safeFileName("")).toBe("file");
    expect(safeFileName("...")).toBe("file");
    expect(safeFileName("a\u0000b\nc.txt")).toBe("a_b_c.txt");
    expect(safeFileName("$(rm -rf ~);`x`|y.sh")).toBe("_rm -rf _x_y.sh");
  });

  it("caps long names and keeps the extension", () => {
    const name = safeFileName(`${"x".repeat(300)}.tar.gz`);
    expect(name.length).toBe(120);
    expect(name.endsWith(".gz")).toBe(true);
  });
});

describe("writeNewFile", () => {
  it("never overwrites: adds -2, -3 before the extension", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "mom-files-")), "attachments");
    expect(await writeNewFile(dir, "a.txt", Buffer.from("one"))).toBe("a.txt");
    expect(await writeNewFile(dir, "a.txt", Buffer.from("two"))).toBe("a-2.txt");
    expect(await writeNewFile(dir, "a.txt", Buffer.from("three"))).toBe("a-3.txt");
    expect(await writeNewFile(dir, "README", Buffer.from("r"))).toBe("README");
    expect(await writeNewFile(dir, "README", Buffer.from("r"))).toBe("README-2");
    expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("one");
    expect(readFileSync(join(dir, "a-2.txt"), "utf8")).toBe("two");
  });

  it("gives concurrent writers different names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-files-"));
    const names = await Promise.all(Array.from({ length: 8 }, (_, i) => writeNewFile(dir, "x.bin", Buffer.from([i]))));
    expect(new Set(names).size).toBe(8);
    expect(readdirSync(dir).length).toBe(8);
  });
});

describe("modelImageType and formatFileSize", () => {
  it("recognises model images by MIME type or extension", () => {
    expect(modelImageType("x.PNG")).toBe("image/png");
    expect(modelImageType("photo", "image/jpeg")).toBe("image/jpeg");
    expect(modelImageType("photo.jpg", "application/octet-stream")).toBe("image/jpeg");
    expect(modelImageType("a.webp")).toBe("image/webp");
    expect(modelImageType("a.gif")).toBe("image/gif");
    expect(modelImageType("a.svg")).toBeUndefined();
    expect(modelImageType("a.pdf", "application/pdf")).toBeUndefined();
  });

  it("formats sizes", () => {
    expect(formatFileSize(500)).toBe("500 bytes");
    expect(formatFileSize(12 * 1024)).toBe("12 KB");
    expect(formatFileSize(3.4 * 1024 * 1024)).toBe("3.4 MB");
    expect(formatFileSize(31 * 1024 * 1024)).toBe("31 MB");
    expect(formatSizeOverLimit(31 * 1024 * 1024, 20 * 1024 * 1024)).toBe("31 MB > 20 MB limit");
    expect(formatSizeOverLimit(65_537, 65_536)).toBe("65,537 bytes > 65,536 bytes limit");
  });
});
