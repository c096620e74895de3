/**
 * Synthesizes stacks offline for the tests: placeholder `bootstrap.zip` files
 * stand in for the cargo-lambda build, and the context
 * `aws:cdk:bundling-stacks = []` keeps any bundling (Docker, cargo) from
 * running.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

import { FunctionName, NurseCallStack, NurseCallStackProps, ServiceMode } from '../lib/nurse-call-stack';

export const MODES: ServiceMode[] = ['production', 'sandbox'];

/** The repository's root (the Rust sources the tests read). */
export const REPO = path.resolve(__dirname, '..', '..', '..');

/** How {@link permissionsOf} writes the conditions of the key's use through DynamoDB and through SQS. */
export const DYNAMODB_VIA = 'StringEquals kms:ViaService=dynamodb.${AWS::Region}.amazonaws.com';
export const SQS_VIA = 'StringEquals kms:ViaService=sqs.${AWS::Region}.amazonaws.com';
/**
 * How {@link permissionsOf} writes the condition of the key's direct use
 * for one kind of sealed secret (`purpose` of the encryption context:
 * SEALED_PURPOSES of infra/lib/access.ts).
 */
export const sealedPurpose = (purpose: string): string => `StringEquals kms:EncryptionContext:purpose=${purpose}`;

export const ALL_FUNCTIONS: FunctionName[] = [
  'display',
  'display-read',
  'element',
  'call-types',
  'sandbox',
  'staff',
  'live-connect',
  'broadcast',
  'alarm',
  'deliver',
  'forward',
];

