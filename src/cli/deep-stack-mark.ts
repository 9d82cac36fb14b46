// The argument a deep-stack thread of the CLI is started with (deep-stack.ts), read by main.ts
// before anything else loads: a normal run only compares one string.
export const DEEP_STACK_MARK = '--clusterstack-deep-stack-thread';
