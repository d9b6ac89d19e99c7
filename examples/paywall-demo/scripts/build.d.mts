export const exampleDir: string;
export const exampleDist: string;
export function exampleIsStale(): boolean;
export function ensureExampleBuilt(log?: (line: string) => void): boolean;
