export declare function ensureServerBuilt(): void;
