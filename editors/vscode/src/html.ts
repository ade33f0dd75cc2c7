// The results panel's HTML. Pure (no `vscode` import): the extension and the screenshot script
// render the same page. Every value from the log or the client is escaped; the page loads nothing
// remote, runs one nonce'd inline script, and posts messages the extension acts on.
import { DiagnosisResult, HangSection, RankState, parseRanks, rankStates } from "./result";

export interface PanelContext {
  /** webview.cspSource (the screenshot script passes "'self'"). */
  cspSource: string;
  nonce: string;
  /** What was diagnosed, e.g. "train.log", "selection of train.log (lines 12–80)". */
  sourceLabel: string;
  /** Whether evidence lines can be opened (false for an empty source). */
  canJump: boolean;
  mode: "offline" | "server";
  server?: string;
  /** The absolute encyclopedia URL of the class, or null. */
  encyclopediaUrl: string | null;
  /** Where the service keeps the result (server mode with an id). */
  historyUrl?: string | null;
  /** "Was this right?": offered when the service keeps the diagnosis (null or absent: offline),
   *  with the verdict this editor already sent on it. */
  feedback?: { given?: "right" | "wrong" } | null;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Encyclopedia entry: the result's relative URL on the configured server or the default site. */
export function encyclopediaLink(relative: string | null, base: string): string | null {
  if (!relative || !base) return null;
  try {
    const url = new URL(relative, base.endsWith("/") ? base : base + "/");
    return url.protocol === "https:" || url.protocol === "http:" ? url.toString() : null;
  } catch {
    return null;
  }
}

export function newNonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (let i = 0; i < 32; i++) out += chars[Math.floor(Math.random() * chars.length)];
  return out;
}

const STYLE = `
:root { color-scheme: light dark; }
body { font-family: var(--vscode-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  font-size: var(--vscode-font-size, 13px); color: var(--vscode-foreground, #cccccc);
  background: var(--vscode-editor-background, #1e1e1e); margin: 0; padding: 16px 24px 32px; line-height: 1.45; }
h1 { font-size: 1.55em; margin: 0 0 2px; font-weight: 600; }
h2 { font-size: 1.05em; margin: 22px 0 8px; text-transform: uppercase; letter-spacing: .06em;
  color: var(--vscode-descriptionForeground, #9d9d9d); font-weight: 600; }
.sub { color: var(--vscode-descriptionForeground, #9d9d9d); margin-bottom: 10px; }
.where { display: inline-block; padding: 3px 10px; border-radius: 11px; font-size: .9em; margin: 4px 0 8px; }
.where.offline { background: rgba(55, 148, 255, .16); border: 1px solid rgba(55, 148, 255, .55); }
.where.server { background: rgba(204, 167, 0, .16); border: 1px solid rgba(204, 167, 0, .6); }
.conf { display: flex; align-items: center; gap: 10px; margin: 8px 0 4px; }
.bar { width: 180px; height: 8px; border-radius: 4px; background: rgba(128, 128, 128, .3); overflow: hidden; }
.bar > span { display: block; height: 100%; background: var(--vscode-charts-green, #89d185); }
.conf-words { margin: 0 0 8px; }
.conf-words.possible { border-left: 3px solid var(--vscode-charts-yellow, #cca700); padding: 2px 10px; }
.root { font-size: 1.05em; border-left: 3px solid var(--vscode-charts-red, #f14c4c); padding: 4px 12px; margin: 10px 0; }
table { border-collapse: collapse; min-width: 60%; }
th, td { text-align: left; padding: 3px 18px 3px 6px; border-bottom: 1px solid rgba(128, 128, 128, .25); }
th { font-weight: 600; color: var(--vscode-descriptionForeground, #9d9d9d); }
tr.initiating td { background: rgba(241, 76, 76, .14); font-weight: 600; }
.tag { font-size: .85em; padding: 1px 7px; border-radius: 8px; }
.tag.first { background: rgba(241, 76, 76, .25); }
.tag.coll { background: rgba(128, 128, 128, .22); }
code, pre, .ev { font-family: var(--vscode-editor-font-family, ui-monospace, "SF Mono", Menlo, Consolas, monospace);
  font-size: var(--vscode-editor-font-size, 12px); }
ul.evidence { list-style: none; padding: 0; margin: 0; }
ul.evidence li { display: flex; gap: 10px; padding: 2px 0; align-items: baseline; }
.ev { white-space: pre-wrap; word-break: break-word; }
button.line, a.line { font-family: inherit; min-width: 40px; text-align: right; background: none; border: none; padding: 0;
  color: var(--vscode-textLink-foreground, #3794ff); cursor: pointer; font-size: inherit; }
button.line:hover { text-decoration: underline; }
button.line[disabled] { color: inherit; cursor: default; text-decoration: none; }
td button.line { min-width: 0; text-align: left; }
pre { background: var(--vscode-textCodeBlock-background, rgba(128, 128, 128, .15)); padding: 8px 10px; border-radius: 4px;
  white-space: pre-wrap; word-break: break-word; margin: 6px 0; max-height: 18em; overflow: auto; }
.cmd { margin: 8px 0 14px; }
.cmd .label { font-weight: 600; }
.actions { display: flex; gap: 8px; }
.actions button { background: var(--vscode-button-secondaryBackground, #3a3d41); color: var(--vscode-button-secondaryForeground, #ffffff);
  border: none; border-radius: 2px; padding: 4px 12px; cursor: pointer; font-family: inherit; font-size: inherit; }
.actions button.run { background: var(--vscode-button-background, #0e639c); color: var(--vscode-button-foreground, #ffffff); }
ol, ul { margin: 4px 0; padding-left: 22px; }
a { color: var(--vscode-textLink-foreground, #3794ff); }
ol.rankmap { display: grid; grid-template-columns: repeat(auto-fill, minmax(30px, 1fr)); gap: 2px; list-style: none;
  padding: 0; margin: 6px 0 12px; max-width: 640px; }
ol.rankmap.dense { grid-template-columns: repeat(auto-fill, 9px); }
.rank { text-align: center; font-size: .85em; border: 1px solid rgba(128, 128, 128, .5); border-radius: 2px; min-height: 9px; }
.rank.key { display: inline-block; padding: 0 6px; }
.rank.culprit { background: rgba(241, 76, 76, .75); border-color: var(--vscode-charts-red, #f14c4c); font-weight: 700; }
.rank.waiting { background: rgba(55, 148, 255, .22); }
.rank.missing { border-style: dashed; }
.foot { margin-top: 26px; color: var(--vscode-descriptionForeground, #9d9d9d); font-size: .9em; }
`;

