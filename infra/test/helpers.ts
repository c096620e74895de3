/**
 * Synthesizes stacks offline for the tests: placeholder `bootstrap.zip` files
 * stand in for the cargo-lambda build, and the context
 * `aws:cdk:bundling-stacks = []` keeps any bundling (Docker, cargo) from
 * running.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

import { FunctionName, NurseCallStack, NurseCallStackProps, ServiceMode } from '../lib/nurse-call-stack';

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

export type Json = any;

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

/**
 * The messages of every `tracing::error!` line in the Rust sources under
 * `dir` (a crate's `src`): the last argument, a string literal. Without
 * `{…}` interpolation: those the metric filters match are fixed strings.
 */
export function rustErrorMessages(dir: string): string[] {
  const messages: string[] = [];
  const files = fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.rs'))
    .sort();
  for (const file of files) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    const calls = source.split('tracing::error!(').length - 1;
    const found = [...source.matchAll(/tracing::error!\([^;]*?"((?:[^"\\]|\\.)*)"\s*,?\s*\)\s*;/g)].map((m) => m[1]);
    assert.equal(found.length, calls, `every tracing::error! of ${file} ends in its message`);
    messages.push(...found);
  }
  return messages;
}
