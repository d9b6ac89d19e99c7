export function consoleIsStale(): boolean;
export function ensureConsoleBuilt(log?: (m: string) => void): boolean;
