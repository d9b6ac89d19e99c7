import { useFlow } from '@mobile-sdk-backend/react';
import type { Client, FlowDefinition } from '@mobile-sdk-backend/sdk';
import { useEffect, useRef } from 'react';
import { type Option, SelectStep } from './select-step.js';

/** A step as the demo's flow publishes it: `info` or `select` (naming an Option Set). */
interface Step {
  id?: string;
  type?: string;
  title?: string;
  body?: string;
  option_set_id?: string;
}

/** The flow as the bundle carries it, with the first page of each Option Set its steps name. */
type PublishedFlow = FlowDefinition & { option_sets?: Record<string, { items: Option[] }> };

/**
 * Draws the published flow's steps; the SDK's flow runtime tracks the onboarding events and keeps
 * the progress (a reload resumes the step the user was on).
 */
export function Onboarding({ client, flowId, onDone }: { client: Client; flowId: string; onDone: () => void }) {
  const flow = useFlow(flowId);
  const started = useRef(false);
  const status = flow?.status;
  const index = flow?.index ?? 0;

  useEffect(() => {
    if (!flow || started.current) return;
    started.current = true;
    if (flow.status === 'completed') onDone();
    else void flow.start(); // onboarding_flow_started, or resumes an in-progress flow
  }, [flow, onDone]);
  useEffect(() => {
    if (flow && status === 'in_progress') void flow.view(index); // a repeated view is not tracked again
  }, [flow, status, index]);

  if (flow === undefined) return <p aria-busy="true">Loading…</p>;
  if (flow === null) return <p role="alert">The flow {flowId} is not published.</p>;
  const def = client.getBundle()?.content.onboarding_flows?.[flowId] as PublishedFlow | undefined;
  const step = (def?.steps[index] ?? {}) as Step;

  const complete = async (answer?: unknown) => {
    const last = index === flow.totalSteps - 1;
    await flow.complete(index, answer);
    void client.flush();
    if (last) onDone();
  };
  const skip = async () => {
    await flow.dismiss();
    void client.flush();
    onDone();
  };

  return (
    <section className="card" aria-labelledby="step-title">
      <p className="muted">
        Step {index + 1} of {flow.totalSteps}
      </p>
      <h2 id="step-title">{step.title ?? step.id}</h2>
      {step.body && <p>{step.body}</p>}
      {step.type === 'select' && step.option_set_id ? (
        <SelectStep
          flow={flow}
          index={index}
          firstPage={def?.option_sets?.[step.option_set_id]?.items ?? []}
          onPick={(o) => void complete(o.value)}
        />
      ) : (
        <button type="button" onClick={() => void complete()}>
          Continue
        </button>
      )}
      <div className="row">
        {index > 0 && (
          <button type="button" className="link" onClick={() => void flow.back()}>
            Back
          </button>
        )}
        <button type="button" className="link" onClick={() => void skip()}>
          Skip
        </button>
      </div>
    </section>
  );
}
