/**
 * Synthesizes stacks offline for the tests: placeholder `bootstrap.zip` files
 * stand in for the cargo-lambda build, and the context
 * `aws:cdk:bundling-stacks = []` keeps any bundling (Docker, cargo) from
 * running.
 */
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
