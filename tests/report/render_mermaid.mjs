// Renders Mermaid flowcharts with the real mermaid package (package-lock.json) in Debian's chromium, driven by
// playwright-core (which never downloads a browser of its own). Reads a JSON list of sources on stdin; prints a
// JSON list of {ok, error, nodes, width} per source. tests/report/test_mermaid_browser.py runs it.
import { readFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const mermaidJs = readFileSync(join(root, "node_modules", "mermaid", "dist", "mermaid.min.js"), "utf8");
const sources = JSON.parse(readFileSync(0, "utf8"));
const profile = mkdtempSync(join(tmpdir(), "trainstack-chromium-"));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
  ],
  viewport: { width: 880, height: 1200 },
});
try {
  const page = await browser.newPage();
  await page.setContent("<!doctype html><html><body><div id='out'></div></body></html>");
  await page.addScriptTag({ content: mermaidJs });
  const results = await page.evaluate(async (all) => {
    // securityLevel strict and htmlLabels as GitHub renders them; errors throw instead of drawing a bomb.
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", suppressErrorRendering: true });
    const out = [];
    for (const [i, source] of all.entries()) {
      try {
        await window.mermaid.parse(source);
        const { svg } = await window.mermaid.render(`diagram${i}`, source);
        const holder = document.getElementById("out");
        holder.innerHTML = svg;
        const element = holder.querySelector("svg");
        const nodes = element.querySelectorAll("g.node").length;
        const error = /Syntax error|Parse error/i.test(svg) ? "error text in the SVG" : null;
        out.push({ ok: !error, error, nodes, width: element.getBoundingClientRect().width });
      } catch (e) {
        out.push({ ok: false, error: String(e && e.message ? e.message : e), nodes: 0, width: 0 });
      }
    }
    return out;
  }, sources);
  process.stdout.write(JSON.stringify(results));
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
