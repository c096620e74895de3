/**
 * The Lambda functions: one per endpoint family of the HTTP API
 * (infra/lib/api.ts), the two of the live delivery (infra/lib/live.ts), the
 * alarm function (infra/lib/alarm-timers.ts), the deliver function
 * (infra/lib/deliveries.ts) and the forward function (infra/lib/webhooks.ts).
 * Each is the cargo-lambda build of `<lambdaDir>/<function>/bootstrap.zip`
 * with its environment, its log group and exactly its permissions
 * (infra/lib/access.ts); in production the deliver and forward functions
 * also get the installation's key (SECRETS_KEY_ID) for the secrets they
 * sign with.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';

import { SECRETS_KEY_VAR, accessOf, keyAccess } from './access';
import { ALARM_TIMEOUT, AlarmTimers } from './alarm-timers';
import { CHECKOV, CheckovSkip, skipCheckov } from './checkov';
import { LogGroupFactory, Tables } from './data';
import { DELIVER_TIMEOUT, Deliveries } from './deliveries';
import { Live } from './live';
import type { ServiceMode } from './nurse-call-stack';
import { FORWARD_TIMEOUT, Webhooks } from './webhooks';

/** The Lambda functions: cargo-lambda's output folder names (scripts/build-lambdas). */
export type FunctionName =
  | 'display'
  | 'display-read'
  | 'element'
  | 'call-types'
  | 'sandbox'
  | 'staff'
  | 'live-connect'
  | 'broadcast'
  | 'alarm'
  | 'deliver'
  | 'forward';

/** The functions of a stack in `mode`: the sandbox function only in sandbox stacks. */
export function functionsOf(mode: ServiceMode): FunctionName[] {
  return [
    'display',
    'display-read',
    'element',
    'call-types',
    ...(mode === 'sandbox' ? (['sandbox'] as const) : []),
    'staff',
    'live-connect',
    'broadcast',
    'alarm',
    'deliver',
    'forward',
  ];
}

/**
 * The broadcast's timeout: a batch of up to 100 stream records, each posted
 * to every connection of its scope. A timed-out batch is retried (split in
 * two), so this bounds how long a stuck batch holds up its shard.
 */
export const BROADCAST_TIMEOUT = Duration.seconds(30);

/**
 * Memory per function in MB (issue 30). Memory also buys CPU: Lambda gives
 * 7.2 % of a vCPU at 128 MB, 14.5 % at 256, 28.9 % at 512. Chosen on the
 * cold-start bench at those shares (docs/performance.md, "Cold starts at
 * Lambda's CPU share"): the smallest size whose first request after a cold
 * start takes at most 50 ms of the function's own time (p90, TLS handshake
 * included) with the quota sliced in 100 ms and in 20 ms periods. At these
 * sizes a request costs more in its $0.20 per million than in its duration,
 * so the choice is made on latency (docs/deploy.md, "Memory").
 */
export const MEMORY_MB: Record<FunctionName, number> = {
  // The first hop of every call: 128 MB missed 50 ms with 20 ms periods.
  display: 256,
  // Not measured: the size it had.
  'display-read': 256,
  // 128 MB met the goal with little room (p90 47 ms with 20 ms periods).
  element: 256,
  // Answers from the call types cached at init: p90 ≤ 11 ms at 128 MB.
  'call-types': 128,
  // The test server: p90 ≤ 35 ms at 128 MB.
  sandbox: 128,
  // Not measured: the size it had.
  staff: 256,
  'live-connect': 256,
  // The second hop: posts to every display, CPU growing with their number;
  // 256 MB missed 50 ms with 20 ms periods (10 displays) and throttled.
  broadcast: 512,
  // Not measured: staff's size, whose alarm engine it runs.
  alarm: 256,
  // Not measured: a push is an ECDH agreement, an AES-GCM encryption, an
  // ES256 signature and an HTTPS request per subscription.
  deliver: 256,
  // Not measured: a webhook is an HMAC-SHA256 signature and an HTTPS
  // request per endpoint, up to 32 on their way at once.
  forward: 256,
};

const DESCRIPTIONS: Record<FunctionName, string> = {
  display: 'POST /api/v1/display: open and close calls',
  'display-read': 'GET /api/v1/display/calls, /api/v1/display/elements and the display page /display',
  element: 'POST /api/v1/element: element status; POST /api/v1/heartbeat',
  'call-types': 'GET /api/v1/display/call-types, and the 404 of unknown paths',
  sandbox: 'Test server: GET /, /api/v1/sandbox/consumers, /api/v1/sandbox/state, /api/v1/sandbox/staff',
  staff: 'Staff: /api/v1/staff/me, /api/v1/staff/duty, /api/v1/staff/calls, the responses to calls, and the alarm servers\' /api/v1/response',
  'live-connect': 'WebSocket $connect (checks the display token, records the connection) and $disconnect',
  broadcast: "The data table's stream: each change of a call or element to the displays connected",
  alarm: "Alarms: the data table's stream puts each call's timers on the timer queue, alerts and cancels on the delivery queue, webhook wake-ups on the webhook queue; due timers step the engine",
  deliver: "Web Push: the delivery queue's alerts and cancels to the staff's phones",
  forward: "Webhooks: the outbox's events to the alarm servers, signed, in order per call and endpoint, woken by the webhook queue",
};

