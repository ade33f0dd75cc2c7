// Runs the page's evidence selection (diagnosis/static/diagnosis/extract.js) under node for the
// tests: reads {spec, cases: [{text, options}]} as JSON on stdin, writes the kept line indexes
// of each case as a JSON list on stdout.
"use strict";
const path = require("path");
const extract = require(path.join(__dirname, "../../diagnosis/static/diagnosis/extract.js"));

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (piece) => { input += piece; });
process.stdin.on("end", () => {
  const {spec, cases} = JSON.parse(input);
  const out = cases.map((c) => extract.select(c.text, spec, c.options).kept);
  process.stdout.write(JSON.stringify(out));
});
