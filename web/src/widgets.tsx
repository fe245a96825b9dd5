/** Small shared pieces of the pages: the state badge, the copy button, the confirmation dialog, a notice line. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { stateLine } from './endpoint-view.js';

export function StateBadge(props: { state: { state: string; error: string; message: string } }) {
  const { state } = props;
  return (
    <span class="state">
      <span class={`badge badge-${state.state}`}>{state.state}</span>
      {state.error !== '' || state.message !== '' ? (
        <span class="reason">{stateLine(state).slice(state.state.length).replace(/^:\s*/, '')}</span>
      ) : null}
    </span>
  );
}

/** Copies `text` to the clipboard; says "Copied" for a moment. `label` names what is copied for screen readers. */
export function CopyButton(props: { text: string; label: string; children?: ComponentChildren }) {
  const [done, setDone] = useState<'copied' | 'failed' | undefined>(undefined);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setDone('copied');
    } catch {
      setDone('failed');
    }
    setTimeout(() => setDone(undefined), 1500);
  };
  return (
    <button type="button" class="small" aria-label={props.label} onClick={copy}>
      {done === 'copied' ? 'Copied' : done === 'failed' ? 'Copy failed' : (props.children ?? 'Copy')}
    </button>
  );
}

/**
 * A modal dialog (the browser's <dialog>: focus is held inside, Escape cancels) that asks before an action.
 * `confirmLabel` names the action and its object, e.g. `Delete hello`.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={props.onCancel} onClose={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function Notice(props: { kind: 'error' | 'info'; children: ComponentChildren }) {
  return (
    <p class={`notice notice-${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </p>
  );
}