export interface FunctionsProps {
  readonly installation: string;
  readonly mode: ServiceMode;
  /** IANA zone of the times on the wire (SERVICE_TIME_ZONE). */
  readonly timeZone: string;
  /** Days a call is kept (CALL_RETENTION_DAYS of the request path). */
  readonly callRetentionDays: number;
  /** Reserved concurrency of each function (sandbox stacks only). */
  readonly reservedConcurrency: number;
  /** The folder of the cargo-lambda output: `<lambdaDir>/<function>/bootstrap.zip`. */
  readonly lambdaDir: string;
  /** Memory of every function in MB, instead of {@link MEMORY_MB}'s per function. */
  readonly lambdaMemoryMb?: number;
  /** Timeout of each function but the broadcast, the alarm, the deliver and the forward ({@link BROADCAST_TIMEOUT}, {@link ALARM_TIMEOUT}, {@link DELIVER_TIMEOUT}, {@link FORWARD_TIMEOUT}). @default 10 seconds */
  readonly lambdaTimeout?: Duration;
  readonly tables: Tables;
  /** The installation's key (production). */
  readonly key?: kms.IKey;
  /** The live delivery the live functions serve (the stack wires them in afterwards). */
  readonly live: Live;
  /** The alarm function's queues (the stack wires it in afterwards). */
  readonly alarmTimers: AlarmTimers;
  /** The delivery queue: the alarm function sends to it, the deliver function takes from it (wired in afterwards). */
  readonly deliveries: Deliveries;
  /** The webhook queue: the alarm function sends to it, the forward function takes from it (wired in afterwards). */
  readonly webhooks: Webhooks;
  /** The `sub` of Web Push's VAPID claims (the deliver function's VAPID_SUBJECT). */
  readonly vapidSubject: string;
  /** Where a push subscription may point (the call-types and deliver functions' PUSH_SERVICES, DECISIONS §20). */
  readonly pushServices: string;
  /** Makes each function's log group. */
  readonly logGroup: LogGroupFactory;
  /** Removal policy of the functions' log groups. */
  readonly logRemoval: RemovalPolicy;
}