/** Temporary folders of this process, removed when it exits. */
const temporary: string[] = [];
process.on('exit', () => {
  for (const dir of temporary) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}

/** A temporary folder laid out like cargo-lambda's output, with placeholder zips. */
export function placeholderLambdaDir(functions: FunctionName[] = ALL_FUNCTIONS): string {
  const dir = tempDir('nurse-call-lambda-');
  for (const name of functions) {
    fs.mkdirSync(path.join(dir, name));
    // Not a real zip: nothing reads it offline; each differs so assets differ.
    fs.writeFileSync(path.join(dir, name, 'bootstrap.zip'), `placeholder for ${name}\n`);
  }
  return dir;
}

let sharedLambdaDir: string | undefined;

/** The feature flags of cdk.json, so that the tests synthesize what a deploy does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = path.join(__dirname, '..', '..', 'cdk.json');
  return JSON.parse(fs.readFileSync(cdkJson, 'utf8')).context ?? {};
}

export function offlineApp(): App {
  return new App({
    outdir: tempDir('nurse-call-cdk-out-'),
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] },
  });
}

export type Overrides = Partial<Omit<NurseCallStackProps, 'mode'>>;

export function synthStack(mode: ServiceMode, overrides: Overrides = {}): NurseCallStack {
  sharedLambdaDir ??= placeholderLambdaDir();
  return new NurseCallStack(offlineApp(), `NurseCall-test-${mode}`, {
    installation: `test-${mode}`,
    mode,
    lambdaDir: sharedLambdaDir,
    ...overrides,
  });
}

export function synth(mode: ServiceMode, overrides: Overrides = {}): Template {
  return Template.fromStack(synthStack(mode, overrides));
}

/** Both modes' templates with the alarm topic, as scripts/test synthesizes them for cfn-lint and checkov. */
export function topicTemplates(): Record<ServiceMode, Template> {
  return {
    production: synth('production', { alarmEmail: 'ops@example.org' }),
    sandbox: synth('sandbox', { alarmEmail: 'ops@example.org' }),
  };
}

export type Json = any;

/**
 * Runs the CDK app (bin/nurse-call.js) with `context` (on top of cdk.json's
 * and without bundling), as `cdk synth` does: its exit status, its
 * standard error and the folder it wrote the cloud assembly to.
 */
export function runApp(context: Record<string, string>): { status: number; stderr: string; outdir: string } {
  const outdir = tempDir('nurse-call-app-');
  try {
    execFileSync(process.execPath, [path.join(__dirname, '..', 'bin', 'nurse-call.js')], {
      env: {
        ...process.env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context }),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return { status: 0, stderr: '', outdir };
  } catch (error) {
    const e = error as { status: number; stderr: Buffer };
    return { status: e.status, stderr: String(e.stderr), outdir };
  }
}

/** The template the CDK app synthesizes from `context` (with placeholder zips), asserted to succeed. */
export function appTemplate(context: Record<string, string> & { installation: string }): Json {
  const { status, stderr, outdir } = runApp({ lambdaDir: placeholderLambdaDir(), ...context });
  assert.equal(status, 0, stderr);
  return JSON.parse(fs.readFileSync(path.join(outdir, `NurseCall-${context.installation}.template.json`), 'utf8'));
}

/** Resources of one type: logical id → resource. */
export function resourcesOf(template: Template, type: string): Record<string, Json> {
  return template.findResources(type);
}

/** The logical id of the function built from `<name>/bootstrap.zip`. */
export function functionId(template: Template, name: FunctionName): string {
  const prefix = name
    .split('-')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');
  const ids = Object.keys(resourcesOf(template, 'AWS::Lambda::Function')).filter((id) =>
    id.startsWith(`${prefix}Function`),
  );
  if (ids.length !== 1) {
    throw new Error(`expected one ${name} function, found ${ids.join(', ') || 'none'}`);
  }
  return ids[0];
}

/** The logical id of the table named `<suffix>` (call-types, consumers, data, connections). */
export function tableId(template: Template, suffix: string): string {
  const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
  const ids = Object.keys(tables).filter((id) => String(tables[id].Properties.TableName).endsWith(`-${suffix}`));
  if (ids.length !== 1) {
    throw new Error(`expected one ${suffix} table, found ${ids.join(', ') || 'none'}`);
  }
  return ids[0];
}

/** The logical id of the queue named `nurse-call-<installation>-<suffix>` (broadcast-failures, alarm-timers, …). */
export function queueId(template: Template, suffix: string): string {
  const queues = resourcesOf(template, 'AWS::SQS::Queue');
  const ids = Object.keys(queues).filter((id) => /^nurse-call-test-[a-z]+-(.*)$/.exec(queues[id].Properties.QueueName)?.[1] === suffix);
  if (ids.length !== 1) {
    throw new Error(`expected one ${suffix} queue, found ${ids.join(', ') || 'none'}`);
  }
  return ids[0];
}

/** The ARN of the queue named `nurse-call-<installation>-<suffix>`, as the template writes it. */
export function queueArnOf(template: Template, suffix: string): Json {
  return { 'Fn::GetAtt': [queueId(template, suffix), 'Arn'] };
}

/**
 * Asserts what every queue of the stack is (infra/lib/queues.ts), for the
 * queues named `nurse-call-<installation>-<suffix>`: TLS only (its queue
 * policy denies anything else, and says nothing more but, for a suffix of
 * `allows`, exactly those statements after it), in production encrypted
 * with the installation's key, in a sandbox with SQS-managed keys
 * (checkov's customer-key finding suppressed, with `sandboxReason` when
 * given), deleted with the stack.
 */
export function assertQueuesProtected(
  template: Template,
  mode: ServiceMode,
  suffixes: readonly string[],
  sandboxReason?: RegExp,
  allows: Record<string, Json[]> = {},
): void {
  for (const suffix of Object.keys(allows)) {
    assert.ok(suffixes.includes(suffix), `${suffix}: not one of the queues asserted`);
  }
  const policies = Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'));
  for (const suffix of suffixes) {
    const id = queueId(template, suffix);
    const resource = resourcesOf(template, 'AWS::SQS::Queue')[id];
    if (mode === 'production') {
      const keyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];
      assert.deepEqual(resource.Properties.KmsMasterKeyId, { 'Fn::GetAtt': [keyId, 'Arn'] }, suffix);
      assert.equal(resource.Properties.SqsManagedSseEnabled, undefined, suffix);
      assert.equal(resource.Metadata?.checkov, undefined, suffix);
    } else {
      assert.equal(resource.Properties.KmsMasterKeyId, undefined, suffix);
      assert.equal(resource.Properties.SqsManagedSseEnabled, true, suffix);
      const skips: Json[] = resource.Metadata.checkov.skip;
      assert.deepEqual(skips.map((skip) => skip.id), ['CKV_AWS_27'], suffix);
      if (sandboxReason) {
        assert.match(skips[0].comment, sandboxReason, suffix);
      }
    }
    assert.equal(resource.DeletionPolicy, 'Delete', suffix);
    const matching = policies.filter((p) => p.Properties.Queues.some((q: Json) => q.Ref === id));
    assert.equal(matching.length, 1, `the queue policy of ${suffix}`);
    assert.deepEqual(matching[0].Properties.Queues, [{ Ref: id }], suffix);
    assert.deepEqual(
      matching[0].Properties.PolicyDocument.Statement,
      [
        {
          Action: 'sqs:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          Effect: 'Deny',
          Principal: { AWS: '*' },
          Resource: { 'Fn::GetAtt': [id, 'Arn'] },
        },
        ...(allows[suffix] ?? []),
      ],
      suffix,
    );
  }
}

/** The logical id of the stack's one EventBridge rule: the webhook wake-up schedule (infra/lib/webhooks.ts). */
export function wakeRuleId(template: Template): string {
  return only(resourcesOf(template, 'AWS::Events::Rule'), 'EventBridge rule')[0];
}

/**
 * The timer queue's policy statement that lets EventBridge send, for the
 * webhook wake-up schedule's rule only: the one statement of a queue
 * policy besides TLS only ({@link assertQueuesProtected}).
 */
export function wakeSendStatement(template: Template): Json {
  return {
    Action: 'sqs:SendMessage',
    Condition: { ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [wakeRuleId(template), 'Arn'] } } },
    Effect: 'Allow',
    Principal: { Service: 'events.amazonaws.com' },
    Resource: queueArnOf(template, 'alarm-timers'),
  };
}

