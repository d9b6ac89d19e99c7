import axe from 'axe-core';
import type { Page } from 'playwright-core';

/** The impacts a console page must not have (axe's two highest). */
export const BLOCKING: readonly axe.ImpactValue[] = ['critical', 'serious'];
/** Lesser rules fixed once and kept fixed: a column of buttons still has a header a screen reader can read. */
export const ALSO_BLOCKING = ['empty-table-header'];

export interface Finding {
  id: string;
  impact: axe.ImpactValue;
  help: string;
  helpUrl: string;
  nodes: { target: string; html: string; summary: string }[];
}

/**
 * Runs axe-core on what the page shows now and returns its violations. axe is evaluated through
 * the browser's debugging protocol, not as a script tag, so the console's Content-Security-Policy
 * neither blocks it nor reports it; it stays in the window across the console's in-app navigation.
 */
export async function axeScan(page: Page): Promise<Finding[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axe.source);
  const results = await page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  );
  return results.violations.map((v) => ({
    id: v.id,
    impact: v.impact ?? null,
    help: v.help,
    helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({
      target: n.target.map(String).join(' '),
      html: n.html,
      summary: n.failureSummary ?? '',
    })),
  }));
}

/** Findings as lines a person can act on: where, rule, why, and each element with its fix. */
export function formatFindings(where: string, findings: Finding[]): string {
  return findings
    .map((f) =>
      [
        `${where}: [${f.impact}] ${f.id}: ${f.help} (${f.helpUrl})`,
        ...f.nodes.map((n) => `    at ${n.target}\n      ${n.html}\n      ${n.summary.replace(/\n/g, '\n      ')}`),
      ].join('\n'),
    )
    .join('\n');
}

/** The blocking findings (critical or serious, or a rule of ALSO_BLOCKING) of what the page shows now. */
export async function blockingFindings(page: Page): Promise<Finding[]> {
  return (await axeScan(page)).filter((f) => BLOCKING.includes(f.impact) || ALSO_BLOCKING.includes(f.id));
}