const SCRIPT = `
(function () {
  const vscode = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : { postMessage: function () {} };
  document.addEventListener("click", function (event) {
    const el = event.target.closest("[data-action]");
    if (!el) return;
    event.preventDefault();
    const msg = { type: el.dataset.action };
    if (el.dataset.line) msg.line = Number(el.dataset.line);
    if (el.dataset.which) msg.which = el.dataset.which;
    vscode.postMessage(msg);
  });
})();
`;

function lineButton(line: number, ctx: PanelContext): string {
  const n = escapeHtml(line);
  return ctx.canJump
    ? `<button class="line" data-action="reveal" data-line="${n}" title="Go to line ${n}">${n}</button>`
    : `<button class="line" disabled>${n}</button>`;
}

function commandBlock(label: string, which: "command" | "verification", text: string): string {
  return `<div class="cmd"><div class="label">${escapeHtml(label)}</div><pre>${escapeHtml(text)}</pre>
<div class="actions"><button data-action="copy" data-which="${which}">Copy</button>
<button class="run" data-action="run" data-which="${which}">Run in terminal…</button></div></div>`;
}

const STATE_WORDS: Record<RankState, string> = { culprit: "culprit", waiting: "waiting", missing: "no dump" };

/** A bundle's hang: the verdict, the rank map (one cell a rank, coloured by state), the culprits,
 *  the grouped stacks with what each frame means, the first divergent collective. */
