/**
 * Data protection in the synthesized templates (docs/security.md): the
 * installation's KMS key and what it encrypts, who may use it (also
 * directly, for the secrets the deliver and forward functions sign with), call
 * retention, the sandbox's concurrency cap, and the checkov suppressions
 * (scripts/test runs checkov and fails on any finding not suppressed here).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';

import { SEALED_PURPOSES, SECRETS_KEY_VAR } from '../lib/access';
import { timerQueueName } from '../lib/alarm-timers';
import { FunctionName, ServiceMode, functionsOf, httpFunctionsOf } from '../lib/nurse-call-stack';
import {
  Json,
  MODES,
  REPO,
  appTemplate,
  functionId,
  functionNameOf,
  only,
  queueArnOf,
  queueId,
  resourcesOf,
  synth,
  tableId,
  topicTemplates,
} from './helpers';

const templates = topicTemplates();

/** The logical id of the only KMS key of a template. */
function keyId(template: Template): string {
  const keys = Object.keys(resourcesOf(template, 'AWS::KMS::Key'));
  assert.equal(keys.length, 1, `expected one KMS key, found ${keys.join(', ') || 'none'}`);
  return keys[0];
}

/** The key policy statement with this Sid. */
function keyStatement(template: Template, sid: string): Json {
  const key = resourcesOf(template, 'AWS::KMS::Key')[keyId(template)];
  const statement = key.Properties.KeyPolicy.Statement.find((s: Json) => s.Sid === sid);
  assert.ok(statement, `key policy statement ${sid}`);
  return statement;
}

/** `{"Fn::Join": ["", parts]}` as text, pseudo parameters as `${AWS::…}`. */
function joined(value: Json): string {
  if (typeof value === 'string') {
    return value;
  }
  assert.equal(value['Fn::Join']?.[0], '', JSON.stringify(value));
  return value['Fn::Join'][1].map((part: Json) => (typeof part === 'string' ? part : `\${${part.Ref}}`)).join('');
}

/** The KMS statements of a role's policies. */
function kmsStatements(template: Template, roleId: string): Json[] {
  const statements: Json[] = [];
  for (const policy of Object.values(resourcesOf(template, 'AWS::IAM::Policy'))) {
    if (!(policy.Properties.Roles ?? []).some((r: Json) => r.Ref === roleId)) {
      continue;
    }
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      if ([statement.Action].flat().some((a: string) => a.startsWith('kms:'))) {
        statements.push(statement);
      }
    }
  }
  return statements;
}

/**
 * Every statement of every IAM policy of the template (AWS::IAM::Policy,
 * AWS::IAM::ManagedPolicy, a role's inline policies), with what holds it
 * (the policy's or role's logical id) and the roles it applies to.
 */
function iamStatements(template: Template): { owner: string; roles: string[]; statement: Json }[] {
  const found: { owner: string; roles: string[]; statement: Json }[] = [];
  const refs = (roles: Json[] | undefined) => (roles ?? []).map((r: Json) => r.Ref).sort();
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const [id, policy] of Object.entries(resourcesOf(template, type))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        found.push({ owner: id, roles: refs(policy.Properties.Roles), statement });
      }
    }
  }
  for (const [id, role] of Object.entries(resourcesOf(template, 'AWS::IAM::Role'))) {
    for (const policy of role.Properties.Policies ?? []) {
      for (const statement of policy.PolicyDocument.Statement) {
        found.push({ owner: id, roles: [id], statement });
      }
    }
  }
  return found;
}

function roleOf(fn: Json): string {
  return fn.Properties.Role['Fn::GetAtt'][0];
}

/** The functions that write calls or their audit: the request path's, and the alarm function (CALL_RETENTION_DAYS). */
function retainingFunctionsOf(mode: ServiceMode): FunctionName[] {
  return [...httpFunctionsOf(mode), 'alarm'];
}

/** The Node function of the seeding custom resource. */
function seedingProvider(template: Template): Json {
  const providers = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).filter(
    (fn) => fn.Properties.Runtime !== 'provided.al2023',
  );
  assert.equal(providers.length, 1);
  return providers[0];
}

