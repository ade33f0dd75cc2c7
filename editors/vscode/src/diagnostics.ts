// Which lines of a diagnosed file become Problems: the initiating rank's first error is an error,
// collateral ranks' first errors are information, other evidence lines a warning (an error when the
// log is a single process's). Pure: extension.ts turns these into vscode.Diagnostic.
import { DiagnosisResult } from "./result";

export type Severity = "error" | "warning" | "information";

export interface LineProblem {
  /** 0-based line in the document (the selection's offset added). */
  line: number;
  severity: Severity;
  message: string;
}

export function lineProblems(result: DiagnosisResult, lineOffset = 0): LineProblem[] {
  const byLine = new Map<number, LineProblem>();
  const add = (line1: number, severity: Severity, message: string) => {
    const line = line1 - 1 + lineOffset;
    if (line1 >= 1 && !byLine.has(line)) byLine.set(line, { line, severity, message });
  };
  const title = result.failure?.title ?? "no known failure";
  const initiating = result.initiating_rank;
  for (const row of result.ranks) {
    if (initiating !== null && row.rank === initiating) {
      add(row.first_error_line, "error", `rank ${row.rank} failed first: ${title} (${row.slug})`);
    } else if (row.collateral) {
      const from = initiating !== null ? `, follows from rank ${initiating}` : "";
      add(row.first_error_line, "information", `rank ${row.rank}: ${row.slug} (collateral${from})`);
    } else {
      add(row.first_error_line, "warning", `rank ${row.rank}: ${row.slug}`);
    }
  }
  for (const ev of result.evidence) {
    if (ev.file && ev.file !== "-") continue;
    if (result.outcome === "no_match") {
      add(ev.line, "information", "rootcause: no known failure matched; an exception line of the log");
    } else if (result.ranks.length === 0) {
      add(ev.line, "error", `${title}: evidence`);
    } else {
      add(ev.line, "warning", `${title}: evidence`);
    }
  }
  return [...byLine.values()].sort((a, b) => a.line - b.line);
}
