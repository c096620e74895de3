/**
 * Assertions on the synthesized templates of both modes, offline (no AWS,
 * no bundling, placeholder assets): node's test runner, `npm test`.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { App, Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';

import { DEFAULT_CALL_TYPES } from '../lib/call-types';
import {
  DEFAULT_PUSH_SERVICES,
  FunctionName,
  MEMORY_MB,
  NurseCallStack,
  ServiceMode,
  functionsOf,
  httpFunctionsOf,
} from '../lib/nurse-call-stack';
import {
  Json,
  MODES,
  REPO,
  apiResourcesOf,
  dynamoPermissions,
  functionId,
  offlineApp,
  placeholderLambdaDir,
  resourcesOf,
  routesOf,
  runApp,
  synth,
  synthStack,
  tableId,
} from './helpers';

const templates: Record<ServiceMode, Template> = {
  production: synth('production'),
  sandbox: synth('sandbox'),
};

describe('routes', () => {
  it('production has exactly the routes of the spec and the interface document, each to its function, and $default to call-types', () => {
    assert.deepEqual(routesOf(templates.production), {
      'ANY /api/v1/display': 'display',
      'ANY /api/v1/display/calls': 'display-read',
      'ANY /api/v1/display/elements': 'display-read',
      'ANY /display': 'display-read',
      'ANY /api/v1/element': 'element',
      'ANY /api/v1/heartbeat': 'element',
      'ANY /api/v1/display/call-types': 'call-types',
      'ANY /api/v1/openapi.json': 'call-types',
      'ANY /api/v1/staff/me': 'staff',
      'ANY /api/v1/staff/duty': 'staff',
      'ANY /api/v1/staff/calls': 'staff',
      'ANY /api/v1/staff/calls/{id}/responses': 'staff',
      'ANY /api/v1/response': 'display',
      'ANY /api/v1/staff/receipts': 'staff',
      'ANY /api/v1/staff/device-tests': 'staff',
      'ANY /api/v1/staff/push-key': 'call-types',
      'ANY /api/v1/staff/push-subscriptions': 'call-types',
      'ANY /staff': 'call-types',
      'ANY /staff/manifest.webmanifest': 'call-types',
      'ANY /staff/sw.js': 'call-types',
      $default: 'call-types',
    });
  });

  it('sandbox adds the page and the three sandbox endpoints, to the sandbox function', () => {
    assert.deepEqual(routesOf(templates.sandbox), {
      'ANY /api/v1/display': 'display',
      'ANY /api/v1/display/calls': 'display-read',
      'ANY /api/v1/display/elements': 'display-read',
      'ANY /display': 'display-read',
      'ANY /api/v1/element': 'element',
      'ANY /api/v1/heartbeat': 'element',
      'ANY /api/v1/display/call-types': 'call-types',
      'ANY /api/v1/openapi.json': 'call-types',
      'ANY /': 'sandbox',
      'ANY /api/v1/sandbox/consumers': 'sandbox',
      'ANY /api/v1/sandbox/state': 'sandbox',
      'ANY /api/v1/sandbox/staff': 'sandbox',
      'ANY /api/v1/staff/me': 'staff',
      'ANY /api/v1/staff/duty': 'staff',
      'ANY /api/v1/staff/calls': 'staff',
      'ANY /api/v1/staff/calls/{id}/responses': 'staff',
      'ANY /api/v1/response': 'display',
      'ANY /api/v1/staff/receipts': 'staff',
      'ANY /api/v1/staff/device-tests': 'staff',
      'ANY /api/v1/staff/push-key': 'call-types',
      'ANY /api/v1/staff/push-subscriptions': 'call-types',
      'ANY /staff': 'call-types',
      'ANY /staff/manifest.webmanifest': 'call-types',
      'ANY /staff/sw.js': 'call-types',
      $default: 'call-types',
    });
  });

  for (const mode of MODES) {
    it(`${mode}: one HTTP API (and the WebSocket API of live.test.ts), Lambda proxy integrations with payload format 2.0, no authorizer`, () => {
      const template = templates[mode];
      template.resourceCountIs('AWS::ApiGatewayV2::Api', 2);
      const protocols = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Api')).map((api) => api.Properties.ProtocolType);
      assert.deepEqual(protocols.sort(), ['HTTP', 'WEBSOCKET']);
      const integrations = Object.values(apiResourcesOf(template, 'AWS::ApiGatewayV2::Integration', 'HTTP'));
      assert.equal(integrations.length, httpFunctionsOf(mode).length + 1, 'one per function with routes, and $default');
      for (const integration of integrations) {
        assert.equal(integration.Properties.IntegrationType, 'AWS_PROXY');
        assert.equal(integration.Properties.PayloadFormatVersion, '2.0');
      }
      for (const route of Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Route'))) {
        assert.equal(route.Properties.AuthorizationType, 'NONE');
      }
    });
  }
});

describe('functions', () => {
  for (const mode of MODES) {
    it(`${mode}: ${functionsOf(mode).join(', ')} on arm64 provided.al2023 from the cargo-lambda zips`, () => {
      const template = templates[mode];
      // The service functions plus the seeding custom resource's provider.
      template.resourceCountIs('AWS::Lambda::Function', functionsOf(mode).length + 1);
      const functions = resourcesOf(template, 'AWS::Lambda::Function');
      for (const name of functionsOf(mode)) {
        const fn = functions[functionId(template, name)];
        assert.equal(fn.Properties.Runtime, 'provided.al2023');
        assert.deepEqual(fn.Properties.Architectures, ['arm64']);
        assert.equal(fn.Properties.Handler, 'bootstrap');
        assert.equal(fn.Properties.MemorySize, MEMORY_MB[name], name);
        // The broadcast answers no client (BROADCAST_TIMEOUT); the alarm
        // neither (ALARM_TIMEOUT, the request path's 10 s), nor the deliver
        // (DELIVER_TIMEOUT: retries within a push's 60 s TTL), nor the
        // forward (FORWARD_TIMEOUT: webhook rounds).
        assert.equal(fn.Properties.Timeout, { broadcast: 30, deliver: 70, forward: 70 }[name as string] ?? 10, name);
        assert.match(fn.Properties.Code.S3Key, /^[0-9a-f]{64}\.zip$/);
        const common = {
          SERVICE_MODE: mode,
          SERVICE_TIME_ZONE: 'Europe/Berlin',
          CALL_TYPES_TABLE: { Ref: tableId(template, 'call-types') },
          CONSUMERS_TABLE: { Ref: tableId(template, 'consumers') },
          DATA_TABLE: { Ref: tableId(template, 'data') },
          RUST_LOG: 'info',
        };
        const variables = fn.Properties.Environment.Variables;
        // The installation's key (production only), for the secrets the deliver and forward functions sign with.
        const keys = Object.keys(resourcesOf(template, 'AWS::KMS::Key'));
        const secretsKey = mode === 'production' ? { SECRETS_KEY_ID: { 'Fn::GetAtt': [keys[0], 'Arn'] } } : {};
        if (name === 'live-connect' || name === 'broadcast') {
          // The contract of issue 13; the rest of theirs in live.test.ts.
          assert.deepEqual(
            Object.fromEntries(Object.entries(variables).filter(([key]) => key in common)),
            common,
            name,
          );
          assert.equal(variables.CALL_RETENTION_DAYS, undefined, name);
        } else if (name === 'display-read' || name === 'call-types') {
          // The pages' live socket (the display page's, the staff page's);
          // the phones' registration (call-types, issue 47): only to PUSH_SERVICES (§20).
          const pushServices = name === 'call-types' ? { PUSH_SERVICES: DEFAULT_PUSH_SERVICES } : {};
          assert.deepEqual(
            { ...variables, DISPLAY_LIVE_URL: undefined },
            { ...common, CALL_RETENTION_DAYS: '400', DISPLAY_LIVE_URL: undefined, ...pushServices },
          );
        } else if (name === 'alarm') {
          // Its audit lines expire with their call; the queues: alarm-timers.test.ts.
          const queues = { ALARM_TIMER_QUEUE_URL: undefined, DELIVERY_QUEUE_URL: undefined, WEBHOOK_QUEUE_URL: undefined };
          assert.deepEqual({ ...variables, ...queues }, { ...common, CALL_RETENTION_DAYS: '400', ...queues });
        } else if (name === 'deliver') {
          // Writes no calls; who its pushes say they come from: deliveries.test.ts;
          // the key sealing its VAPID private key (production): data-protection.test.ts.
          assert.deepEqual(variables, {
            ...common,
            VAPID_SUBJECT: 'mailto:admin@localhost',
            PUSH_SERVICES: DEFAULT_PUSH_SERVICES,
            ...secretsKey,
          });
        } else if (name === 'forward') {
          // Writes no calls; sends to no queue (webhooks.test.ts); the key
          // sealing the endpoints' secrets (production): data-protection.test.ts.
          assert.deepEqual(variables, { ...common, ...secretsKey });
        } else {
          assert.deepEqual(variables, { ...common, CALL_RETENTION_DAYS: '400' }, name);
        }
      }
    });
  }

  it('each function runs the bootstrap.zip of its own folder, uploaded as is', () => {
    const stack = synthStack('sandbox');
    const template = Template.fromStack(stack);
    const outdir = (stack.node.root as App).outdir;
    const functions = resourcesOf(template, 'AWS::Lambda::Function');
    for (const name of functionsOf('sandbox')) {
      const key: string = functions[functionId(template, name)].Properties.Code.S3Key;
      // The staged copy of the asset in the cloud assembly.
      const staged = fs.readFileSync(path.join(outdir, `asset.${key}`), 'utf8');
      assert.equal(staged, `placeholder for ${name}\n`);
    }
  });

  it('scripts/build-lambdas builds and checks the zip of every function a stack deploys', () => {
    const script = fs.readFileSync(path.join(REPO, 'scripts', 'build-lambdas'), 'utf8');
    const list = /^functions=\(([^)]*)\)$/m.exec(script);
    assert.ok(list, 'the functions=(…) line of scripts/build-lambdas');
    assert.deepEqual(list[1].trim().split(/\s+/).sort(), [...functionsOf('sandbox')].sort());
  });

  it('production has no sandbox function, and does not need its zip', () => {
    const lambdaDir = placeholderLambdaDir(functionsOf('production'));
    const template = Template.fromStack(
      new NurseCallStack(offlineApp(), 'NoSandboxZip', { installation: 'x', mode: 'production', lambdaDir }),
    );
    assert.throws(() => functionId(template, 'sandbox'));
  });

  it('memory per function as the cold-start bench chose it (docs/performance.md)', () => {
    // The two hops of a call to a screen get more CPU; the cached and the
    // test server's functions less.
    const template = templates.sandbox;
    const memory = (name: FunctionName) =>
      resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)].Properties.MemorySize;
    assert.deepEqual(
      [memory('display'), memory('broadcast'), memory('element'), memory('call-types'), memory('sandbox')],
      [256, 512, 256, 128, 128],
    );
  });

  it('time zone, memory and timeout come from the props (the timeout but for the broadcast, the alarm, the deliver and the forward)', () => {
    const template = synth('production', {
      timeZone: 'America/New_York',
      lambdaMemoryMb: 512,
      lambdaTimeout: Duration.seconds(15),
    });
    for (const name of functionsOf('production')) {
      const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
      assert.equal(fn.Properties.Environment.Variables.SERVICE_TIME_ZONE, 'America/New_York');
      assert.equal(fn.Properties.MemorySize, 512);
      assert.equal(fn.Properties.Timeout, { broadcast: 30, alarm: 10, deliver: 70, forward: 70 }[name as string] ?? 15, name);
    }
  });

  it('rejects a bad installation name, mode or time zone, and a missing zip', () => {
    assert.throws(() => synth('production', { installation: 'St Marien' }), /installation/);
    assert.throws(() => synth('staging' as ServiceMode), /mode/);
    assert.throws(() => synth('production', { timeZone: 'Mars/Olympus_Mons' }), /time zone/);
    for (const zone of ['europe/berlin', 'Europe/BERLIN', 'Berlin']) {
      assert.throws(() => synth('production', { timeZone: zone }), /time zone/, zone);
    }
    for (const zone of ['UTC', 'Etc/GMT-1', 'Europe/Vienna', 'America/Argentina/Buenos_Aires', 'America/Port-au-Prince']) {
      assert.doesNotThrow(() => synth('production', { timeZone: zone }));
    }
    assert.throws(
      () => synth('sandbox', { lambdaDir: placeholderLambdaDir(functionsOf('production')) }),
      /sandbox.bootstrap\.zip is missing/,
    );
    for (const name of ['display-read', 'live-connect', 'broadcast', 'alarm', 'deliver', 'forward'] as const) {
      const lambdaDir = placeholderLambdaDir(functionsOf('production').filter((other) => other !== name));
      assert.throws(() => synth('production', { lambdaDir }), new RegExp(`${name}.bootstrap\\.zip is missing`), name);
    }
  });
});

describe('least privilege', () => {
  const common: Record<FunctionName, Record<string, string[]>> = {
    display: {
      consumers: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    },
    element: {
      consumers: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      data: ['dynamodb:BatchGetItem', 'dynamodb:UpdateItem'],
    },
    // And the phones' Web Push registration (push, roster and cap partitions only).
    'call-types': {
      consumers: ['dynamodb:GetItem'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    },
    // The token's display (in sandbox stacks also the cookie's consumer),
    // call types, the open-call index partition and the by_scope index.
    'display-read': {
      consumers: ['dynamodb:GetItem', 'dynamodb:Scan'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:Query'],
      'data/index/by_scope': ['dynamodb:Query'],
    },
    'live-connect': {
      consumers: ['dynamodb:GetItem'],
      data: ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
      connections: ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
      'connections/index/by_connection': ['dynamodb:Query'],
    },
    // The stream read is the event source mapping's (ListStreams has no
    // resource of its own: it lists the account's stream ARNs, no data).
    broadcast: {
      'call-types': ['dynamodb:Scan'],
      connections: ['dynamodb:DeleteItem', 'dynamodb:Query'],
      'data/stream': ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      '*': ['dynamodb:ListStreams'],
    },
    sandbox: {
      consumers: ['dynamodb:GetItem', 'dynamodb:PutItem'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:Query'],
      'data/index/by_scope': ['dynamodb:Query'],
    },
    // Call types for the levels; the data table as staff has it (the same
    // alarm engine); the stream read is the event source mapping's.
    alarm: {
      consumers: ['dynamodb:Scan', 'dynamodb:UpdateItem'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      'data/stream': ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      '*': ['dynamodb:ListStreams'],
    },
    // The Web Push store only: the VAPID key pair (read, made once with a
    // conditional put), a person's subscriptions, each alert pushed recorded
    // on its device (UpdateItem), a gone one deleted.
    deliver: {
      data: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    },
    // The webhook dispatcher: call types for the bodies; the endpoints, the
    // outbox, the delivery log, the attention marks, the roster (Query), a
    // call's alarm (GetItem), an attention mark with its event and a
    // wake-up (PutItem), an endpoint's health (UpdateItem), the log's lines
    // and the finished events (BatchWriteItem); the elements (by_scope).
    forward: {
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:BatchWriteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      'data/index/by_scope': ['dynamodb:Query'],
    },
    // The token's staff member, call types; duty, roster, open calls and
    // the alarm written with its audit (DECISIONS §14); an alarm server's
    // consumer, and in sandbox stacks its hash mismatches (§16).
    staff: {
      consumers: ['dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
      'call-types': ['dynamodb:Scan'],
      data: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
    },
  };
  const expected: Record<ServiceMode, Record<FunctionName, Record<string, string[]>>> = {
    production: common,
    sandbox: {
      ...common,
      // A sandbox consumer's hash mismatches: put, list the keys, drop the oldest.
      element: {
        consumers: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        data: ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      },
    },
  };

  for (const mode of MODES) {
    for (const name of functionsOf(mode)) {
      it(`${mode}: ${name} has exactly its DynamoDB actions on its tables`, () => {
        const template = templates[mode];
        const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
        const roleId = fn.Properties.Role['Fn::GetAtt'][0];
        assert.deepEqual(dynamoPermissions(template, roleId), expected[mode][name]);
      });
    }

    it(`${mode}: no wildcard actions or resources in any policy`, () => {
      for (const policy of Object.values(resourcesOf(templates[mode], 'AWS::IAM::Policy'))) {
        for (const statement of policy.Properties.PolicyDocument.Statement as Json[]) {
          for (const action of [statement.Action].flat()) {
            assert.ok(!String(action).includes('*'), `wildcard action ${action}`);
          }
          const actions: string[] = [statement.Action].flat();
          // ListStreams alone: it supports no narrower resource.
          if (actions.some((a) => a.startsWith('dynamodb:')) && actions.join() !== 'dynamodb:ListStreams') {
            assert.ok(!JSON.stringify(statement.Resource).includes('"*"'), 'wildcard DynamoDB resource');
          }
        }
      }
    });
  }
});

describe('tables', () => {
  for (const mode of MODES) {
    const production = mode === 'production';
    it(`${mode}: the three tables of docs/data-model.md (and the connections table of live.test.ts), on-demand, TTL on ttl for consumers and data`, () => {
      const template = templates[mode];
      template.resourceCountIs('AWS::DynamoDB::Table', 4);
      const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
      const props = (suffix: string) => tables[tableId(template, suffix)].Properties;
      const prefix = `nurse-call-test-${mode}-`;

      assert.equal(props('call-types').TableName, `${prefix}call-types`);
      assert.deepEqual(props('call-types').KeySchema, [{ AttributeName: 'name', KeyType: 'HASH' }]);
      assert.deepEqual(props('call-types').AttributeDefinitions, [{ AttributeName: 'name', AttributeType: 'S' }]);
      assert.equal(props('call-types').TimeToLiveSpecification, undefined);

      assert.equal(props('consumers').TableName, `${prefix}consumers`);
      assert.deepEqual(props('consumers').KeySchema, [{ AttributeName: 'id', KeyType: 'HASH' }]);
      assert.deepEqual(props('consumers').TimeToLiveSpecification, { AttributeName: 'ttl', Enabled: true });

      assert.equal(props('data').TableName, `${prefix}data`);
      assert.deepEqual(props('data').KeySchema, [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      assert.deepEqual(
        [...props('data').AttributeDefinitions].sort((a: Json, b: Json) => a.AttributeName.localeCompare(b.AttributeName)),
        ['due_pk', 'due_sk', 'list_pk', 'list_sk', 'pk', 'sk'].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
      );
      assert.deepEqual(props('data').GlobalSecondaryIndexes, [
        {
          IndexName: 'by_scope',
          KeySchema: [
            { AttributeName: 'list_pk', KeyType: 'HASH' },
            { AttributeName: 'list_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        // The alarms due (sparse: only calls whose alarm has a next_at),
        // as functions/store-dynamodb/src/tables.rs makes it locally.
        {
          IndexName: 'by_due',
          KeySchema: [
            { AttributeName: 'due_pk', KeyType: 'HASH' },
            { AttributeName: 'due_sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ]);
      assert.deepEqual(props('data').TimeToLiveSpecification, { AttributeName: 'ttl', Enabled: true });
      // Every change, before and after, for the broadcast.
      assert.deepEqual(props('data').StreamSpecification, { StreamViewType: 'NEW_AND_OLD_IMAGES' });
      assert.equal(props('call-types').StreamSpecification, undefined);
      assert.equal(props('consumers').StreamSpecification, undefined);

      for (const table of Object.values(tables)) {
        assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
        assert.equal(table.Properties.ProvisionedThroughput, undefined);
      }
    });

    it(`${mode}: ${production ? 'point-in-time recovery, deletion protection, retained' : 'destroyable: no recovery, no protection, deleted with the stack'}`, () => {
      const tables = resourcesOf(templates[mode], 'AWS::DynamoDB::Table');
      for (const suffix of ['call-types', 'consumers', 'data']) {
        const table = tables[tableId(templates[mode], suffix)];
        assert.equal(table.Properties.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled ?? false, production);
        assert.equal(table.Properties.DeletionProtectionEnabled ?? false, production);
        assert.equal(table.DeletionPolicy, production ? 'Retain' : 'Delete');
        assert.equal(table.UpdateReplacePolicy, production ? 'Retain' : 'Delete');
      }
    });
  }
});

describe('API stage', () => {
  for (const mode of MODES) {
    it(`${mode}: the $default stage deploys automatically, throttled, with access logs`, () => {
      const template = templates[mode];
      // And the WebSocket API's stage `live` (live.test.ts).
      template.resourceCountIs('AWS::ApiGatewayV2::Stage', 2);
      assert.equal(Object.keys(apiResourcesOf(template, 'AWS::ApiGatewayV2::Stage', 'HTTP')).length, 1);
      template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
        AccessLogSettings: {
          DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ApiAccessLogs'), 'Arn'] },
          Format: Match.stringLikeRegexp('\\$context\\.requestId'),
        },
      });
    });
  }

  it('throttling limits come from the props, for the HTTP and the WebSocket stage', () => {
    const template = synth('production', { throttleRateLimit: 7, throttleBurstLimit: 13 });
    const stages = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Stage'));
    assert.deepEqual(stages.map((stage) => stage.Properties.StageName).sort(), ['$default', 'live']);
    for (const stage of stages) {
      assert.deepEqual(stage.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 7, ThrottlingBurstLimit: 13 });
    }
  });

  for (const mode of MODES) {
    it(`${mode}: the ingestion routes have a throttle of their own (100/s, burst 200, stack parameters), distinct from the default route settings and every other route's`, () => {
      const template = templates[mode];
      const stage = Object.values(apiResourcesOf(template, 'AWS::ApiGatewayV2::Stage', 'HTTP'))[0];
      const settings: Record<string, Json> = stage.Properties.RouteSettings;
      const parameters = template.toJSON().Parameters as Record<string, Json>;
      const ingestion = { ThrottlingRateLimit: { Ref: 'IngestionThrottleRate' }, ThrottlingBurstLimit: { Ref: 'IngestionThrottleBurst' } };
      for (const route of ['ANY /api/v1/display', 'ANY /api/v1/element', 'ANY /api/v1/response', 'ANY /api/v1/heartbeat']) {
        assert.deepEqual(settings[route], ingestion, route);
      }
      assert.equal(parameters.IngestionThrottleRate.Default, 100);
      assert.equal(parameters.IngestionThrottleBurst.Default, 200);
      assert.notDeepEqual(stage.Properties.DefaultRouteSettings, ingestion);
      // Every route has its group's; no other route shares the ingestion's.
      assert.deepEqual(Object.keys(settings).sort(), Object.keys(routesOf(template)).filter((key) => key !== '$default').sort());
      const others = Object.entries(settings).filter(([route]) => !/^ANY \/api\/v1\/(display|element|response|heartbeat)$/.test(route));
      for (const [route, value] of others) {
        assert.notDeepEqual(value, ingestion, route);
      }
      assert.deepEqual(settings['ANY /api/v1/staff/me'].ThrottlingRateLimit, { Ref: 'StaffThrottleRate' });
      assert.deepEqual(settings['ANY /display'].ThrottlingRateLimit, { Ref: 'PagesThrottleRate' });
      assert.equal(parameters.StaffThrottleRate.Default, 50);
      if (mode === 'sandbox') {
        assert.deepEqual(settings['ANY /api/v1/sandbox/consumers'].ThrottlingRateLimit, { Ref: 'SandboxThrottleRate' });
      } else {
        assert.equal(parameters.SandboxThrottleRate, undefined);
      }
      // The routes exist before the stage names them.
      const routeIds = Object.entries(apiResourcesOf(template, 'AWS::ApiGatewayV2::Route', 'HTTP'))
        .filter(([, route]) => route.Properties.RouteKey in settings)
        .map(([id]) => id);
      const stageId = Object.keys(apiResourcesOf(template, 'AWS::ApiGatewayV2::Stage', 'HTTP'))[0];
      const dependsOn: string[] = template.toJSON().Resources[stageId].DependsOn ?? [];
      for (const id of routeIds) {
        assert.ok(dependsOn.includes(id), `the stage depends on ${id}`);
      }
    });
  }

  it('the access log names the path without its query string (tokens and hashes never reach it)', () => {
    const stage = Object.values(apiResourcesOf(templates.production, 'AWS::ApiGatewayV2::Stage', 'HTTP'))[0];
    const format: Record<string, string> = JSON.parse(stage.Properties.AccessLogSettings.Format);
    // HTTP APIs: `$context.path` is the path alone; nothing else here carries the query.
    assert.equal(format.path, '$context.path');
    for (const [field, variable] of Object.entries(format)) {
      assert.match(variable, /^\$context\.[A-Za-z.]+$/, field);
      assert.doesNotMatch(variable, /query|rawPath|requestOverride|\$request\.|\$input/i, field);
    }
  });
});

describe('logs', () => {
  for (const mode of MODES) {
    const days = mode === 'production' ? 90 : 14;
    it(`${mode}: every log group keeps ${days} days, and every function logs to one of them`, () => {
      const template = templates[mode];
      const groups = resourcesOf(template, 'AWS::Logs::LogGroup');
      // One per function, the two APIs' access logs, the seeding provider's.
      assert.equal(Object.keys(groups).length, functionsOf(mode).length + 3);
      for (const group of Object.values(groups)) {
        assert.equal(group.Properties.RetentionInDays, days);
      }
      for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function'))) {
        const ref = fn.Properties.LoggingConfig?.LogGroup?.Ref;
        assert.ok(ref && groups[ref], 'function without its own log group');
      }
    });
  }

  it('retention comes from the props', () => {
    const template = synth('production', { logRetention: logs.RetentionDays.ONE_YEAR });
    for (const group of Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'))) {
      assert.equal(group.Properties.RetentionInDays, 365);
    }
  });
});

describe('alarms', () => {
  for (const mode of MODES) {
    it(`${mode}: API 5xx rate, throttles and errors of each function, hand edits (and the broadcast's two of live.test.ts, the alarm function's five of alarm-timers.test.ts: its queues' three, its unreadable records and its overdue steps, the deliver function's three of deliveries.test.ts: its queues' two and its pushes not delivered, the webhook queue's two of webhooks.test.ts: its dead letters and its events not delivered, the wake-up schedule's failed invocations of webhook-wakes.test.ts)`, () => {
      const template = templates[mode];
      const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
      assert.equal(alarms.length, 1 + 2 * functionsOf(mode).length + 1 + 2 + 5 + 3 + 2 + 1);

      const rate = alarms.filter((a) => a.Properties.Metrics);
      assert.equal(rate.length, 1);
      const metrics: Json[] = rate[0].Properties.Metrics;
      const expression = metrics.find((m) => m.Expression);
      assert.match(expression.Expression, /100 \* errors \/ requests/);
      const stat = (id: string) => metrics.find((m) => m.Id === id).MetricStat;
      assert.equal(stat('errors').Metric.Namespace, 'AWS/ApiGateway');
      assert.equal(stat('errors').Metric.MetricName, '5xx');
      assert.equal(stat('requests').Metric.MetricName, 'Count');
      assert.equal(rate[0].Properties.Threshold, 5);

      for (const name of functionsOf(mode)) {
        const id = functionId(template, name);
        for (const metric of ['Throttles', 'Errors']) {
          const matching = alarms.filter(
            (a) =>
              a.Properties.Namespace === 'AWS/Lambda' &&
              a.Properties.MetricName === metric &&
              a.Properties.Dimensions?.[0]?.Value?.Ref === id,
          );
          assert.equal(matching.length, 1, `${metric} alarm of ${name}`);
          assert.equal(matching[0].Properties.Threshold, 1);
          assert.equal(matching[0].Properties.TreatMissingData, 'notBreaching');
        }
      }
      // No topic unless an address is given.
      template.resourceCountIs('AWS::SNS::Topic', 0);
    });
  }

  for (const mode of MODES) {
    it(`${mode}: every function's log lines of hand-edited items not used as stored raise an alarm (DECISIONS §7)`, () => {
      const template = templates[mode];
      // The deliver, alarm and forward functions' own filters: deliveries.test.ts, alarm-timers.test.ts, webhooks.test.ts.
      const filters = Object.values(resourcesOf(template, 'AWS::Logs::MetricFilter')).filter(
        (f) => f.Properties.MetricTransformations[0].MetricName === 'HandEditedItemsNotUsedAsStored',
      );
      assert.equal(filters.length, functionsOf(mode).length);
      const functions = resourcesOf(template, 'AWS::Lambda::Function');
      for (const name of functionsOf(mode)) {
        const group = functions[functionId(template, name)].Properties.LoggingConfig.LogGroup;
        const matching = filters.filter((f) => f.Properties.LogGroupName?.Ref === group.Ref);
        assert.equal(matching.length, 1, `the metric filter on ${name}'s log group`);
        const filter = matching[0].Properties;
        // The exact messages of functions/core/src/store/fallbacks.rs and store/mod.rs.
        assert.equal(
          filter.FilterPattern,
          '{ ($.message = "call type field fell back") || ($.message = "malformed credential refused") }',
        );
        assert.deepEqual(filter.MetricTransformations, [
          { MetricNamespace: `NurseCall/test-${mode}`, MetricName: 'HandEditedItemsNotUsedAsStored', MetricValue: '1' },
        ]);
      }
      const alarm = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(
        (a) => a.Properties.AlarmName === `nurse-call-test-${mode}-hand-edits`,
      );
      assert.equal(alarm.length, 1);
      assert.equal(alarm[0].Properties.Namespace, `NurseCall/test-${mode}`);
      assert.equal(alarm[0].Properties.MetricName, 'HandEditedItemsNotUsedAsStored');
      assert.equal(alarm[0].Properties.Statistic, 'Sum');
      assert.equal(alarm[0].Properties.Period, 300);
      assert.equal(alarm[0].Properties.Threshold, 1);
      assert.equal(alarm[0].Properties.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.equal(alarm[0].Properties.TreatMissingData, 'notBreaching');
    });
  }

  it('the core logs the messages the metric filter matches', () => {
    const source = (file: string) => fs.readFileSync(path.join(REPO, 'functions', 'core', 'src', 'store', file), 'utf8');
    assert.match(source('fallbacks.rs'), /"call type field fell back"\s*\)/);
    assert.match(source('mod.rs'), /"malformed credential refused"\s*\)/);
  });

  it('with alarmEmail every alarm notifies the topic, which mails that address', () => {
    const template = synth('production', { alarmEmail: 'ops@example.org' });
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.org' });
    const topicId = Object.keys(resourcesOf(template, 'AWS::SNS::Topic'))[0];
    for (const alarm of Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'))) {
      assert.deepEqual(alarm.Properties.AlarmActions, [{ Ref: topicId }]);
    }
  });
});

/** The defaults of functions/core/src/domain/call_types.rs, parsed from the Rust source. */
function rustDefaults(): Json[] {
  const source = fs.readFileSync(path.join(REPO, 'functions', 'core', 'src', 'domain', 'call_types.rs'), 'utf8');
  const body = source.slice(source.indexOf('const DEFAULTS'), source.indexOf('pub fn default_call_types'));
  const row =
    /\(\s*"([^"]*)",\s*"([^"]*)",\s*(\d+),\s*"([^"]*)",\s*"([^"]*)",\s*(true|false),\s*(\d+),\s*(\d+),\s*"([^"]*)",?\s*\)/g;
  return [...body.matchAll(row)].map((m, index) => ({
    name: { S: m[1] },
    id: { N: String(index + 1) },
    internal_name: { S: '' },
    urgency: { S: m[2] },
    priority: { N: m[3] },
    type: { S: m[4] },
    color: { S: m[5] },
    notify: { BOOL: m[6] === 'true' },
    notification_interval: { N: m[7] },
    notification_maxloops: { N: m[8] },
    notification_sound: { S: m[9] },
  }));
}