/** The logical ids of the functions the queue named `<suffix>` invokes (its event source mappings). */
export function queueReaders(template: Template, suffix: string): string[] {
  return Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))
    .filter((m) => m.Properties.EventSourceArn['Fn::GetAtt']?.[0] === queueId(template, suffix))
    .map((m) => m.Properties.FunctionName.Ref);
}

/**
 * The properties of the alarm `nurse-call-test-<mode>-<name>`, asserted to
 * be the only one of that name and to be what every alarm of the stack is:
 * one period, missing data not breaching, mailed to the topic.
 */
export function alarmNamed(template: Template, mode: ServiceMode, name: string): Json {
  const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
  const found = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(
    (a) => a.Properties.AlarmName === `nurse-call-test-${mode}-${name}`,
  );
  assert.equal(found.length, 1, name);
  assert.deepEqual(found[0].Properties.AlarmActions, [{ Ref: topicId }], name);
  assert.equal(found[0].Properties.TreatMissingData, 'notBreaching', name);
  assert.equal(found[0].Properties.EvaluationPeriods, 1, name);
  return found[0].Properties;
}

/** What an alarm watches and when it fires. */
export function alarmSummary(props: Json): Json {
  return {
    namespace: props.Namespace,
    metric: props.MetricName,
    dimensions: props.Dimensions,
    statistic: props.Statistic,
    period: props.Period,
    comparison: props.ComparisonOperator,
    threshold: props.Threshold,
  };
}

/**
 * The summary of an alarm of the queue named `<suffix>` (infra/lib/queues.ts):
 * on a message in it (`ageSeconds` unset), or on its oldest message older
 * than `ageSeconds`.
 */
export function queueAlarmSummary(template: Template, suffix: string, ageSeconds?: number): Json {
  return {
    namespace: 'AWS/SQS',
    metric: ageSeconds === undefined ? 'ApproximateNumberOfMessagesVisible' : 'ApproximateAgeOfOldestMessage',
    dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(template, suffix), 'QueueName'] } }],
    statistic: 'Maximum',
    period: 300,
    comparison: ageSeconds === undefined ? 'GreaterThanOrEqualToThreshold' : 'GreaterThanThreshold',
    threshold: ageSeconds ?? 1,
  };
}

