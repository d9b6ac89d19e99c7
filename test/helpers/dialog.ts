import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';

/**
 * The confirmation dialog just opened (console/src/components/confirm.tsx), checked as a user of
 * assistive technology meets it: an alertdialog named by its question, the item named in its
 * text, and the keyboard focus inside it.
 */
export async function confirmation(page: Page, name: string | RegExp, item: string): Promise<Locator> {
  const dialog = page.getByRole('alertdialog', { name });
  await dialog.waitFor(); // visible once opened as a modal; focus is moved in the same step
  await dialog.getByText(item).first().waitFor();
  assert.equal(await dialog.evaluate((d) => d.contains(document.activeElement)), true, 'focus is in the dialog');
  return dialog;
}

/** Cancels by Escape or by the Cancel button; the dialog goes away. */
export async function cancel(dialog: Locator, how: 'Escape' | 'Cancel' = 'Cancel'): Promise<void> {
  if (how === 'Escape') await dialog.page().keyboard.press('Escape');
  else await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
}