/** The JSON of a custom resource's `Create`, with the table reference put back as text. */
function createCall(template: Template, resource: Json): Json {
  const parts: Json[] = resource.Properties.Create['Fn::Join'][1];
  const text = parts
    .map((part) => (typeof part === 'string' ? part : `<${part.Ref === tableId(template, 'call-types') ? 'call-types' : JSON.stringify(part)}>`))
    .join('');
  return JSON.parse(text);
}

describe('seeded call types', () => {
  for (const mode of MODES) {
    it(`${mode}: the ten call types of call_types.rs, put on create only, never over an existing name`, () => {
      const template = templates[mode];
      const seeds = Object.values(resourcesOf(template, 'Custom::SeedCallType'));
      assert.equal(seeds.length, 10);
      const items: Json[] = [];
      for (const seed of seeds) {
        assert.equal(seed.Properties.Update, undefined, 'an update must not write');
        assert.equal(seed.Properties.Delete, undefined, 'a delete must not write');
        assert.equal(seed.Properties.InstallLatestAwsSdk, false);
        const call = createCall(template, seed);
        assert.equal(call.service, 'DynamoDB');
        assert.equal(call.action, 'putItem');
        assert.equal(call.parameters.TableName, '<call-types>');
        assert.equal(call.parameters.ConditionExpression, 'attribute_not_exists(#name)');
        assert.deepEqual(call.parameters.ExpressionAttributeNames, { '#name': 'name' });
        assert.equal(call.ignoreErrorCodesMatching, 'ConditionalCheckFailedException');
        items.push(call.parameters.Item);
      }
      items.sort((a, b) => Number(a.id.N) - Number(b.id.N));
      const expected = rustDefaults();
      assert.equal(expected.length, 10, 'parsed the ten defaults of call_types.rs');
      assert.deepEqual(items, expected);
      assert.deepEqual(
        DEFAULT_CALL_TYPES.map((t) => t.name),
        expected.map((t) => t.name.S),
      );
    });

    it(`${mode}: the seeding may only put items into the call-types table`, () => {
      const template = templates[mode];
      const provider = Object.entries(resourcesOf(template, 'AWS::Lambda::Function')).find(
        ([, fn]) => fn.Properties.Runtime !== 'provided.al2023',
      );
      assert.ok(provider);
      const roleId = provider[1].Properties.Role['Fn::GetAtt'][0];
      assert.deepEqual(dynamoPermissions(template, roleId), { 'call-types': ['dynamodb:PutItem'] });
    });
  }
});