describe('the installation key (production)', () => {
  const template = templates.production;

  it('one customer-managed key, rotated, kept when the stack is deleted, with an alias', () => {
    const key = resourcesOf(template, 'AWS::KMS::Key')[keyId(template)];
    assert.equal(key.Properties.EnableKeyRotation, true);
    assert.equal(key.DeletionPolicy, 'Retain');
    assert.equal(key.UpdateReplacePolicy, 'Retain');
    // Symmetric, for encryption (the defaults, which the services need).
    assert.equal(key.Properties.KeySpec ?? 'SYMMETRIC_DEFAULT', 'SYMMETRIC_DEFAULT');
    assert.equal(key.Properties.KeyUsage ?? 'ENCRYPT_DECRYPT', 'ENCRYPT_DECRYPT');
    template.hasResourceProperties('AWS::KMS::Alias', {
      AliasName: 'alias/nurse-call-test-production',
      TargetKeyId: { 'Fn::GetAtt': [keyId(template), 'Arn'] },
    });
  });

  it('encrypts the four tables', () => {
    const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
    for (const suffix of ['call-types', 'consumers', 'data', 'connections']) {
      assert.deepEqual(
        tables[tableId(template, suffix)].Properties.SSESpecification,
        { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [keyId(template), 'Arn'] } },
        suffix,
      );
    }
  });

  it('encrypts every log group, and CloudWatch Logs of the region may use it for this account’s log groups only', () => {
    const groups = resourcesOf(template, 'AWS::Logs::LogGroup');
    assert.equal(Object.keys(groups).length, functionsOf('production').length + 3);
    for (const [id, group] of Object.entries(groups)) {
      assert.deepEqual(group.Properties.KmsKeyId, { 'Fn::GetAtt': [keyId(template), 'Arn'] }, id);
    }
    const statement = keyStatement(template, 'LogGroupsOfThisAccount');
    assert.equal(statement.Effect, 'Allow');
    assert.equal(joined(statement.Principal.Service), 'logs.${AWS::Region}.amazonaws.com');
    for (const action of ['kms:Encrypt*', 'kms:Decrypt*', 'kms:GenerateDataKey*']) {
      assert.ok([statement.Action].flat().includes(action), action);
    }
    assert.deepEqual(Object.keys(statement.Condition), ['ArnLike']);
    assert.deepEqual(Object.keys(statement.Condition.ArnLike), ['kms:EncryptionContext:aws:logs:arn']);
    assert.equal(
      joined(statement.Condition.ArnLike['kms:EncryptionContext:aws:logs:arn']),
      'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:*',
    );
  });

  it('encrypts the alarm topic, and CloudWatch may use it to publish this stack’s alarms', () => {
    const topics = Object.values(resourcesOf(template, 'AWS::SNS::Topic'));
    assert.equal(topics.length, 1);
    assert.deepEqual(topics[0].Properties.KmsMasterKeyId, { 'Fn::GetAtt': [keyId(template), 'Arn'] });

    const statement = keyStatement(template, 'AlarmsOfThisStackPublish');
    assert.equal(statement.Effect, 'Allow');
    assert.deepEqual(statement.Principal, { Service: 'cloudwatch.amazonaws.com' });
    assert.deepEqual([statement.Action].flat().sort(), ['kms:Decrypt', 'kms:GenerateDataKey*']);
    assert.deepEqual(statement.Condition.StringEquals, { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } });
    const pattern = joined(statement.Condition.ArnLike['aws:SourceArn']);
    assert.equal(pattern, 'arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:nurse-call-test-production-*');
    // Every alarm of the stack falls under the pattern: none would be dropped.
    const prefix = pattern.slice(pattern.lastIndexOf(':') + 1, -1);
    const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
    // The API's 5xx rate, each function's two, the hand edits', the broadcast's two, the timer queues' three and the
    // unreadable stream records', the delivery queues' two and the pushes not delivered', the webhook dead letters',
    // the webhook events not delivered' and the wake-up schedule's failed invocations'.
    assert.equal(alarms.length, 1 + 2 * functionsOf('production').length + 1 + 2 + 5 + 3 + 2 + 1);
    for (const alarm of alarms) {
      assert.ok(String(alarm.Properties.AlarmName).startsWith(prefix), alarm.Properties.AlarmName);
    }
  });

  it('without a topic, CloudWatch gets nothing from the key', () => {
    const noTopic = synth('production');
    const key = resourcesOf(noTopic, 'AWS::KMS::Key')[keyId(noTopic)];
    const principals = key.Properties.KeyPolicy.Statement.map((s: Json) => JSON.stringify(s.Principal));
    assert.ok(!principals.some((p: string) => p.includes('cloudwatch')), principals.join(' '));
  });

  it('the key policy names its principals: the account (IAM decides), CloudWatch Logs, CloudWatch, EventBridge; each service under conditions', () => {
    const key = resourcesOf(template, 'AWS::KMS::Key')[keyId(template)];
    const statements: Json[] = key.Properties.KeyPolicy.Statement;
    assert.equal(statements.length, 4);
    for (const statement of statements) {
      assert.equal(statement.Effect, 'Allow');
      assert.notEqual(statement.Principal, '*');
      assert.notEqual(statement.Principal.AWS, '*');
    }
    const account = statements.filter((s) => s.Principal.AWS);
    assert.equal(account.length, 1);
    assert.equal(joined(account[0].Principal.AWS), 'arn:${AWS::Partition}:iam::${AWS::AccountId}:root');
    // The services, one statement each, by Sid (each asserted exactly here).
    const services = statements
      .filter((s) => !s.Principal.AWS)
      .map((s) => `${s.Sid}: ${joined(s.Principal.Service)}`)
      .sort();
    assert.deepEqual(services, [
      'AlarmsOfThisStackPublish: cloudwatch.amazonaws.com',
      'LogGroupsOfThisAccount: logs.${AWS::Region}.amazonaws.com',
      'WebhookWakeScheduleSendsThroughSqs: events.amazonaws.com',
    ]);
    for (const statement of statements.filter((s) => !s.Principal.AWS)) {
      assert.ok(Object.keys(statement.Condition ?? {}).length > 0, `${statement.Sid}: no condition`);
    }
  });

  it('EventBridge may use the key for the webhook wake-up schedule\'s rule only, for the timer queue only: kms:GenerateDataKey and kms:Decrypt, what SQS asks for a sender, under the rule\'s ARN and the queue\'s encryption context', () => {
    // Not CDK's targets.SqsQueue grant (every rule of the account, and
    // kms:Encrypt, kms:ReEncrypt*, kms:GenerateDataKey* besides), and not
    // kms:ViaService, which AWS documents for principals of the account,
    // not for a service principal: the encryption context SQS documents
    // for its KMS calls (aws:sqs:arn, the queue's ARN) instead.
    // infra/lib/webhooks.ts wakeEveryMinute.
    const statement = keyStatement(template, 'WebhookWakeScheduleSendsThroughSqs');
    const rule = only(resourcesOf(template, 'AWS::Events::Rule'), 'EventBridge rule')[1].Properties;
    const timerQueue = resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, 'alarm-timers')].Properties;
    assert.deepEqual(Object.keys(statement).sort(), ['Action', 'Condition', 'Effect', 'Principal', 'Resource', 'Sid']);
    assert.equal(statement.Effect, 'Allow');
    assert.deepEqual(statement.Principal, { Service: 'events.amazonaws.com' });
    assert.deepEqual([statement.Action].flat().sort(), ['kms:Decrypt', 'kms:GenerateDataKey']);
    assert.equal(statement.Resource, '*');
    // Exactly two conditions, both required (one operator each): the rule and the queue.
    assert.deepEqual(Object.keys(statement.Condition).sort(), ['ArnEquals', 'StringEquals']);
    assert.deepEqual(Object.keys(statement.Condition.ArnEquals), ['aws:SourceArn']);
    assert.deepEqual(Object.keys(statement.Condition.StringEquals), ['kms:EncryptionContext:aws:sqs:arn']);
    assert.doesNotMatch(JSON.stringify(statement), /kms:ViaService/);
    // The rule's ARN, written from its name (the rule's own ARN would make
    // the key depend on the rule, the rule on the queue, the queue on the
    // key): the same rule, on the default event bus.
    assert.equal(
      joined(statement.Condition.ArnEquals['aws:SourceArn']),
      'arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/nurse-call-test-production-webhook-wake',
    );
    assert.equal(rule.Name, 'nurse-call-test-production-webhook-wake');
    assert.equal(rule.EventBusName, undefined);
    // The timer queue's ARN, written from its name (its own ARN would make
    // the key depend on the queue, which is encrypted with the key): the
    // ARN SQS names in the encryption context of the queue's data keys.
    assert.equal(
      joined(statement.Condition.StringEquals['kms:EncryptionContext:aws:sqs:arn']),
      'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:nurse-call-test-production-alarm-timers',
    );
    assert.equal(timerQueue.QueueName, 'nurse-call-test-production-alarm-timers');
    assert.equal(timerQueue.QueueName, timerQueueName('test-production'));
    // And the rule's only target is that queue, encrypted with this key.
    assert.deepEqual(rule.Targets.map((t: Json) => t.Arn), [queueArnOf(template, 'alarm-timers')]);
    assert.deepEqual(timerQueue.KmsMasterKeyId, { 'Fn::GetAtt': [keyId(template), 'Arn'] });
  });

  // What each role may do with the key: only through DynamoDB, decrypt to
  // read, encrypt too to write.
  const read = ['kms:Decrypt', 'kms:DescribeKey'];
  const write = [...read, 'kms:Encrypt', 'kms:GenerateDataKey'].sort();
  const expected: Record<Exclude<FunctionName, 'sandbox' | 'broadcast' | 'alarm' | 'deliver' | 'forward'> | 'seeding', string[]> = {
    display: write,
    'display-read': read,
    element: write,
    'call-types': write,
    'live-connect': write,
    staff: write,
    seeding: write,
  };
  for (const [name, actions] of Object.entries(expected)) {
    it(`${name} may use the key only through DynamoDB: ${actions.join(', ')}`, () => {
      const fn =
        name === 'seeding'
          ? seedingProvider(template)
          : resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name as FunctionName)];
      // The seeding has one policy per call type, each with the same statements.
      const statements = [...new Set(kmsStatements(template, roleOf(fn)).map((s) => JSON.stringify(s)))];
      assert.equal(statements.length, 1, statements.join('\n'));
      const statement = JSON.parse(statements[0]);
      assert.equal(statement.Effect, 'Allow');
      assert.deepEqual([statement.Action].flat().sort(), actions);
      assert.deepEqual(statement.Resource, { 'Fn::GetAtt': [keyId(template), 'Arn'] });
      assert.deepEqual(Object.keys(statement.Condition), ['StringEquals']);
      assert.equal(joined(statement.Condition.StringEquals['kms:ViaService']), 'dynamodb.${AWS::Region}.amazonaws.com');
    });
  }

  /**
   * A function's use of the key, as one statement each: its actions, and
   * the service it may use the key through (none: any), or, called
   * directly, the kind of sealed secret it may use it for (the encryption
   * context's `purpose`).
   */
  const keyUse = (name: FunctionName) => {
    const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
    const key = { 'Fn::GetAtt': [keyId(template), 'Arn'] };
    return kmsStatements(template, roleOf(fn))
      .map((statement) => {
        assert.deepEqual(statement.Resource, key, name);
        assert.deepEqual(Object.keys(statement.Condition ?? { StringEquals: {} }), ['StringEquals'], name);
        const condition = statement.Condition?.StringEquals ?? {};
        // One condition at most: through a service, or for a purpose.
        assert.ok(Object.keys(condition).length <= 1, `${name}: ${JSON.stringify(condition)}`);
        const purpose = condition['kms:EncryptionContext:purpose'];
        const use = purpose
          ? `for purpose=${purpose}`
          : `through ${condition['kms:ViaService'] ? joined(condition['kms:ViaService']) : 'any'}`;
        return `${[statement.Action].flat().sort().join(', ')} ${use}`;
      })
      .sort();
  };
  const throughDynamoDB = `${write.join(', ')} through dynamodb.\${AWS::Region}.amazonaws.com`;
  const throughSqs = 'kms:Decrypt, kms:GenerateDataKey through sqs.${AWS::Region}.amazonaws.com';
  /** A queue's consumer that sends nothing: its event source mapping's decrypt (infra/lib/queues.ts takeFrom). */
  const takeThroughSqs = 'kms:Decrypt through sqs.${AWS::Region}.amazonaws.com';
  const role = (name: FunctionName) => roleOf(resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)]);

  it('broadcast: through DynamoDB to write and to read the stream, through SQS to send a failure record', () => {
    // The event source mapping's stream read: stream records are encrypted
    // with the table's key and read through DynamoDB, in the same
    // statement as its writes (infra/lib/data.ts readStream: not CDK's
    // grantStreamRead, whose decrypt would be unconditioned).
    assert.deepEqual(keyUse('broadcast'), [throughDynamoDB, throughSqs].sort());
  });

  it('alarm: through DynamoDB to write and to read the stream, through SQS to send timers, push jobs, wake-ups and failure records and to take the timers', () => {
    // The event sources' reads: stream records (through DynamoDB) and
    // timers (through SQS: infra/lib/queues.ts takeFrom, not CDK's
    // grantConsumeMessages) are encrypted with the installation's key,
    // each in the same statement as its service's other use.
    assert.deepEqual(keyUse('alarm'), [throughDynamoDB, throughSqs].sort());
  });

  it('deliver: through DynamoDB to write (the VAPID key pair, a gone subscription), through SQS to take the delivery queue\'s jobs, and directly to seal and open the VAPID private key', () => {
    // The event source's receive: push jobs are encrypted with the
    // installation's key. Nothing to send.
    assert.deepEqual(
      keyUse('deliver'),
      [throughDynamoDB, takeThroughSqs, 'kms:Decrypt, kms:Encrypt for purpose=vapid-private-key'].sort(),
    );
  });

  it('forward: through DynamoDB to write (the delivery log, the outbox, an endpoint\'s health, a wake-up), through SQS to take the webhook queue\'s wake-ups, and directly to open the webhook secrets', () => {
    // The event source's receive: wake-ups are encrypted with the
    // installation's key. Nothing to send: a wake-up later is an item.
    // The secrets are sealed by the admin command: no kms:Encrypt here.
    assert.deepEqual(
      keyUse('forward'),
      [throughDynamoDB, takeThroughSqs, 'kms:Decrypt for purpose=webhook-secret'].sort(),
    );
  });

  it('no role may use the key directly but the deliver and forward functions, each for its own kind of sealed secret: every KMS statement of every IAM policy of the stack names the key alone and either a service (DynamoDB, SQS) or the deliver or forward function\'s own purpose', () => {
    // What makes the purposes worth anything: IAM allows what any
    // statement allows, so one kms:Decrypt without a condition (such as
    // CDK's grantConsumeMessages or grantStreamRead would add) would let
    // its role open either kind of secret, whatever the purposes say.
    const own: Record<string, string> = {
      [role('deliver')]: SEALED_PURPOSES.vapidPrivateKey,
      [role('forward')]: SEALED_PURPOSES.webhookSecret,
    };
    const services = ['dynamodb.${AWS::Region}.amazonaws.com', 'sqs.${AWS::Region}.amazonaws.com'];
    const key = { 'Fn::GetAtt': [keyId(template), 'Arn'] };
    const uses: string[] = [];
    for (const { owner, roles, statement } of iamStatements(template)) {
      const actions: string[] = [statement.Action].flat();
      if (!actions.some((a) => a === '*' || a.startsWith('kms:'))) {
        continue;
      }
      const where = `${owner}: ${JSON.stringify(statement)}`;
      assert.equal(statement.Effect, 'Allow', where);
      // KMS actions by name, on the key by its ARN: no wildcard of either.
      assert.ok(actions.every((a) => a.startsWith('kms:') && !a.includes('*')), where);
      assert.deepEqual([statement.Resource].flat(), [key], where);
      // One condition: through a service, or for a purpose.
      assert.deepEqual(Object.keys(statement.Condition ?? {}), ['StringEquals'], where);
      const condition = statement.Condition.StringEquals;
      assert.equal(Object.keys(condition).length, 1, where);
      if (condition['kms:ViaService'] !== undefined) {
        assert.ok(services.includes(joined(condition['kms:ViaService'])), where);
      } else {
        const purpose = condition['kms:EncryptionContext:purpose'];
        assert.ok(purpose !== undefined, where);
        assert.equal(roles.length, 1, where);
        assert.equal(purpose, own[roles[0]], where);
        uses.push(`${roles[0]} ${actions.sort().join(', ')} for ${purpose}`);
      }
    }
    // And the two direct uses are there (the deliver function seals too).
    assert.deepEqual(uses.sort(), [
      `${role('deliver')} kms:Decrypt, kms:Encrypt for vapid-private-key`,
      `${role('forward')} kms:Decrypt for webhook-secret`,
    ].sort());
  });

  it('every function taking from a queue encrypted with the key (alarm: the timers, deliver: the push jobs, forward: the wake-ups) decrypts it through SQS only', () => {
    const readers: Record<string, FunctionName> = {};
    for (const mapping of Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))) {
      const source = mapping.Properties.EventSourceArn['Fn::GetAtt'];
      if (resourcesOf(template, 'AWS::SQS::Queue')[source[0]]) {
        readers[source[0]] = functionNameOf(template, mapping.Properties.FunctionName) as FunctionName;
      }
    }
    assert.deepEqual(readers, {
      [queueId(template, 'alarm-timers')]: 'alarm',
      [queueId(template, 'deliveries')]: 'deliver',
      [queueId(template, 'webhooks.fifo')]: 'forward',
    });
    for (const [queue, name] of Object.entries(readers)) {
      assert.deepEqual(
        resourcesOf(template, 'AWS::SQS::Queue')[queue].Properties.KmsMasterKeyId,
        { 'Fn::GetAtt': [keyId(template), 'Arn'] },
        queue,
      );
      const decrypts = keyUse(name).filter((use) => use.includes('kms:Decrypt'));
      assert.ok(decrypts.some((use) => use.endsWith(' through sqs.${AWS::Region}.amazonaws.com')), `${name}: ${decrypts.join('; ')}`);
      assert.ok(!decrypts.some((use) => use.endsWith(' through any')), `${name}: ${decrypts.join('; ')}`);
    }
  });

  it('encrypts every queue: the broadcast failures, the alarm timers, their dead letters, the alarm stream failures, the deliveries, the webhook wake-ups and their dead letters', () => {
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    assert.deepEqual(
      Object.keys(queues).sort(),
      [
        'broadcast-failures',
        'alarm-timers',
        'alarm-timers-dlq',
        'alarm-stream-failures',
        'deliveries',
        'deliveries-dlq',
        'webhooks.fifo',
        'webhooks-dlq.fifo',
      ]
        .map((suffix) => queueId(template, suffix))
        .sort(),
    );
    for (const [id, queue] of Object.entries(queues)) {
      assert.deepEqual(queue.Properties.KmsMasterKeyId, { 'Fn::GetAtt': [keyId(template), 'Arn'] }, id);
      assert.equal(queue.Properties.SqsManagedSseEnabled, undefined, id);
    }
  });
});

