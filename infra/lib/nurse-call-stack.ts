import { CfnOutput, Duration, RemovalPolicy, Stack, StackProps } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

import { AlarmTimers } from './alarm-timers';
import { createAlarms } from './alarms';
import { createApi } from './api';
import { Tables, createDataKey, createTables, logGroups } from './data';
import { Deliveries } from './deliveries';
import { FunctionName, createFunctions } from './functions';
import { Live } from './live';
import { seedCallTypes } from './seeding';
import { Webhooks } from './webhooks';

// The names the tests, the app and other files import from the stack, wherever they are defined.
export { ROUTES, httpFunctionsOf } from './api';
export { ALARM_TIMEOUT } from './alarm-timers';
export { BY_SCOPE_INDEX } from './data';
export { DELIVER_TIMEOUT } from './deliveries';
export { BROADCAST_TIMEOUT, MEMORY_MB, functionsOf } from './functions';
export type { FunctionName } from './functions';
export { FORWARD_TIMEOUT } from './webhooks';

/** `production`, or `sandbox` (the test server of spec 5.3), DECISIONS §1. */
export type ServiceMode = 'production' | 'sandbox';

export interface NurseCallStackProps extends StackProps {
  /**
   * The installation's name (a care home, a hospital): lowercase letters,
   * digits and hyphens. Table names are `nurse-call-<installation>-…`.
   */
  readonly installation: string;
  /** Set at deploy time; a request never chooses it. */
  readonly mode: ServiceMode;
  /** IANA zone of the times on the wire. @default Europe/Berlin */
  readonly timeZone?: string;
  /** Steady-state requests per second of each API stage (HTTP, and WebSocket: connects and messages). @default 50 */
  readonly throttleRateLimit?: number;
  /** Burst of each API stage (requests). @default 100 */
  readonly throttleBurstLimit?: number;
  /** Memory of every function in MB. @default per function, MEMORY_MB of functions.ts */
  readonly lambdaMemoryMb?: number;
  /** Timeout of each function but the broadcast, the alarm, the deliver and the forward ({@link BROADCAST_TIMEOUT}, {@link ALARM_TIMEOUT}, {@link DELIVER_TIMEOUT}, {@link FORWARD_TIMEOUT}). @default 10 seconds */
  readonly lambdaTimeout?: Duration;
  /**
   * The folder of the cargo-lambda output: `<lambdaDir>/<function>/bootstrap.zip`
   * (`scripts/build-lambdas` writes `target/lambda/`).
   */
  readonly lambdaDir: string;
  /** Retention of the function and access logs. @default 3 months (production), 2 weeks (sandbox) */
  readonly logRetention?: logs.RetentionDays;
  /** Share of API requests answered 5xx (percent, per 5 minutes) that raises the alarm. @default 5 */
  readonly api5xxRatePercent?: number;
  /** Where alarms are mailed (an SNS topic is created); none when unset. */
  readonly alarmEmail?: string;
  /**
   * Days a call is kept after it was opened; older calls are deleted
   * (DynamoDB TTL on the data table's `ttl`). The care home's decision,
   * passed to every function as CALL_RETENTION_DAYS. @default 400
   */
  readonly callRetentionDays?: number;
  /**
   * Sandbox stacks only: reserved concurrency of each function. A public
   * test server must neither run up the bill nor starve the account's
   * other functions of concurrency. @default 5
   */
  readonly sandboxReservedConcurrency?: number;
  /**
   * Who the installation's Web Push says it is: the `sub` of the VAPID
   * claims the push services see (RFC 8292), a `mailto:` or `https://`
   * URL they may contact about its pushes; the deliver function's
   * VAPID_SUBJECT. @default mailto:admin@localhost (as the local server)
   */
  readonly vapidSubject?: string;
  /**
   * The hosts a phone's push subscription may point at (DECISIONS §20),
   * comma-separated, `*.` for a domain's subdomains; the staff and deliver
   * functions' PUSH_SERVICES. @default {@link DEFAULT_PUSH_SERVICES}
   */
  readonly pushServices?: string;
}

const INSTALLATION = /^[a-z][a-z0-9-]{0,39}$/;

/** CALL_RETENTION_DAYS when the props do not say (DECISIONS §10, docs/security.md). */
export const DEFAULT_CALL_RETENTION_DAYS = 400;

/** Reserved concurrency of each sandbox function when the props do not say. */
export const DEFAULT_SANDBOX_RESERVED_CONCURRENCY = 5;

