// Two builds with esbuild: the bundle VS Code loads (dist/extension.js, `vscode` left external),
// and every module on its own (out/*.js) for the tests, which swap in a fake `vscode` module.
import { build } from "esbuild";
import { readdirSync } from "node:fs";

const production = process.argv.includes("--production");
const common = { platform: "node", target: "node18", format: "cjs", logLevel: "warning" };

await build({
  ...common,
  entryPoints: ["src/extension.ts"],
  bundle: true,
  external: ["vscode"],
  outfile: "dist/extension.js",
  minify: production,
  sourcemap: !production,
});

await build({
  ...common,
  entryPoints: readdirSync("src").filter((f) => f.endsWith(".ts")).map((f) => `src/${f}`),
  bundle: false,
  outdir: "out",
});