/** The functions of the stack's mode ({@link functionsOf}), each with its role, environment and logs. */
export function createFunctions(stack: Stack, props: FunctionsProps): Partial<Record<FunctionName, lambda.Function>> {
  const { installation, mode, key, live, alarmTimers, deliveries, webhooks, logGroup, logRemoval } = props;
  const { callTypes, consumers, data } = props.tables;
  const production = mode === 'production';
  const access = accessOf(stack, { production, tables: props.tables, live, alarmTimers, deliveries, webhooks, key });

  // Environment (DECISIONS §10): what every function reads, plus each
  // one's own. The request path's functions keep calls for
  // CALL_RETENTION_DAYS, and so does the alarm function (its audit lines
  // expire with their call); the live functions and the deliver function
  // write no calls. In production the deliver and forward functions get
  // the installation's key in SECRETS_KEY_ID, to seal and open the
  // secrets they sign with (their grants: infra/lib/access.ts); without
  // it (the sandbox) those secrets stay plain and no KMS call is made.
  const common = {
    SERVICE_MODE: mode,
    SERVICE_TIME_ZONE: props.timeZone,
    CALL_TYPES_TABLE: callTypes.tableName,
    CONSUMERS_TABLE: consumers.tableName,
    DATA_TABLE: data.tableName,
  };
  const requestPath = { ...common, CALL_RETENTION_DAYS: String(props.callRetentionDays), RUST_LOG: 'info' };
  const secretsKey: Record<string, string> = key ? { [SECRETS_KEY_VAR]: key.keyArn } : {};
  const environments: Record<FunctionName, Record<string, string>> = {
    display: requestPath,
    'display-read': { ...requestPath, DISPLAY_LIVE_URL: live.url },
    element: requestPath,
    // The staff page connects to the live socket too (DECISIONS §14, §15);
    // the phones' subscriptions are registered here, only to PUSH_SERVICES (§20).
    'call-types': { ...requestPath, DISPLAY_LIVE_URL: live.url, PUSH_SERVICES: props.pushServices },
    sandbox: requestPath,
    staff: requestPath,
    'live-connect': { ...common, CONNECTIONS_TABLE: live.connections.tableName, RUST_LOG: 'info' },
    broadcast: {
      ...common,
      CONNECTIONS_TABLE: live.connections.tableName,
      LIVE_MANAGEMENT_ENDPOINT: live.managementEndpoint,
      RUST_LOG: 'info',
    },
    alarm: {
      ...requestPath,
      ALARM_TIMER_QUEUE_URL: alarmTimers.timerQueue.queueUrl,
      DELIVERY_QUEUE_URL: deliveries.queue.queueUrl,
      WEBHOOK_QUEUE_URL: webhooks.queue.queueUrl,
    },
    // The VAPID private key sealed with SECRETS_KEY_ID's key (production).
    // PUSH_SERVICES: a subscription stored before the list changed is
    // removed, not pushed to.
    deliver: {
      ...common,
      RUST_LOG: 'info',
      VAPID_SUBJECT: props.vapidSubject,
      PUSH_SERVICES: props.pushServices,
      ...secretsKey,
    },
    // No queue URL: a later webhook retry's wake-up is an item of the data
    // table, which the alarm function schedules from the stream. The
    // endpoints' secrets sealed with SECRETS_KEY_ID's key (production).
    forward: { ...common, RUST_LOG: 'info', ...secretsKey },
  };

  const functions: Partial<Record<FunctionName, lambda.Function>> = {};
  for (const name of functionsOf(mode)) {
    const id = pascal(name);
    const zip = path.join(props.lambdaDir, name, 'bootstrap.zip');
    if (!fs.existsSync(zip)) {
      throw new Error(`${zip} is missing: build the functions first (scripts/build-lambdas)`);
    }
    const fn = new lambda.Function(stack, `${id}Function`, {
      description: `nurse-call ${installation} (${mode}): ${DESCRIPTIONS[name]}`,
      // The cargo-lambda build: a `bootstrap` executable for Graviton
      // (linked against glibc 2.30 at most; Amazon Linux 2023 has 2.34).
      runtime: lambda.Runtime.PROVIDED_AL2023,
      architecture: lambda.Architecture.ARM_64,
      handler: 'bootstrap',
      code: lambda.Code.fromAsset(zip),
      // Per function (MEMORY_MB, the cold-start bench's figures), or one
      // size for all per installation in props.
      memorySize: props.lambdaMemoryMb ?? MEMORY_MB[name],
      // The SDK gives up on one DynamoDB operation after 4 s (3 attempts
      // of 1.5 s) and the handler then answers 503 with Retry-After. 10 s
      // is above that: room for a cold start plus one slow and one failing
      // operation, so the client gets the documented 503 and not a bare
      // API Gateway error from a killed invocation; what still runs 0.5 s
      // before the invocation's deadline is answered 503 by the function
      // itself (lambda-support; docs/data-model.md, "Timeouts and
      // retries"). Keep it below API Gateway's 30 s integration timeout.
      // The broadcast, the alarm, the deliver and the forward answer no
      // client: BROADCAST_TIMEOUT, ALARM_TIMEOUT, DELIVER_TIMEOUT,
      // FORWARD_TIMEOUT (each held below its queue's visibility timeout).
      timeout: TIMEOUTS[name] ?? props.lambdaTimeout ?? Duration.seconds(10),
      // A public test server must neither run up the bill nor take the
      // account's concurrency from other functions; production is bounded
      // by the stages' throttling and the stream's shards instead (a cap
      // there refuses real calls or delays displays).
      reservedConcurrentExecutions: production ? undefined : props.reservedConcurrency,
      environment: environments[name],
      logGroup: logGroup(`${id}Logs`, logRemoval),
    });
    for (const statement of [...access[name], ...keyAccess(stack, key, access[name])]) {
      fn.addToRolePolicy(new iam.PolicyStatement(statement));
    }
    const invocation = INVOCATION_SKIPS[name] ?? { dlq: CHECKOV.noDlq, cap: CHECKOV.noCapInProduction };
    skipCheckov(fn, invocation.vpc ?? CHECKOV.noVpc, invocation.dlq, CHECKOV.plainEnvironment);
    if (production) {
      skipCheckov(fn, invocation.cap);
    }
    functions[name] = fn;
  }
  return functions;
}

/** The functions whose timeout is their own, not the props' (they answer no client). */
const TIMEOUTS: Partial<Record<FunctionName, Duration>> = {
  broadcast: BROADCAST_TIMEOUT,
  alarm: ALARM_TIMEOUT,
  deliver: DELIVER_TIMEOUT,
  forward: FORWARD_TIMEOUT,
};

/**
 * Why a function invoked by event source mappings has no DLQ of its own and
 * no cap in production (checkov), and why the deliver and forward
 * functions, which call the push services and the webhook endpoints on the
 * internet, have no VPC; the others are invoked by API Gateway and reach
 * AWS endpoints only.
 */
const INVOCATION_SKIPS: Partial<Record<FunctionName, { dlq: CheckovSkip; cap: CheckovSkip; vpc?: CheckovSkip }>> = {
  broadcast: { dlq: CHECKOV.streamDlq, cap: CHECKOV.streamCapInProduction },
  alarm: { dlq: CHECKOV.alarmDlq, cap: CHECKOV.alarmCapInProduction },
  deliver: { dlq: CHECKOV.deliverDlq, cap: CHECKOV.deliverCapInProduction, vpc: CHECKOV.deliverNoVpc },
  forward: { dlq: CHECKOV.forwardDlq, cap: CHECKOV.forwardCapInProduction, vpc: CHECKOV.forwardNoVpc },
};

/** `call-types` → `CallTypes` (construct ids). */
export function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