/**
 * Every statement of the template's IAM policies that names an encryption
 * context's `purpose`, with the roles of its policy: logical ids, sorted.
 */
function purposeStatements(template: Template): { roles: string[]; statement: Json }[] {
  const found: { roles: string[]; statement: Json }[] = [];
  for (const policy of Object.values(resourcesOf(template, 'AWS::IAM::Policy'))) {
    for (const statement of policy.Properties.PolicyDocument.Statement) {
      if (JSON.stringify(statement.Condition ?? {}).includes('kms:EncryptionContext:purpose')) {
        found.push({ roles: (policy.Properties.Roles ?? []).map((r: Json) => r.Ref).sort(), statement });
      }
    }
  }
  return found;
}

/** Each Lambda function's SECRETS_KEY_ID, by logical id (those without none). */
function secretsKeyVariables(template: Template): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(resourcesOf(template, 'AWS::Lambda::Function'))
      .map(([id, fn]) => [id, fn.Properties.Environment?.Variables?.[SECRETS_KEY_VAR]])
      .filter(([, value]) => value !== undefined),
  );
}

describe('the sealed secrets (production): the deliver and forward functions call the key directly, each for its own kind of secret', () => {
  const template = templates.production;
  const keyArn = () => ({ 'Fn::GetAtt': [keyId(template), 'Arn'] });
  const role = (name: FunctionName) =>
    roleOf(resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)]);

  it('SECRETS_KEY_ID, the key\'s ARN, in the deliver and forward functions\' environment only (not in the other functions\', nor the seeding provider\'s)', () => {
    assert.equal(SECRETS_KEY_VAR, 'SECRETS_KEY_ID');
    assert.deepEqual(secretsKeyVariables(template), {
      [functionId(template, 'deliver')]: keyArn(),
      [functionId(template, 'forward')]: keyArn(),
    });
  });

  it('exactly two statements name a purpose: the deliver function\'s kms:Encrypt and kms:Decrypt for the VAPID private key, the forward function\'s kms:Decrypt for the webhook secrets; the key\'s ARN only, no kms:ViaService', () => {
    assert.deepEqual(SEALED_PURPOSES, { vapidPrivateKey: 'vapid-private-key', webhookSecret: 'webhook-secret' });
    const found = purposeStatements(template);
    const expected = [
      {
        roles: [role('deliver')],
        statement: {
          Action: ['kms:Decrypt', 'kms:Encrypt'],
          Condition: { StringEquals: { 'kms:EncryptionContext:purpose': 'vapid-private-key' } },
          Effect: 'Allow',
          Resource: keyArn(),
        },
      },
      {
        roles: [role('forward')],
        statement: {
          Action: 'kms:Decrypt',
          Condition: { StringEquals: { 'kms:EncryptionContext:purpose': 'webhook-secret' } },
          Effect: 'Allow',
          Resource: keyArn(),
        },
      },
    ];
    const byRole = (a: { roles: string[] }, b: { roles: string[] }) => a.roles.join().localeCompare(b.roles.join());
    assert.deepEqual([...found].sort(byRole), [...expected].sort(byRole));
  });

  it('the key policy leaves the purposes to IAM: it names no encryption context but CloudWatch Logs\'', () => {
    const key = resourcesOf(template, 'AWS::KMS::Key')[keyId(template)];
    assert.doesNotMatch(JSON.stringify(key.Properties.KeyPolicy), /kms:EncryptionContext:purpose/);
  });
});