/**
 * Asserts what every service function is (infra/lib/functions.ts): the
 * cargo-lambda zip on arm64 provided.al2023, `timeout` seconds, `memory`
 * MB, no VPC, its own log group with the mode's retention, capped in a
 * sandbox. Returns its properties.
 */
export function assertServiceFunction(
  template: Template,
  mode: ServiceMode,
  name: FunctionName,
  expected: { timeout: number; memory: number },
): Json {
  const props = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)].Properties;
  assert.deepEqual(props.Architectures, ['arm64'], name);
  assert.equal(props.Runtime, 'provided.al2023', name);
  assert.equal(props.Handler, 'bootstrap', name);
  assert.equal(props.Timeout, expected.timeout, name);
  assert.equal(props.MemorySize, expected.memory, name);
  assert.equal(props.VpcConfig, undefined, name);
  const group = resourcesOf(template, 'AWS::Logs::LogGroup')[props.LoggingConfig.LogGroup.Ref];
  assert.equal(group.Properties.RetentionInDays, mode === 'production' ? 90 : 14, name);
  assert.equal(props.ReservedConcurrentExecutions, mode === 'production' ? undefined : 5, name);
  return props;
}

/**
 * Asserts a function's mapping on the queue named `<suffix>` (`takeFrom`
 * of infra/lib/queues.ts): up to 10 messages a batch, partial batch
 * failures, without waiting (no batching window at all on a FIFO queue);
 * its logical id unchanged since CDK's SqsEventSource made it.
 */
export function assertQueueMapping(template: Template, name: FunctionName, suffix: string): void {
  const [id, mapping] = only(
    Object.fromEntries(
      Object.entries(mappingsOf(template, name)).filter(
        ([, m]) => m.Properties.EventSourceArn['Fn::GetAtt']?.[0] === queueId(template, suffix),
      ),
    ),
    `the mapping of ${name} on ${suffix}`,
  );
  assert.deepEqual(mapping.Properties, {
    FunctionName: { Ref: functionId(template, name) },
    EventSourceArn: queueArnOf(template, suffix),
    BatchSize: 10,
    ...(suffix.endsWith('.fifo') ? {} : { MaximumBatchingWindowInSeconds: 0 }),
    FunctionResponseTypes: ['ReportBatchItemFailures'],
  });
  // The logical id of CDK's SqsEventSource, which takeFrom no longer uses
  // (for its unconditioned decrypt): the deployed mapping is kept, not
  // replaced.
  // (The function's construct path: its logical id without the hash.)
  assert.match(id, new RegExp(`^${functionId(template, name).slice(0, -8)}SqsEventSource`), id);
}

/** A function's environment, each value as {@link text}. */
export function environmentOf(template: Template, name: FunctionName): Record<string, string> {
  const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
  return Object.fromEntries(Object.entries(fn.Properties.Environment.Variables).map(([k, v]) => [k, text(v)]));
}

/** What every function's environment holds (as {@link environmentOf} writes it): mode, time zone, tables, logs. */
export function commonEnvironment(template: Template, mode: ServiceMode): Record<string, string> {
  return {
    SERVICE_MODE: mode,
    SERVICE_TIME_ZONE: 'Europe/Berlin',
    CALL_TYPES_TABLE: `{${tableId(template, 'call-types')}}`,
    CONSUMERS_TABLE: `{${tableId(template, 'consumers')}}`,
    DATA_TABLE: `{${tableId(template, 'data')}}`,
    RUST_LOG: 'info',
  };
}

/**
 * The filter patterns of a function's mapping on the data table's stream,
 * after asserting what every stream reader's mapping is
 * (`readStream` of infra/lib/data.ts): from the latest record, up to 100
 * a batch without waiting, partial batch failures, 3 retries, bisect, 5
 * minutes, one batch per shard, failed batches to the queue named
 * `<failures>`.
 */