describe('outputs', () => {
  for (const mode of MODES) {
    it(`${mode}: API URL, live URL and the three table names${mode === 'production' ? ', the key' : ''}`, () => {
      const template = templates[mode];
      const outputs = template.toJSON().Outputs;
      assert.deepEqual(
        Object.keys(outputs).sort(),
        [
          'ApiUrl',
          'CallTypesTableName',
          'ConsumersTableName',
          ...(mode === 'production' ? ['DataKeyArn'] : []),
          'DataTableName',
          'LiveUrl',
        ],
      );
      if (mode === 'production') {
        const keyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];
        assert.deepEqual(outputs.DataKeyArn.Value, { 'Fn::GetAtt': [keyId, 'Arn'] });
        // What the admin command's --secrets-key takes, and the grant its
        // operator needs to seal a webhook secret.
        assert.match(outputs.DataKeyArn.Description, /--secrets-key/);
        assert.match(outputs.DataKeyArn.Description, /kms:Encrypt with encryption context purpose=webhook-secret/);
      }
      assert.deepEqual(outputs.CallTypesTableName.Value, { Ref: tableId(template, 'call-types') });
      assert.deepEqual(outputs.ConsumersTableName.Value, { Ref: tableId(template, 'consumers') });
      assert.deepEqual(outputs.DataTableName.Value, { Ref: tableId(template, 'data') });
      assert.match(JSON.stringify(outputs.ApiUrl.Value), /execute-api/);
    });
  }
});