describe('the sealed secrets: the Rust side names the same', () => {
  const source = (file: string) => fs.readFileSync(path.join(REPO, 'functions', file), 'utf8');

  it('the encryption context\'s purposes of functions/core/src/signing/sealing.rs are the grants\' conditions', () => {
    const sealing = source('core/src/signing/sealing.rs');
    assert.ok(sealing.includes('"purpose"'), 'the context key "purpose"');
    for (const purpose of Object.values(SEALED_PURPOSES)) {
      assert.ok(sealing.includes(`"${purpose}"`), purpose);
      assert.match(sealing, new RegExp(`\\("purpose",\\s*"${purpose}"`), `("purpose", "${purpose}"…)`);
    }
  });

  it('functions/kms/src/lib.rs reads the key from SECRETS_KEY_ID', () => {
    assert.ok(source('kms/src/lib.rs').includes(`"${SECRETS_KEY_VAR}"`), SECRETS_KEY_VAR);
  });
});

describe('the sandbox keeps the AWS-owned encryption', () => {
  const template = templates.sandbox;

  it('no key; tables, log groups and topic without a customer key, the queue with SQS-managed keys; no KMS permission anywhere', () => {
    template.resourceCountIs('AWS::KMS::Key', 0);
    for (const queue of Object.values(resourcesOf(template, 'AWS::SQS::Queue'))) {
      assert.equal(queue.Properties.KmsMasterKeyId, undefined);
      assert.equal(queue.Properties.SqsManagedSseEnabled, true);
    }
    for (const table of Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'))) {
      assert.equal(table.Properties.SSESpecification, undefined);
    }
    for (const group of Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'))) {
      assert.equal(group.Properties.KmsKeyId, undefined);
    }
    for (const topic of Object.values(resourcesOf(template, 'AWS::SNS::Topic'))) {
      assert.equal(topic.Properties.KmsMasterKeyId, undefined);
    }
    for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function'))) {
      assert.deepEqual(kmsStatements(template, roleOf(fn)), []);
    }
    // Nor in any other policy (the queue consumers' and stream readers'
    // grants add none without a key: infra/lib/queues.ts takeFrom,
    // infra/lib/data.ts readStream).
    for (const { owner, statement } of iamStatements(template)) {
      assert.ok(![statement.Action].flat().some((a: string) => a === '*' || a.startsWith('kms:')), owner);
    }
    assert.equal(template.toJSON().Outputs.DataKeyArn, undefined);
  });

  it('no sealed secrets: no function gets SECRETS_KEY_ID, no policy names an encryption context purpose', () => {
    assert.deepEqual(secretsKeyVariables(template), {});
    assert.deepEqual(purposeStatements(template), []);
    const json = JSON.stringify(template.toJSON());
    assert.doesNotMatch(json, /SECRETS_KEY_ID|kms:EncryptionContext:purpose/);
  });
});

