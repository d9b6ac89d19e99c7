export type { Purchase, PurchaseKind } from './auto-events.js';
export { Client, createClient, type ClientOptions, type DeviceInfo, type SdkError } from './client.js';
export type { Bundle, FlagDefinition } from './config.js';
export { SDK_VERSION } from './constants.js';
export {
  assignVariant,
  type ExperimentDefinition,
  type ExperimentResult,
  type ExperimentVariant,
} from './experiments.js';
export type { FlowDefinition, FlowProgress, FlowRun, OptionPage, OptionQuery } from './flows.js';
export type { FetchLike } from './http.js';
export { bucketOf, murmur3 } from './murmur.js';
// The validator (validateRules, OPERATORS) is in '@mobile-sdk-backend/sdk/rules': apps only evaluate rules.
export type { Operator, Rule, RuleProblem } from './rules.js';
export { localStorageAdapter, memoryStorage, type Storage } from './storage.js';
