// Lays out pull-request comments as GitHub shows them and measures what a reviewer sees: Debian's chromium
// (driven by playwright-core, which never downloads a browser), github-markdown-css in an 880 px column, and every
// ```mermaid block drawn by the real mermaid package (package-lock.json). The HTML comes from cmark-gfm, GitHub's
// own Markdown renderer (tests/report/test_comment_browser.py renders it with the cmarkgfm package).
// Reads a JSON list of HTML documents on stdin; prints a JSON list, one result per document:
//   diagrams: [{ok, error, nodes, naturalWidth, width, minLabelPx, smallLabels, throughNodes}]
//   tables: [{head, clientWidth, scrollWidth}]  headerBottom, diffTop: px from the comment's top (details closed)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const COLUMN = 880; // GitHub's comment column, px
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const mermaidJs = readFileSync(join(root, "node_modules", "mermaid", "dist", "mermaid.min.js"), "utf8");
const css = readFileSync(join(root, "node_modules", "github-markdown-css", "github-markdown-light.css"), "utf8");
const documents = JSON.parse(readFileSync(0, "utf8"));
const profile = mkdtempSync(join(tmpdir(), "trainstack-chromium-"));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
  ],
  viewport: { width: COLUMN + 40, height: 1000 },
});
try {
  const page = await browser.newPage();
  await page.setContent(
    "<!doctype html><html><head><meta charset='utf-8'></head>" +
      `<body style='margin:0'><article id='comment' class='markdown-body' style='box-sizing:border-box;width:${COLUMN}px;padding:0'></article></body></html>`,
  );
  await page.addStyleTag({ content: css });
  await page.addScriptTag({ content: mermaidJs });
  const results = await page.evaluate(async (all) => {
    // securityLevel strict as GitHub renders; errors throw instead of drawing a bomb.
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", suppressErrorRendering: true });
    const article = document.getElementById("comment");
    const out = [];
    let serial = 0;
    for (const html of all) {
      article.innerHTML = html;
      const diagrams = [];
      for (const pre of [...article.querySelectorAll("pre[lang='mermaid']")]) {
        const source = pre.textContent;
        const holder = document.createElement("div");
        pre.replaceWith(holder);
        try {
          await window.mermaid.parse(source);
          const { svg } = await window.mermaid.render(`diagram${serial++}`, source);
          holder.innerHTML = svg;
          diagrams.push({ holder, error: /Syntax error|Parse error/i.test(svg) ? "error text in the SVG" : null });
        } catch (e) {
          diagrams.push({ holder, error: String(e && e.message ? e.message : e) });
        }
      }
      const top = article.getBoundingClientRect().top;
      const title = article.querySelector("h2");
      const headerParagraph = title ? title.nextElementSibling : null;
      const diff = article.querySelector("pre[lang='diff']");
      const diffBox = diff ? (diff.closest("details") || diff) : null;
      const result = {
        headerBottom: headerParagraph ? headerParagraph.getBoundingClientRect().bottom - top : null,
        headerText: headerParagraph ? headerParagraph.innerText : "",
        diffTop: diffBox ? diffBox.getBoundingClientRect().top - top : null,
        diagrams: [],
        tables: [],
      };
      for (const { holder, error } of diagrams) {
        const svg = holder.querySelector("svg");
        if (error || !svg) {
          result.diagrams.push({ ok: false, error: error || "no svg", nodes: 0 });
          continue;
        }
        const rendered = svg.getBoundingClientRect();
        const natural = svg.viewBox.baseVal.width;
        const scale = rendered.width / natural;
        // Every label a reader must read: nodes, edges and subgraph titles.
        const labels = [...svg.querySelectorAll("g.node .nodeLabel, g.edgeLabel .edgeLabel, g.cluster-label .nodeLabel")]
          .filter((el) => el.textContent.trim());
        const sizes = labels.map((el) => ({
          text: el.textContent.trim().slice(0, 60),
          px: parseFloat(getComputedStyle(el).fontSize) * scale,
        }));
        const minLabelPx = Math.min(...sizes.map((s) => s.px));
        // An edge that runs through a node: a point of its path, away from its two ends, inside a node's box.
        const boxes = [...svg.querySelectorAll("g.node")].map((n) => {
          const r = n.getBoundingClientRect();
          return { left: r.left + 2, right: r.right - 2, top: r.top + 2, bottom: r.bottom - 2, text: n.textContent.trim().slice(0, 40) };
        });
        const throughNodes = [];
        for (const path of svg.querySelectorAll("path.flowchart-link")) {
          const length = path.getTotalLength();
          const matrix = path.getScreenCTM();
          if (!length || !matrix || getComputedStyle(path).visibility === "hidden" || path.style.display === "none") continue;
          const hit = new Set();
          for (let at = 6; at < length - 6; at += 4) {
            const p = path.getPointAtLength(at).matrixTransform(matrix);
            for (const b of boxes) {
              if (p.x > b.left && p.x < b.right && p.y > b.top && p.y < b.bottom) hit.add(b.text);
            }
          }
          if (hit.size) throughNodes.push({ edge: path.id, nodes: [...hit] });
        }
        result.diagrams.push({
          ok: true,
          error: null,
          nodes: svg.querySelectorAll("g.node").length,
          naturalWidth: natural,
          width: rendered.width,
          minLabelPx,
          smallLabels: sizes.filter((s) => s.px < 12).slice(0, 10),
          throughNodes,
        });
      }
      for (const details of article.querySelectorAll("details")) details.open = true; // tables folded too
      for (const table of article.querySelectorAll("table")) {
        result.tables.push({
          head: (table.querySelector("th") || {}).textContent || "",
          clientWidth: table.clientWidth,
          scrollWidth: table.scrollWidth,
        });
      }
      out.push(result);
    }
    return out;
  }, documents);
  process.stdout.write(JSON.stringify(results));
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