export function streamFiltersOf(template: Template, name: FunctionName, failures: string): Json[] {
  const [id, mapping] = only(
    Object.fromEntries(
      Object.entries(mappingsOf(template, name)).filter(([, m]) => m.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'StreamArn'),
    ),
    `the stream mapping of ${name}`,
  );
  assert.deepEqual(
    { ...mapping.Properties, FilterCriteria: undefined },
    {
      FunctionName: { Ref: functionId(template, name) },
      EventSourceArn: { 'Fn::GetAtt': [tableId(template, 'data'), 'StreamArn'] },
      StartingPosition: 'LATEST',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 0,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 3,
      BisectBatchOnFunctionError: true,
      MaximumRecordAgeInSeconds: 300,
      ParallelizationFactor: 1,
      DestinationConfig: { OnFailure: { Destination: queueArnOf(template, failures) } },
      FilterCriteria: undefined,
    },
    name,
  );
  // The logical id of CDK's DynamoEventSource, which readStream no longer
  // uses (for its unconditioned decrypt): the deployed mapping is kept,
  // not replaced (a new one from LATEST could miss records).
  // (The function's construct path: its logical id without the hash.)
  assert.match(id, new RegExp(`^${functionId(template, name).slice(0, -8)}DynamoDBEventSource`), id);
  return mapping.Properties.FilterCriteria.Filters.map((f: Json) => JSON.parse(f.Pattern));
}

/**
 * Asserts an alarm on a function's log lines (`logLinesAlarm` of
 * infra/lib/metric-alarms.ts): a metric filter on the function's log group
 * with `filterPattern`, counting into `NurseCall/test-<mode>` `metricName`,
 * and the alarm `nurse-call-test-<mode>-<alarm>` on one such line within
 * five minutes, to the topic. Returns the alarm's description.
 */
export function logLinesAlarmOf(
  template: Template,
  mode: ServiceMode,
  props: { fn: FunctionName; filterPattern: string; metricName: string; alarm: string },
): string {
  const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, props.fn)];
  const [, filter] = only(
    Object.fromEntries(
      Object.entries(resourcesOf(template, 'AWS::Logs::MetricFilter')).filter(
        ([, f]) => f.Properties.MetricTransformations[0].MetricName === props.metricName,
      ),
    ),
    `the metric filter of ${props.metricName}`,
  );
  const namespace = `NurseCall/test-${mode}`;
  assert.deepEqual(filter.Properties, {
    LogGroupName: { Ref: fn.Properties.LoggingConfig.LogGroup.Ref },
    FilterPattern: props.filterPattern,
    MetricTransformations: [{ MetricNamespace: namespace, MetricName: props.metricName, MetricValue: '1' }],
  });
  const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
  const alarmName = `nurse-call-test-${mode}-${props.alarm}`;
  const [, alarm] = only(
    Object.fromEntries(
      Object.entries(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(([, a]) => a.Properties.AlarmName === alarmName),
    ),
    alarmName,
  );
  const { AlarmDescription: description, ...rest } = alarm.Properties;
  assert.deepEqual(rest, {
    AlarmName: alarmName,
    Namespace: namespace,
    MetricName: props.metricName,
    Statistic: 'Sum',
    Period: 300,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    Threshold: 1,
    EvaluationPeriods: 1,
    TreatMissingData: 'notBreaching',
    AlarmActions: [{ Ref: topicId }],
  });
  assert.ok(description.length <= 1024, 'CloudWatch takes at most 1024 characters');
  return description;
}

/** The event source mappings that invoke a function: logical id → mapping. */
export function mappingsOf(template: Template, name: FunctionName): Record<string, Json> {
  const id = functionId(template, name);
  return Object.fromEntries(
    Object.entries(resourcesOf(template, 'AWS::Lambda::EventSourceMapping')).filter(
      ([, mapping]) => mapping.Properties.FunctionName?.Ref === id,
    ),
  );
}

/**
 * A readable name for an IAM resource of the template: `call-types`,
 * `consumers`, `data`, `connections`, an index such as
 * `data/index/by_scope`, or `data/stream` (the table's stream).
 */
