import { Window } from 'happy-dom';

// A DOM for React Testing Library under node's runner (happy-dom): import this module before
// @testing-library/react. Only names Node lacks are added, so the SDK keeps Node's own fetch,
// URL, timers and streams when it talks to the real service.
const win = new Window({ url: 'http://localhost/' });
const g = globalThis as Record<string, unknown>;
for (const key of Object.getOwnPropertyNames(win)) {
  if (key in g || key.startsWith('_')) continue;
  try {
    g[key] = (win as unknown as Record<string, unknown>)[key];
  } catch {
    /* a getter that needs the window as `this`: not used by React */
  }
}
g.window = win;
g.document = win.document;
g.navigator ??= win.navigator;
g.IS_REACT_ACT_ENVIRONMENT = true;

/** Closes the window's timers (the runner's process then exits on its own). */
export const closeDom = () => win.happyDOM.close();
