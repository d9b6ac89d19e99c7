import { useEffect, useId, useRef, type ReactNode } from 'react';
import { Problem } from './problem';

export interface ConfirmProps {
  /** The question, naming the action and the item: the dialog's accessible name. */
  title: string;
  /** What happens, naming the item again: the dialog's description. */
  children: ReactNode;
  /** Text of the confirm button (default "Confirm"). */
  confirmLabel?: string;
  /** The action runs: the confirm button is disabled meanwhile. */
  pending?: boolean;
  /** The action's error, shown in the dialog (it stays open to retry or cancel). */
  error?: unknown;
  onConfirm(): void;
  /** Cancel, Escape: nothing happens. */
  onCancel(): void;
}

/**
 * A modal confirmation before an action that cannot be undone (delete, unpublish, revoke).
 * A native <dialog> opened with showModal: the rest of the page is inert, the browser keeps focus
 * inside and Escape closes it (which cancels). Focus starts on Cancel, the harmless choice, and
 * goes back to where it was when the dialog goes away. The parent renders it while confirming and
 * removes it on cancel or once the action succeeded.
 */
export function ConfirmDialog({
  title,
  children,
  confirmLabel = 'Confirm',
  pending = false,
  error,
  onConfirm,
  onCancel,
}: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const id = useId();
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    if (!ref.current?.open) ref.current?.showModal();
    cancel.current?.focus();
    return () => {
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      role="alertdialog"
      className="confirm"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-text`}
      aria-modal="true"
      onClose={onCancel}
    >
      <h2 id={`${id}-title`}>{title}</h2>
      <div id={`${id}-text`}>{children}</div>
      <Problem error={error} />
      <div className="row">
        <button type="button" className="danger" disabled={pending} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" className="secondary" ref={cancel} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