function hangHtml(hang: HangSection, initiating: number | null): string {
  const out: string[] = [`<h2>Hang</h2>`];
  out.push(`<p><code>${escapeHtml(hang.verdict)}</code> on ${escapeHtml(hang.world_size)} ranks: ${escapeHtml(hang.summary)}</p>`);
  if (initiating !== null) out.push(`<p>Initiating rank: <strong>${escapeHtml(initiating)}</strong> stalled the job; the others waited on it.</p>`);
  const states = rankStates(hang);
  if (states.length > 0) {
    const dense = states.length > 256 ? " dense" : "";
    const cells = states
      .map((state, rank) => `<li class="rank ${state}" title="rank ${rank}: ${STATE_WORDS[state]}" data-rank="${rank}">${dense ? "" : rank}</li>`)
      .join("");
    const count = (s: RankState) => states.filter((x) => x === s).length;
    out.push(
      `<p class="sub"><span class="rank culprit key">culprit</span> ${count("culprit")} · <span class="rank waiting key">waiting</span> ${count("waiting")} · <span class="rank missing key">no dump</span> ${count("missing")}</p>`,
    );
    out.push(`<ol class="rankmap${dense}" aria-label="Rank map">${cells}</ol>`);
  }
  if (hang.culprits.length > 0) {
    out.push(
      `<ul>${hang.culprits.map((c) => `<li><strong>Rank ${escapeHtml(c.rank)}</strong> (confidence ${escapeHtml(c.confidence.toFixed(2))}): ${escapeHtml(c.reason)}</li>`).join("")}</ul>`,
    );
  }
  if (hang.stacks.length > 0) {
    const blamed = new Set(hang.culprits.map((c) => c.rank));
    const rows = hang.stacks.map((g) => {
      const culprit = parseRanks(g.ranks).some((r) => blamed.has(r));
      return `<tr class="${culprit ? "initiating" : ""}"><td>rank${g.count === 1 ? "" : "s"} ${escapeHtml(g.ranks)}</td><td>in <code>${escapeHtml(g.frame)}</code> at <code>${escapeHtml(g.where)}</code></td><td>${escapeHtml(g.meaning_text)}${culprit ? ` <span class="tag first">culprit</span>` : ""}</td></tr>`;
    });
    out.push(`<table class="stacks"><thead><tr><th>Ranks</th><th>Frame</th><th>What it means</th></tr></thead><tbody>${rows.join("")}</tbody></table>`);
  }
  const d = hang.divergent;
  if (d) {
    const sides = d.sides
      .map((s) => `<li>ranks ${escapeHtml(s.ranks)}: <code>${escapeHtml(s.op)}</code> sizes <code>${escapeHtml(s.sizes)}</code> ${escapeHtml(s.dtypes.join(", "))} (${escapeHtml(s.state)})</li>`)
      .join("");
    const missing = d.missing_ranks ? `; never issued by ranks ${escapeHtml(d.missing_ranks)}` : "";
    out.push(`<p>First divergent collective: process group <code>${escapeHtml(d.process_group)}</code>, sequence ${escapeHtml(d.seq)}${missing}.</p><ul>${sides}</ul>`);
  }
  return out.join("\n");
}

/** "Was this right?": two buttons naming the verdict (the extension asks for the right class and
 *  a note after "Wrong"), the one already sent said; offline, why there is nothing to rate. */
function feedbackHtml(ctx: PanelContext): string {
  if (!ctx.feedback) {
    return `<h2>Was this right?</h2><p class="sub">Diagnosed offline, this result is kept nowhere, so there is nothing to rate. With <code>rootcause.server</code> set, you can tell the service here.</p>`;
  }
  const given = ctx.feedback.given;
  const said = given ? `<p class="said">Sent: this diagnosis was <strong>${escapeHtml(given)}</strong>. Thank you; you can change it.</p>` : "";
  return `<h2>Was this right?</h2>${said}<div class="actions feedback"><button data-action="feedback" data-which="right">Right</button>
<button data-action="feedback" data-which="wrong">Wrong…</button></div>`;
}

