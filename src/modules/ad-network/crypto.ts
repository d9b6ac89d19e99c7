// Moved to src/lib/secret-box.ts (shared with the webhook and export-callback secrets).
export { open, seal } from '../../lib/secret-box.js';