export function resourceName(template: Template, resource: Json): string {
  if (resource === '*') {
    return '*';
  }
  const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
  const tableOf = (id: string) =>
    String(tables[id].Properties.TableName).replace(/^nurse-call-[a-z0-9-]+?-(call-types|consumers|data|connections)$/, '$1');
  if (resource?.['Fn::GetAtt']?.[1] === 'Arn' && tables[resource['Fn::GetAtt'][0]]) {
    return tableOf(resource['Fn::GetAtt'][0]);
  }
  if (resource?.['Fn::GetAtt']?.[1] === 'StreamArn' && tables[resource['Fn::GetAtt'][0]]) {
    return `${tableOf(resource['Fn::GetAtt'][0])}/stream`;
  }
  const join = resource?.['Fn::Join'];
  if (join && join[0] === '' && join[1].length === 2 && join[1][0]?.['Fn::GetAtt']?.[1] === 'Arn') {
    return `${tableOf(join[1][0]['Fn::GetAtt'][0])}${join[1][1]}`;
  }
  return JSON.stringify(resource);
}

/** The DynamoDB permissions of a role: `resource → sorted actions`. */
export function dynamoPermissions(template: Template, roleId: string): Record<string, string[]> {
  const permissions: Record<string, Set<string>> = {};
  const policies = resourcesOf(template, 'AWS::IAM::Policy');
  for (const policy of Object.values(policies)) {
    const roles: Json[] = policy.Properties.Roles ?? [];
    if (!roles.some((r) => r.Ref === roleId)) {
      continue;
    }
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      const actions: string[] = [statement.Action].flat();
      const resources: Json[] = [statement.Resource].flat();
      if (!actions.some((a) => a.startsWith('dynamodb:'))) {
        continue;
      }
      if (statement.Effect !== 'Allow') {
        throw new Error(`unexpected ${statement.Effect} statement`);
      }
      for (const resource of resources) {
        const name = resourceName(template, resource);
        permissions[name] ??= new Set();
        actions.forEach((a) => permissions[name].add(a));
      }
    }
  }
  return Object.fromEntries(Object.entries(permissions).map(([k, v]) => [k, [...v].sort()]));
}

/**
 * Resolves `{Ref}`/`{Fn::GetAtt}` of a function to its name in the stack,
 * also inside a joined invocation URI (`arn:…:apigateway:…/functions/<arn>/invocations`).
 */
export function functionNameOf(template: Template, ref: Json): string {
  const parts: Json[] = ref?.['Fn::Join']?.[1] ?? [ref];
  const ids = parts.map((part) => part?.Ref ?? part?.['Fn::GetAtt']?.[0]).filter((id) => typeof id === 'string');
  const functions = resourcesOf(template, 'AWS::Lambda::Function');
  const id: string | undefined = ids.find((candidate) => functions[candidate]);
  for (const name of ALL_FUNCTIONS) {
    try {
      if (functionId(template, name) === id) {
        return name;
      }
    } catch {
      // not in this stack
    }
  }
  return `unknown ${JSON.stringify(ref)}`;
}

/** The logical id of the only API of this protocol (`HTTP` or `WEBSOCKET`). */
export function apiId(template: Template, protocol: 'HTTP' | 'WEBSOCKET'): string {
  const apis = resourcesOf(template, 'AWS::ApiGatewayV2::Api');
  const ids = Object.keys(apis).filter((id) => apis[id].Properties.ProtocolType === protocol);
  if (ids.length !== 1) {
    throw new Error(`expected one ${protocol} API, found ${ids.join(', ') || 'none'}`);
  }
  return ids[0];
}

/** Resources of one type that belong to the API of this protocol (by their `ApiId`). */
export function apiResourcesOf(template: Template, type: string, protocol: 'HTTP' | 'WEBSOCKET'): Record<string, Json> {
  const api = apiId(template, protocol);
  return Object.fromEntries(
    Object.entries(resourcesOf(template, type)).filter(([, resource]) => resource.Properties.ApiId?.Ref === api),
  );
}

