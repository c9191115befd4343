/**
 * @module test/unit/docs/docs — the README is a landing page under 10 KB that links every page of docs/; every
 * relative link in the README and docs/ reaches a file the package ships (README.md, docs/, bin/, wrangler.toml)
 * and, with an anchor, a heading of that page; every `src/…` or `functions/…` path the docs cite exists (the package
 * ships it compiled under dist/, as the README says).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const README_MAX_BYTES = 10 * 1024;

/** Every .md file under docs/, `/`-separated, relative to the repository. */
function docsPages(dir = join(ROOT, "docs")): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return docsPages(path);
    return name.endsWith(".md") ? [relative(ROOT, path).split("\\").join("/")] : [];
  });
}

/** The relative links of a markdown text (inline `[text](target)` and images), code blocks and spans left out. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

/** Whether a repository path is in the package (package.json `files`). */
function shipped(path: string): boolean {
  const files = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: string[] }).files;
  return files.some((f) => (f.endsWith("/") ? path.startsWith(f) : path === f));
}

describe("the README and docs/", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");

  it(`the README is a landing page under ${README_MAX_BYTES} bytes that links every docs page`, () => {
    expect(Buffer.byteLength(readme)).toBeLessThan(README_MAX_BYTES);
    const linked = new Set(relativeLinks(readme).map((t) => t.replace(/#.*$/, "")));
    const pages = docsPages();
    expect(pages.length).toBeGreaterThan(8);
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
  });

  it("every relative link reaches a shipped file (and an anchor a heading of it)", () => {
    const broken: string[] = [];
    for (const page of ["README.md", ...docsPages()]) {
      for (const target of relativeLinks(readFileSync(join(ROOT, page), "utf8"))) {
        const [file, anchor] = target.split("#") as [string, string | undefined];
        const path = relative(ROOT, resolve(dirname(join(ROOT, page)), file === "" ? page : file)).split("\\").join("/");
        if (!existsSync(join(ROOT, path))) broken.push(`${page}: ${target} (no such file)`);
        else if (!shipped(path)) broken.push(`${page}: ${target} (${path} is not in the package)`);
        else if (anchor !== undefined) {
          const headings = [...readFileSync(join(ROOT, path), "utf8").matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));
          if (!headings.includes(anchor)) broken.push(`${page}: ${target} (no heading #${anchor})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("every src/ and functions/ path the docs cite exists (shipped compiled under dist/)", () => {
    const missing: string[] = [];
    for (const page of ["README.md", ...docsPages()]) {
      const text = readFileSync(join(ROOT, page), "utf8");
      for (const m of text.matchAll(/`((?:src|functions)\/[a-z0-9][\w./-]*\.(?:ts|md))`/g)) if (!existsSync(join(ROOT, m[1]!))) missing.push(`${page}: ${m[1]}`);
    }
    expect(missing).toEqual([]);
  });
});