describe('reserved concurrency', () => {
  it('sandbox: each function is capped, 5 by default', () => {
    const template = templates.sandbox;
    const functions = resourcesOf(template, 'AWS::Lambda::Function');
    for (const name of functionsOf('sandbox')) {
      assert.equal(functions[functionId(template, name)].Properties.ReservedConcurrentExecutions, 5, name);
    }
  });

  it('sandbox: the cap comes from the props', () => {
    const template = synth('sandbox', { sandboxReservedConcurrency: 2 });
    const functions = resourcesOf(template, 'AWS::Lambda::Function');
    for (const name of functionsOf('sandbox')) {
      assert.equal(functions[functionId(template, name)].Properties.ReservedConcurrentExecutions, 2, name);
    }
  });

  it('production: no cap (the stage throttles), and the sandbox prop is refused there', () => {
    const template = templates.production;
    for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function'))) {
      assert.equal(fn.Properties.ReservedConcurrentExecutions, undefined);
    }
    assert.throws(() => synth('production', { sandboxReservedConcurrency: 5 }), /sandbox stacks only/);
  });

  it('refuses a cap that is not a whole number of at least 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => synth('sandbox', { sandboxReservedConcurrency: bad }), /sandboxReservedConcurrency/, String(bad));
    }
  });
});