/** Route key → the function name its integration invokes (`MOCK` for a mock integration). */
export function routesOf(template: Template, protocol: 'HTTP' | 'WEBSOCKET' = 'HTTP'): Record<string, string> {
  const integrations = resourcesOf(template, 'AWS::ApiGatewayV2::Integration');
  const routes = apiResourcesOf(template, 'AWS::ApiGatewayV2::Route', protocol);
  const result: Record<string, string> = {};
  for (const route of Object.values(routes)) {
    const target = route.Properties.Target['Fn::Join'][1];
    const integration = integrations[target[1].Ref];
    result[route.Properties.RouteKey] =
      integration.Properties.IntegrationType === 'MOCK'
        ? 'MOCK'
        : functionNameOf(template, integration.Properties.IntegrationUri);
  }
  return result;
}

/** The only resource of a type among `resources`. */
export function only(resources: Record<string, Json>, what: string): [string, Json] {
  const entries = Object.entries(resources);
  assert.equal(entries.length, 1, `expected one ${what}, found ${entries.length}`);
  return entries[0];
}

/**
 * A template value as text: `Fn::Join` joined, pseudo parameters as
 * `${AWS::Region}`, other `Ref`s as `{<logical id>}`, `Fn::GetAtt` as
 * `{<logical id>.<attribute>}`.
 */
export function text(value: Json): string {
  if (typeof value === 'string') {
    return value;
  }
  if (Array.isArray(value)) {
    return value.map(text).join(',');
  }
  if (value?.Ref) {
    return String(value.Ref).startsWith('AWS::') ? `\${${value.Ref}}` : `{${value.Ref}}`;
  }
  if (value?.['Fn::GetAtt']) {
    return `{${value['Fn::GetAtt'][0]}.${value['Fn::GetAtt'][1]}}`;
  }
  if (value?.['Fn::Join']) {
    return value['Fn::Join'][1].map(text).join(value['Fn::Join'][0]);
  }
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

/** What an IAM resource is, readably: `table connections`, `key`, `queue …`, or its text. */
export function resourceOf(template: Template, resource: Json): string {
  const resources = template.toJSON().Resources as Record<string, Json>;
  const named = (id: string): string | undefined => {
    const target = resources[id];
    switch (target?.Type) {
      case 'AWS::DynamoDB::Table':
        return `table ${String(target.Properties.TableName).replace(/^nurse-call-test-[a-z]+-/, '')}`;
      case 'AWS::KMS::Key':
        return 'key';
      case 'AWS::SQS::Queue':
        return `queue ${target.Properties.QueueName}`;
      default:
        return undefined;
    }
  };
  const getAtt = resource?.['Fn::GetAtt'];
  if (getAtt && getAtt[1] === 'Arn' && named(getAtt[0])) {
    return named(getAtt[0]) as string;
  }
  if (getAtt && getAtt[1] === 'StreamArn' && named(getAtt[0])) {
    return `${named(getAtt[0])} stream`;
  }
  const join = resource?.['Fn::Join'];
  if (join && join[1][0]?.['Fn::GetAtt']?.[1] === 'Arn' && named(join[1][0]['Fn::GetAtt'][0])) {
    return `${named(join[1][0]['Fn::GetAtt'][0])}${join[1].slice(1).map(text).join('')}`;
  }
  return text(resource);
}

/** Every statement of a role's policies, readably, sorted: what the role may do. */
export function permissionsOf(template: Template, name: FunctionName): string[] {
  const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
  const roleId = fn.Properties.Role['Fn::GetAtt'][0];
  const statements: string[] = [];
  for (const policy of Object.values(resourcesOf(template, 'AWS::IAM::Policy'))) {
    if (!(policy.Properties.Roles ?? []).some((role: Json) => role.Ref === roleId)) {
      continue;
    }
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      assert.equal(statement.Effect, 'Allow');
      const conditions = Object.entries(statement.Condition ?? {}).flatMap(([operator, values]) =>
        Object.entries(values as Record<string, Json>).map(([key, value]) => `${operator} ${key}=${text(value)}`),
      );
      statements.push(
        [
          [statement.Action].flat().sort().join(', '),
          'on',
          [statement.Resource].flat().map((r: Json) => resourceOf(template, r)).sort().join(', '),
          ...(conditions.length ? ['if', conditions.sort().join(' and ')] : []),
        ].join(' '),
      );
    }
  }
  return statements.sort();
}

