export declare const SDK_SRC: string;
export declare const CORE_LIMIT_GZ: number;
export declare const ENTRIES: string[];
export declare function sdkSize(entry: string, src?: string): Promise<{ min: number; gz: number }>;