describe('call retention', () => {
  for (const mode of MODES) {
    it(`${mode}: every request-path function and the alarm function get CALL_RETENTION_DAYS=400 by default; calls expire on the data table's ttl`, () => {
      const template = templates[mode];
      const functions = resourcesOf(template, 'AWS::Lambda::Function');
      for (const name of retainingFunctionsOf(mode)) {
        assert.equal(functions[functionId(template, name)].Properties.Environment.Variables.CALL_RETENTION_DAYS, '400', name);
      }
      const data = resourcesOf(template, 'AWS::DynamoDB::Table')[tableId(template, 'data')];
      assert.deepEqual(data.Properties.TimeToLiveSpecification, { AttributeName: 'ttl', Enabled: true });
    });
  }

  it('the retention comes from the props', () => {
    const template = synth('production', { callRetentionDays: 730 });
    const functions = resourcesOf(template, 'AWS::Lambda::Function');
    for (const name of retainingFunctionsOf('production')) {
      assert.equal(functions[functionId(template, name)].Properties.Environment.Variables.CALL_RETENTION_DAYS, '730', name);
    }
  });

  it('the logs (which name each call opened or closed) never outlast the call retention', () => {
    assert.throws(() => synth('production', { callRetentionDays: 60 }), /logRetention 90 days outlasts callRetentionDays 60/);
    assert.throws(
      () => synth('production', { logRetention: logs.RetentionDays.INFINITE }),
      /logRetention INFINITE outlasts callRetentionDays 400/,
    );
    assert.doesNotThrow(() => synth('production', { callRetentionDays: 60, logRetention: logs.RetentionDays.TWO_MONTHS }));
    assert.doesNotThrow(() => synth('sandbox', { callRetentionDays: 14 }));
  });

  it('refuses a retention that is not a whole number of days of at least 1', () => {
    for (const bad of [0, -30, 2.5, Number.NaN]) {
      assert.throws(() => synth('production', { callRetentionDays: bad }), /callRetentionDays/, String(bad));
    }
  });

  it('the CDK app passes callRetentionDays and sandboxConcurrency from the context', () => {
    const template = appTemplate({ installation: 'retention', mode: 'sandbox', callRetentionDays: '90', sandboxConcurrency: '3' });
    const services = Object.values(template.Resources as Record<string, Json>).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Runtime === 'provided.al2023',
    );
    assert.equal(services.length, functionsOf('sandbox').length);
    const retentions = services.map((fn) => fn.Properties.Environment.Variables.CALL_RETENTION_DAYS).filter(Boolean);
    assert.deepEqual(retentions, retainingFunctionsOf('sandbox').map(() => '90'));
    for (const fn of services) {
      assert.equal(fn.Properties.ReservedConcurrentExecutions, 3);
    }
  });
});