/** VAPID_SUBJECT when the props do not say: DEFAULT_VAPID_SUBJECT of functions/core/src/config.rs. */
export const DEFAULT_VAPID_SUBJECT = 'mailto:admin@localhost';

/** PUSH_SERVICES when the props do not say: DEFAULT_PUSH_SERVICES of functions/core/src/domain/push_services.rs. */
export const DEFAULT_PUSH_SERVICES =
  'fcm.googleapis.com,*.push.apple.com,*.push.services.mozilla.com,*.notify.windows.com';

/**
 * One installation: the HTTP API, one Lambda function per endpoint family,
 * the three DynamoDB tables of docs/data-model.md, the displays' live
 * delivery (infra/lib/live.ts), the alarms' timers (infra/lib/alarm-timers.ts),
 * the pushes to the staff's phones (infra/lib/deliveries.ts), the webhooks
 * to the alarm servers (infra/lib/webhooks.ts), CloudWatch
 * alarms, and the seeded call types. Each part is a file of its
 * own; the constructor puts them together in order.
 */
export class NurseCallStack extends Stack {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly functions: Partial<Record<FunctionName, lambda.Function>>;
  readonly tables: Tables;
  /** The installation's key (production only). */
  readonly key?: kms.Key;
  /** The displays' live delivery: WebSocket API, connections, stream subscription. */
  readonly live: Live;
  /** The alarms' timers (DECISIONS §17): the timer queue, its dead-letter queue, the stream failure queue. */
  readonly alarmTimers: AlarmTimers;
  /** The pushes (DECISIONS §15, §17): the delivery queue and its dead-letter queue. */
  readonly deliveries: Deliveries;
  /** The webhooks' wake-ups (DECISIONS §16, §17): the webhook queue (FIFO), its dead-letter queue, the schedule's rule. */
  readonly webhooks: Webhooks;

  constructor(scope: Construct, id: string, props: NurseCallStackProps) {
    super(scope, id, props);
    const settings = settingsOf(props);
    const { installation, mode, production, logRemoval } = settings;

    // --- The installation's key, production only (infra/lib/data.ts).
    this.key = production ? createDataKey(this, installation) : undefined;
    const key = this.key;

    // --- Tables (docs/data-model.md, infra/lib/data.ts), and how every log
    // group is made.
    this.tables = createTables(this, { prefix: settings.prefix, production, key });
    const logGroup = logGroups(this, { retention: settings.logRetention, key });
    const throttle = {
      rateLimit: props.throttleRateLimit ?? 50,
      burstLimit: props.throttleBurstLimit ?? 100,
    };

    // --- Live delivery (DECISIONS §11, infra/lib/live.ts): the WebSocket
    // API, the connections table, the failure queue; the functions below
    // are wired into it once they exist.
    this.live = new Live(this, 'Live', {
      installation,
      key,
      throttle,
      accessLogs: logGroup('LiveAccessLogs', logRemoval),
    });

    // --- The alarms' timers (DECISIONS §17, infra/lib/alarm-timers.ts): the
    // queues first, since the alarm function's environment names the timer
    // queue; the function is subscribed to them once it exists.
    this.alarmTimers = new AlarmTimers(this, 'AlarmTimers', { installation, key });

    // --- The pushes (infra/lib/deliveries.ts): the delivery queue, which
    // the alarm function's environment names; the deliver function is
    // subscribed to it once it exists.
    this.deliveries = new Deliveries(this, 'Deliveries', { installation, key });

    // --- The webhooks' wake-ups (infra/lib/webhooks.ts): the webhook queue,
    // which the alarm function's environment names; the forward function
    // is subscribed to it once it exists.
    this.webhooks = new Webhooks(this, 'Webhooks', { installation, key });

    // --- Functions (infra/lib/functions.ts), each with exactly the
    // permissions its code needs (infra/lib/access.ts).
    this.functions = createFunctions(this, {
      installation,
      mode,
      timeZone: settings.timeZone,
      callRetentionDays: settings.callRetentionDays,
      reservedConcurrency: settings.reservedConcurrency,
      lambdaDir: props.lambdaDir,
      lambdaMemoryMb: props.lambdaMemoryMb,
      lambdaTimeout: props.lambdaTimeout,
      tables: this.tables,
      key,
      live: this.live,
      alarmTimers: this.alarmTimers,
      deliveries: this.deliveries,
      webhooks: this.webhooks,
      vapidSubject: settings.vapidSubject,
      pushServices: settings.pushServices,
      logGroup,
      logRemoval,
    });
    const fns = this.functions as Record<FunctionName, lambda.Function>;
    this.live.routeConnections(fns['live-connect']);
    const liveAlarms = this.live.subscribe(fns.broadcast, this.tables.data);
    const timerAlarms = this.alarmTimers.subscribe(fns.alarm, this.tables.data);
    const deliveryAlarms = this.deliveries.subscribe(fns.deliver);
    const webhookAlarms = this.webhooks.subscribe(fns.forward);
    // Every minute a wake-up for the forward function's attention sweep,
    // through the timer queue and the alarm function (infra/lib/webhooks.ts);
    // its alarm: the rule's failed invocations.
    const wakeAlarms = this.webhooks.wakeEveryMinute(this.alarmTimers.timerQueue);

    // --- API (infra/lib/api.ts): exactly the routes of the spec (plus the
    // sandbox's in sandbox mode).
    const http = createApi(this, { installation, mode, functions: fns, throttle, logGroup, logRemoval });
    this.api = http.api;
    this.stage = http.stage;

    // --- Seed the call types, once (infra/lib/seeding.ts).
    seedCallTypes(this, { prefix: settings.prefix, callTypes: this.tables.callTypes, key, logGroup });

    // --- Alarms (infra/lib/alarms.ts), the live delivery's, the timers',
    // the deliveries', the webhooks' and the wake-up schedule's among them.
    createAlarms(this, {
      installation,
      mode,
      key,
      alarmEmail: props.alarmEmail,
      api5xxRatePercent: props.api5xxRatePercent,
      api: this.api,
      functions: fns,
      alarms: [...liveAlarms, ...timerAlarms, ...deliveryAlarms, ...webhookAlarms, ...wakeAlarms],
    });

    // --- Outputs: what the admin command and the docs need.
    createOutputs(this);
  }
}