export function renderHtml(result: DiagnosisResult, ctx: PanelContext): string {
  const parts: string[] = [];
  let extraStyle = "";
  const f = result.failure;
  const diagnosed = result.outcome === "diagnosed" && f;
  parts.push(`<h1>${diagnosed ? escapeHtml(f.title) : "No known failure found"}</h1>`);
  parts.push(
    `<div class="sub">${diagnosed ? `<code>${escapeHtml(f.slug)}</code> · ${escapeHtml(f.category)} · ` : ""}${escapeHtml(ctx.sourceLabel)}</div>`,
  );
  if (ctx.mode === "offline") {
    parts.push(`<div class="where offline">Diagnosed on this machine (offline): nothing left it.</div>`);
  } else {
    const hist = ctx.historyUrl ? ` · <a href="${escapeHtml(ctx.historyUrl)}" data-action="openHistory">in your history</a>` : "";
    parts.push(
      `<div class="where server">Sent to the service ${escapeHtml(ctx.server)}, which masked it before storing the result${hist}.</div>`,
    );
  }
  if (diagnosed) {
    const pct = Math.round(Math.max(0, Math.min(1, f.confidence)) * 100);
    // No style attributes: the CSP allows only the nonce'd style element.
    extraStyle = `.bar > span { width: ${pct}%; }`;
    parts.push(`<div class="conf"><span>Confidence</span><div class="bar"><span></span></div><strong>${pct}%</strong></div>`);
    // The words come from the client (rootcause.confidence), which wrote them into the result.
    if (f.confidence_words) {
      const level = f.confidence_level === "possible" ? " possible" : "";
      parts.push(`<div class="conf-words${level}">${escapeHtml(f.confidence_words)}</div>`);
    }
  }
  if (result.root_cause) parts.push(`<h2>Root cause</h2><div class="root">${escapeHtml(result.root_cause)}</div>`);

  if (result.hang) {
    parts.push(hangHtml(result.hang, result.initiating_rank));
  } else if (result.ranks.length > 0 || result.initiating_rank !== null) {
    parts.push(`<h2>Ranks</h2>`);
    parts.push(
      result.initiating_rank !== null
        ? `<p>Initiating rank: <strong>${escapeHtml(result.initiating_rank)}</strong> failed first; the others followed.</p>`
        : `<p>No rank can be singled out as the first to fail (see the root cause).</p>`,
    );
    if (result.ranks.length > 0) {
      const rows = [...result.ranks]
        .sort((a, b) => a.rank - b.rank)
        .map((r) => {
          const first = r.rank === result.initiating_rank;
          const role = first ? `<span class="tag first">initiating</span>` : r.collateral ? `<span class="tag coll">collateral</span>` : "";
          return `<tr class="${first ? "initiating" : ""}"><td>${escapeHtml(r.rank)}</td><td><code>${escapeHtml(r.slug)}</code></td><td>${lineButton(r.first_error_line, ctx)}</td><td>${role}</td></tr>`;
        });
      parts.push(`<table><thead><tr><th>Rank</th><th>First error</th><th>Line</th><th></th></tr></thead><tbody>${rows.join("")}</tbody></table>`);
    }
  }
  if (result.collateral.length > 0 && !result.hang) {
    parts.push(`<h2>Collateral failures</h2><ul>`);
    for (const c of result.collateral) {
      parts.push(`<li><code>${escapeHtml(c.slug)}</code> on rank${c.ranks.length === 1 ? "" : "s"} ${escapeHtml(c.ranks.join(", "))}</li>`);
    }
    parts.push(`</ul>`);
  }
  if (result.evidence.length > 0) {
    parts.push(`<h2>Evidence</h2><ul class="evidence">`);
    for (const e of result.evidence) {
      const file = e.file && e.file !== "-" ? `<span class="sub">${escapeHtml(e.file)}</span> ` : "";
      parts.push(`<li>${lineButton(e.line, { ...ctx, canJump: ctx.canJump && !file })}<span class="ev">${file}${escapeHtml(e.text)}</span></li>`);
    }
    parts.push(`</ul>`);
  }
  if (result.missing_facts.length > 0) {
    parts.push(`<h2>Missing facts</h2><ul>${result.missing_facts.map((m) => `<li>${escapeHtml(m)}</li>`).join("")}</ul>`);
  }
  const rem = result.remediation;
  if (rem) {
    parts.push(`<h2>Fix</h2><ol>${rem.steps.map((s) => `<li>${escapeHtml(s)}</li>`).join("")}</ol>`);
    if (rem.command) parts.push(commandBlock("Fix command", "command", rem.command));
    if (rem.verification_command) {
      parts.push(commandBlock("Verification command", "verification", rem.verification_command));
      if (rem.verification_expect) parts.push(`<p><strong>When the fix worked:</strong> ${escapeHtml(rem.verification_expect)}</p>`);
    }
  } else if (diagnosed) {
    parts.push(`<h2>Fix</h2><p>The fix is not included for this service tier; see the encyclopedia entry.</p>`);
  }
  if (ctx.encyclopediaUrl) {
    parts.push(
      `<h2>Encyclopedia</h2><p><a href="${escapeHtml(ctx.encyclopediaUrl)}" data-action="openEncyclopedia">${escapeHtml(ctx.encyclopediaUrl)}</a></p>`,
    );
  }
  parts.push(feedbackHtml(ctx));
  const masked = Object.entries(result.masking ?? {})
    .map(([k, v]) => `${escapeHtml(k)} ×${escapeHtml(v)}`)
    .join(", ");
  parts.push(
    `<div class="foot">Catalogue ${escapeHtml(result.catalogue_version)}${masked ? ` · masked before reading: ${masked}` : ""}</div>`,
  );

  const csp = [
    "default-src 'none'",
    `img-src ${ctx.cspSource} data:`,
    `style-src 'nonce-${ctx.nonce}'`,
    `script-src 'nonce-${ctx.nonce}'`,
  ].join("; ");
  const title = diagnosed ? f.title : "No known failure found";
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp.replace(/[&"<>]/g, "")}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rootcause: ${escapeHtml(title)}</title>
<style nonce="${ctx.nonce}">${STYLE}${extraStyle}</style>
</head>
<body>
${parts.join("\n")}
<script nonce="${ctx.nonce}">${SCRIPT}</script>
</body>
</html>`;
}