/** `resource type: check id` of every checkov suppression in a template, sorted, with counts. */
function suppressions(template: Template): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const resource of Object.values(template.toJSON().Resources as Record<string, Json>)) {
    for (const skip of resource.Metadata?.checkov?.skip ?? []) {
      const key = `${resource.Type}: ${skip.id}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

describe('checkov suppressions', () => {
  // Exactly these, and nothing else: a new suppression is a decision made here.
  const expected: Record<ServiceMode, Record<string, number>> = {
    production: {
      'AWS::DynamoDB::Table: CKV_AWS_28': 1, // the connections table: nothing to recover
      // The ten service functions and the seeding provider: no VPC, no DLQ
      // (the broadcast's, the alarm's, the deliver's and the forward's
      // failures go to their event sources' queues).
      'AWS::Lambda::Function: CKV_AWS_115': 11, // no cap: production functions; the seeding provider
      'AWS::Lambda::Function: CKV_AWS_116': 11,
      'AWS::Lambda::Function: CKV_AWS_117': 11,
      'AWS::Lambda::Function: CKV_AWS_173': 10, // the service functions' environment holds no secret
    },
    sandbox: {
      'AWS::DynamoDB::Table: CKV_AWS_119': 4, // AWS-owned encryption
      'AWS::DynamoDB::Table: CKV_AWS_28': 4, // no point-in-time recovery
      'AWS::Lambda::Function: CKV_AWS_115': 1, // the seeding provider only: the service functions are capped
      'AWS::Lambda::Function: CKV_AWS_116': 12,
      'AWS::Lambda::Function: CKV_AWS_117': 12,
      'AWS::Lambda::Function: CKV_AWS_173': 11,
      'AWS::Logs::LogGroup: CKV_AWS_158': 14, // CloudWatch Logs' own encryption
      'AWS::SNS::Topic: CKV_AWS_26': 1, // no customer key for the alarm topic
      // The broadcast and alarm failure queues, the timer queue, the
      // delivery queue, the webhook queue and their dead letters:
      // SQS-managed keys.
      'AWS::SQS::Queue: CKV_AWS_27': 8,
    },
  };

  for (const mode of MODES) {
    it(`${mode}: exactly the expected findings are suppressed`, () => {
      assert.deepEqual(suppressions(templates[mode]), expected[mode]);
    });

    it(`${mode}: each suppression has a one-line reason, no check suppressed twice on a resource`, () => {
      for (const [id, resource] of Object.entries(templates[mode].toJSON().Resources as Record<string, Json>)) {
        const skips: Json[] = resource.Metadata?.checkov?.skip ?? [];
        assert.equal(new Set(skips.map((s) => s.id)).size, skips.length, `${id}: a check suppressed twice`);
        for (const skip of skips) {
          assert.match(skip.id, /^CKV_AWS_\d+$/);
          assert.equal(typeof skip.comment, 'string', `${id} ${skip.id}: no reason`);
          assert.ok(skip.comment.length >= 30 && skip.comment.length <= 200, `${id} ${skip.id}: reason of ${skip.comment.length} characters`);
          assert.ok(!/[\r\n]/.test(skip.comment), `${id} ${skip.id}: reason on more than one line`);
        }
      }
    });
  }
});