describe('the CDK app (bin/nurse-call.js)', () => {
  it('synthesizes one stack, NurseCall-<installation>, from context values', () => {
    const { status, stderr, outdir } = runApp({
      installation: 'st-marien',
      mode: 'sandbox',
      timeZone: 'Europe/Vienna',
      throttleRate: '20',
      throttleBurst: '40',
      lambdaDir: placeholderLambdaDir(),
    });
    assert.equal(status, 0, stderr);
    const template = JSON.parse(fs.readFileSync(path.join(outdir, 'NurseCall-st-marien.template.json'), 'utf8'));
    const stages = Object.values(template.Resources as Record<string, Json>).filter(
      (r) => r.Type === 'AWS::ApiGatewayV2::Stage',
    );
    // The HTTP stage and the WebSocket stage alike.
    assert.equal(stages.length, 2);
    for (const stage of stages) {
      assert.deepEqual(stage.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 });
    }
    const tableNames = Object.values(template.Resources as Record<string, Json>)
      .filter((r) => r.Type === 'AWS::DynamoDB::Table')
      .map((r) => r.Properties.TableName)
      .sort();
    assert.deepEqual(tableNames, [
      'nurse-call-st-marien-call-types',
      'nurse-call-st-marien-connections',
      'nurse-call-st-marien-consumers',
      'nurse-call-st-marien-data',
    ]);
  });

  it('refuses to run without installation and mode', () => {
    const { status, stderr } = runApp({ mode: 'production', lambdaDir: placeholderLambdaDir() });
    assert.notEqual(status, 0);
    assert.match(stderr, /missing context value "installation"/);
  });
});