/** The props checked, with their defaults. */
interface Settings {
  readonly installation: string;
  readonly mode: ServiceMode;
  readonly production: boolean;
  readonly timeZone: string;
  readonly callRetentionDays: number;
  readonly reservedConcurrency: number;
  readonly vapidSubject: string;
  readonly pushServices: string;
  /** `nurse-call-<installation>-`: the names of the tables. */
  readonly prefix: string;
  readonly logRetention: logs.RetentionDays;
  readonly logRemoval: RemovalPolicy;
}

/** Checks the props (throws on the first that is wrong) and fills in the defaults. */
function settingsOf(props: NurseCallStackProps): Settings {
  const { installation, mode } = props;
  if (!INSTALLATION.test(installation)) {
    throw new Error(
      `installation ${JSON.stringify(installation)}: expected lowercase letters, digits and hyphens, starting with a letter, at most 40 characters`,
    );
  }
  if (mode !== 'production' && mode !== 'sandbox') {
    throw new Error(`mode ${JSON.stringify(mode)}: expected "production" or "sandbox"`);
  }
  const timeZone = props.timeZone ?? 'Europe/Berlin';
  checkTimeZone(timeZone);
  const production = mode === 'production';
  const callRetentionDays = props.callRetentionDays ?? DEFAULT_CALL_RETENTION_DAYS;
  if (!Number.isSafeInteger(callRetentionDays) || callRetentionDays < 1) {
    throw new Error(`callRetentionDays ${callRetentionDays}: expected a whole number of days, at least 1`);
  }
  if (production && props.sandboxReservedConcurrency !== undefined) {
    throw new Error('sandboxReservedConcurrency applies to sandbox stacks only');
  }
  const reservedConcurrency = props.sandboxReservedConcurrency ?? DEFAULT_SANDBOX_RESERVED_CONCURRENCY;
  if (!Number.isSafeInteger(reservedConcurrency) || reservedConcurrency < 1) {
    throw new Error(`sandboxReservedConcurrency ${reservedConcurrency}: expected a whole number, at least 1`);
  }
  const vapidSubject = props.vapidSubject?.trim() || DEFAULT_VAPID_SUBJECT;
  checkVapidSubject(vapidSubject);
  const pushServices = props.pushServices?.trim() || DEFAULT_PUSH_SERVICES;
  checkPushServices(pushServices);
  const prefix = `nurse-call-${installation}-`;
  const logRetention =
    props.logRetention ?? (production ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.TWO_WEEKS);
  // The function logs name the address and event of every call opened or
  // closed: they must not keep calls longer than the care home allows.
  if (logRetention > callRetentionDays) {
    throw new Error(
      `logRetention ${logRetention === logs.RetentionDays.INFINITE ? 'INFINITE' : `${logRetention} days`} outlasts callRetentionDays ${callRetentionDays}: the logs would keep calls longer than the care home allows; set logRetention to at most ${callRetentionDays} days`,
    );
  }
  // Logs outlive a deleted production stack; a sandbox leaves nothing behind.
  const logRemoval = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
  return {
    installation,
    mode,
    production,
    timeZone,
    callRetentionDays,
    reservedConcurrency,
    vapidSubject,
    pushServices,
    prefix,
    logRetention,
    logRemoval,
  };
}

