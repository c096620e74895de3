#!/usr/bin/env node
/**
 * The CDK app: one stack per installation (DECISIONS §1). Which one is
 * chosen with context values, e.g.
 *
 *   npx cdk deploy -c installation=st-marien -c mode=production \
 *       -c timeZone=Europe/Berlin -c alarmEmail=ops@example.org
 *
 * Context keys (see docs/deploy.md): installation (required), mode
 * (production | sandbox, required), timeZone, throttleRate, throttleBurst,
 * memoryMb, timeoutSeconds, logRetentionDays, alarmEmail, callRetentionDays,
 * sandboxConcurrency (sandbox stacks only), vapidSubject, pushServices, lambdaDir (default
 * ../target/lambda, the output of scripts/build-lambdas).
 */
import * as path from 'node:path';

import { App, Duration } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';

import { NurseCallStack, ServiceMode } from '../lib/nurse-call-stack';

const app = new App();

function context(key: string): string | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined || value === null || String(value).trim() === '') {
    return undefined;
  }
  return String(value).trim();
}

function required(key: string): string {
  const value = context(key);
  if (value === undefined) {
    throw new Error(`missing context value "${key}": pass -c ${key}=… (docs/deploy.md)`);
  }
  return value;
}

function numberOf(key: string): number | undefined {
  const value = context(key);
  if (value === undefined) {
    return undefined;
  }
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) {
    throw new Error(`context value "${key}" must be a positive number, got ${JSON.stringify(value)}`);
  }
  return parsed;
}

const installation = required('installation');
const mode = required('mode') as ServiceMode;
const timeoutSeconds = numberOf('timeoutSeconds');
const retentionDays = numberOf('logRetentionDays');
if (retentionDays !== undefined && !Object.values(logs.RetentionDays).includes(retentionDays)) {
  throw new Error(`logRetentionDays ${retentionDays} is not a CloudWatch Logs retention`);
}

new NurseCallStack(app, `NurseCall-${installation}`, {
  description: `nurse-call service, installation ${installation} (${mode})`,
  installation,
  mode,
  timeZone: context('timeZone'),
  throttleRateLimit: numberOf('throttleRate'),
  throttleBurstLimit: numberOf('throttleBurst'),
  lambdaMemoryMb: numberOf('memoryMb'),
  lambdaTimeout: timeoutSeconds === undefined ? undefined : Duration.seconds(timeoutSeconds),
  logRetention: retentionDays as logs.RetentionDays | undefined,
  alarmEmail: context('alarmEmail'),
  callRetentionDays: numberOf('callRetentionDays'),
  sandboxReservedConcurrency: numberOf('sandboxConcurrency'),
  vapidSubject: context('vapidSubject'),
  pushServices: context('pushServices'),
  lambdaDir: path.resolve(context('lambdaDir') ?? path.join(__dirname, '..', '..', '..', 'target', 'lambda')),
  tags: { application: 'nurse-call', installation, mode },
});