/** The managed policies of a function's role (logs only). */
export function managedPoliciesOf(template: Template, name: FunctionName): string[] {
  const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
  const role = resourcesOf(template, 'AWS::IAM::Role')[fn.Properties.Role['Fn::GetAtt'][0]];
  return (role.Properties.ManagedPolicyArns ?? []).map(text);
}

/**
 * Whether a stream record matches a Lambda filter pattern of the form used
 * here (objects nest, arrays list the values allowed: a value itself, or
 * `{ prefix }` for any string that begins with it).
 */
export function matches(pattern: Json, record: Json): boolean {
  const allows = (allowed: Json, value: Json): boolean => {
    if (allowed === null || typeof allowed !== 'object') {
      return allowed === value;
    }
    assert.deepEqual(Object.keys(allowed), ['prefix'], `a filter rule this test cannot read: ${JSON.stringify(allowed)}`);
    return typeof value === 'string' && value.startsWith(allowed.prefix);
  };
  return Object.entries(pattern).every(([key, expected]) =>
    Array.isArray(expected)
      ? expected.some((allowed) => allows(allowed, record?.[key]))
      : typeof expected === 'object' && matches(expected, record?.[key]),
  );
}

/** A Rust source of functions/, by its path there (`alarms-aws/src/setup.rs`). */
export function rustSource(file: string): string {
  return fs.readFileSync(path.join(REPO, 'functions', file), 'utf8');
}

/**
 * `WEBHOOK_WAKE` of functions/alarms-aws/src/queues.rs, the body of a
 * webhook wake-up (a raw string: its text as written).
 */
export function rustWebhookWake(): string {
  const found = /^pub const WEBHOOK_WAKE: &str = r#"(.*)"#;$/m.exec(rustSource('alarms-aws/src/queues.rs'));
  assert.ok(found, 'pub const WEBHOOK_WAKE: &str = r#"…"#; in functions/alarms-aws/src/queues.rs');
  return found[1];
}

/**
 * `MINUTE_WAKE` of functions/alarms-aws/src/queues.rs, the body of the
 * stack's minute wake-up (a raw string: its text as written).
 */
export function rustMinuteWake(): string {
  const found = /^pub const MINUTE_WAKE: &str = r#"(.*)"#;$/m.exec(rustSource('alarms-aws/src/queues.rs'));
  assert.ok(found, 'pub const MINUTE_WAKE: &str = r#"…"#; in functions/alarms-aws/src/queues.rs');
  return found[1];
}

/** Every Rust source of a crate of functions/, joined (whichever file declares a name). */
export function rustCrate(name: string): string {
  return fs
    .readdirSync(path.join(REPO, 'functions', name, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.rs'))
    .sort()
    .map((file) => rustSource(path.join(name, 'src', file)))
    .join('\n');
}

/**
 * The messages of every `tracing::error!` line in the Rust sources under
 * `dir` (a crate's `src`, or one file of it): the last argument, a string
 * literal. Without `{…}` interpolation: those the metric filters match are
 * fixed strings.
 */
export function rustErrorMessages(dir: string): string[] {
  const messages: string[] = [];
  const files = fs.statSync(dir).isFile()
    ? ['']
    : fs
        .readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.rs'))
        .sort();
  for (const file of files) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    const calls = source.split('tracing::error!(').length - 1;
    // A statement (`…);`), a closure's body (`|error| tracing::error!(…))`)
    // or a match arm (`… => tracing::error!(…),`).
    const found = [...source.matchAll(/tracing::error!\([^;]*?"((?:[^"\\]|\\.)*)"\s*,?\s*\)\s*[;),]/g)].map((m) => m[1]);
    assert.equal(found.length, calls, `every tracing::error! of ${file} ends in its message`);
    messages.push(...found);
  }
  return messages;
}
