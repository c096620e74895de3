/**
 * Data protection in the synthesized templates (docs/security.md): the
 * installation's KMS key and what it encrypts, who may use it, call
 * retention, the sandbox's concurrency cap, and the checkov suppressions
 * (scripts/test runs checkov and fails on any finding not suppressed here).
 */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';

import { FunctionName, ServiceMode, functionsOf, httpFunctionsOf } from '../lib/nurse-call-stack';
import {
  Json,
  MODES,
  appTemplate,
  functionId,
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
    // unreadable stream records', the delivery queues' two and the pushes not delivered', the webhook dead letters' and
    // the webhook events not delivered'.
    assert.equal(alarms.length, 1 + 2 * functionsOf('production').length + 1 + 2 + 4 + 3 + 2);
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

  it('the key policy names its principals: the account (IAM decides), CloudWatch Logs, CloudWatch', () => {
    const key = resourcesOf(template, 'AWS::KMS::Key')[keyId(template)];
    const statements: Json[] = key.Properties.KeyPolicy.Statement;
    assert.equal(statements.length, 3);
    for (const statement of statements) {
      assert.equal(statement.Effect, 'Allow');
      assert.notEqual(statement.Principal, '*');
      assert.notEqual(statement.Principal.AWS, '*');
    }
    const account = statements.filter((s) => s.Principal.AWS);
    assert.equal(account.length, 1);
    assert.equal(joined(account[0].Principal.AWS), 'arn:${AWS::Partition}:iam::${AWS::AccountId}:root');
  });

  // What each role may do with the key: only through DynamoDB, decrypt to
  // read, encrypt too to write.
  const read = ['kms:Decrypt', 'kms:DescribeKey'];
  const write = [...read, 'kms:Encrypt', 'kms:GenerateDataKey'].sort();
  const expected: Record<Exclude<FunctionName, 'sandbox' | 'broadcast' | 'alarm' | 'deliver' | 'forward'> | 'seeding', string[]> = {
    display: write,
    'display-read': read,
    element: write,
    'call-types': read,
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
   * the service it may use the key through (none: any).
   */
  const keyUse = (name: FunctionName) => {
    const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
    const key = { 'Fn::GetAtt': [keyId(template), 'Arn'] };
    return kmsStatements(template, roleOf(fn))
      .map((statement) => {
        assert.deepEqual(statement.Resource, key, name);
        assert.deepEqual(Object.keys(statement.Condition ?? { StringEquals: {} }), ['StringEquals'], name);
        const via = statement.Condition ? joined(statement.Condition.StringEquals['kms:ViaService']) : 'any';
        return `${[statement.Action].flat().sort().join(', ')} through ${via}`;
      })
      .sort();
  };
  const throughDynamoDB = `${write.join(', ')} through dynamodb.\${AWS::Region}.amazonaws.com`;
  const throughSqs = 'kms:Decrypt, kms:GenerateDataKey through sqs.${AWS::Region}.amazonaws.com';

  it('broadcast: through DynamoDB to write, through SQS to send a failure record, and to read the stream', () => {
    // The event source mapping's stream read (CDK's grantStreamRead):
    // stream records are encrypted with the table's key.
    assert.deepEqual(keyUse('broadcast'), [throughDynamoDB, throughSqs, 'kms:Decrypt, kms:DescribeKey through any'].sort());
  });

  it('alarm: through DynamoDB to write, through SQS to send timers, push jobs, wake-ups and failure records, and to read the stream and the timer queue', () => {
    // The event sources' reads (CDK's grantStreamRead and
    // grantConsumeMessages, one statement): stream records and timers are
    // encrypted with the installation's key.
    assert.deepEqual(keyUse('alarm'), [throughDynamoDB, throughSqs, 'kms:Decrypt, kms:DescribeKey through any'].sort());
  });

  it('deliver: through DynamoDB to write (the VAPID key pair, a gone subscription), and to read the delivery queue', () => {
    // The event source's receive (CDK's grantConsumeMessages): push jobs
    // are encrypted with the installation's key. Nothing to send.
    assert.deepEqual(keyUse('deliver'), [throughDynamoDB, 'kms:Decrypt through any'].sort());
  });

  it('forward: through DynamoDB to write (the delivery log, the outbox, an endpoint\'s health, a wake-up), and to read the webhook queue', () => {
    // The event source's receive: wake-ups are encrypted with the
    // installation's key. Nothing to send: a wake-up later is an item.
    assert.deepEqual(keyUse('forward'), [throughDynamoDB, 'kms:Decrypt through any'].sort());
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
    assert.equal(template.toJSON().Outputs.DataKeyArn, undefined);
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