/** The stack's outputs: what the admin command and the docs need. */
function createOutputs(stack: NurseCallStack): void {
  new CfnOutput(stack, 'ApiUrl', { value: stack.stage.url, description: 'Base URL of the API' });
  new CfnOutput(stack, 'LiveUrl', {
    value: stack.live.url,
    description: "The displays' live socket (WebSocket API stage; the display page gets it as DISPLAY_LIVE_URL)",
  });
  new CfnOutput(stack, 'CallTypesTableName', {
    value: stack.tables.callTypes.tableName,
    description: 'Call types (admins edit them in the DynamoDB console)',
  });
  new CfnOutput(stack, 'ConsumersTableName', { value: stack.tables.consumers.tableName, description: 'Consumers' });
  new CfnOutput(stack, 'DataTableName', { value: stack.tables.data.tableName, description: 'Elements and calls' });
  if (stack.key) {
    new CfnOutput(stack, 'DataKeyArn', {
      value: stack.key.keyArn,
      description:
        'KMS key of the tables, logs, alarm topic and sealed secrets (admins need kms:Decrypt, and kms:Encrypt and kms:GenerateDataKey to write); ' +
        "the admin command's --secrets-key takes it to seal webhook secrets (kms:Encrypt with encryption context purpose=webhook-secret)",
    });
  }
}

/**
 * Rejects a VAPID subject the deliver function would refuse at its cold
 * start (parse_vapid_subject of functions/core/src/config.rs): a `mailto:`
 * or `https://` URL with something after the scheme, printable ASCII
 * without spaces.
 */
function checkVapidSubject(subject: string): void {
  const rest = subject.startsWith('mailto:')
    ? subject.slice('mailto:'.length)
    : subject.startsWith('https://')
      ? subject.slice('https://'.length)
      : undefined;
  if (!rest || !/^[\x21-\x7e]+$/.test(subject)) {
    throw new Error(
      `vapidSubject ${JSON.stringify(subject)}: expected a mailto: or https:// URL such as mailto:pflege@example.org`,
    );
  }
}

/**
 * Rejects a PUSH_SERVICES list the staff and deliver functions would refuse
 * at their cold start (parse_push_services of
 * functions/core/src/domain/push_services.rs), as far as its form goes:
 * comma-separated hosts or `*.domain`, without scheme, port, path or a
 * trailing dot. (Which IP addresses it may name the functions decide.)
 */
function checkPushServices(services: string): void {
  const entries = services.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  const host = /^(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$|^\[[0-9A-Fa-f:.]+\]$/;
  const bad = entries.find((entry) => !host.test(entry));
  if (entries.length === 0 || bad !== undefined) {
    throw new Error(
      `pushServices ${JSON.stringify(bad ?? services)}: expected comma-separated hosts or *.domain patterns such as fcm.googleapis.com,*.push.apple.com`,
    );
  }
}

/**
 * Rejects a zone name that is not IANA, spelt exactly (the functions parse it
 * case-sensitively and would fail to start).
 */
function checkTimeZone(zone: string): void {
  let resolved: string | undefined;
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    resolved = undefined;
  }
  const miscased = resolved !== undefined && resolved !== zone && resolved.toLowerCase() === zone.toLowerCase();
  const segments = zone.split('/').every((segment) => /^[A-Z][A-Za-z0-9_+-]*$/.test(segment));
  if (resolved === undefined || miscased || !segments) {
    throw new Error(`time zone ${JSON.stringify(zone)}: expected an IANA name such as Europe/Berlin`);
  }
}
