export declare function ensureSdkBuilt(): void;
